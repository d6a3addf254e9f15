"""A real GRPO run: TRL's own GRPOTrainer, two steps on the CPU, rewards from a real farm through the
TRL adapter, sync and async. The model is a 2-layer GPT-2 built from a config and the tokenizer is
built here (no model hub): it writes the return expression of `def f(x): return ...`, which the farm
judges as a HumanEval job (`assert candidate(1) == 1`): `x`, `1`, `x*1` pass, `0` and `2` fail,
`x +` does not compile. What TRL logged, row by row, must be the farm's verdicts; a row the farm
cannot reward (its job is malformed, or the farm is stopped) must be masked (advantage 0), never 0.0.
"""

from __future__ import annotations

import atexit
import glob
import math
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import farm_support
import pytest

trl = pytest.importorskip("trl", reason="trl is not installed (make setup installs the grpo extra)")
torch = pytest.importorskip("torch")

import pandas  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.trainer.utils import shutdown_event_loop_in_daemon  # noqa: E402

from evalfarm.trainers.rewards import make_trl_reward  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.sandbox, pytest.mark.timeout(300)]
redis_server = farm_support.redis_server
workers = farm_support.workers

WORDS = ["x", "1", "x*1", "0", "2", "+", "return"]
HEADER = "def f(x):\n    return "
TEST = "def check(candidate):\n    assert candidate(1) == 1\n"


def tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", *WORDS])}
    words = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=words,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
        padding_side="left",
    )


def model(words: PreTrainedTokenizerFast) -> GPT2LMHeadModel:
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2, n_head=2, n_embd=32, n_positions=64, vocab_size=len(words),
        bos_token_id=words.bos_token_id, eos_token_id=words.eos_token_id, pad_token_id=words.pad_token_id,
    )  # fmt: skip
    return GPT2LMHeadModel(config)


def dataset(malformed_row: bool) -> Dataset:
    """Four prompts; with `malformed_row`, the last lacks its test (None, as `datasets` fills a key a
    row lacks): its job is invalid, which is no reward."""
    tests = [TEST, TEST, TEST, None if malformed_row else TEST]
    return Dataset.from_dict(
        {
            "prompt": ["return"] * 4,
            "humaneval_prompt": [HEADER] * 4,
            "test": tests,
            "entry_point": ["f"] * 4,
        }
    )


def train(reward: Callable[..., Any], malformed_row: bool = False) -> tuple[Any, list[Any]]:
    """Two GRPO steps; the trainer and the completions TRL logged per step (prompt, completion,
    reward and advantage per row, as `log_completions` writes them)."""
    words = tokenizer()
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
            max_steps=2, per_device_train_batch_size=4, num_generations=2, max_completion_length=2,
            learning_rate=1e-4, logging_steps=1, report_to="none", save_strategy="no", seed=0,
            disable_tqdm=True, log_completions=True, num_completions_to_print=0,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=model(words),
            reward_funcs=[reward],
            args=config,
            train_dataset=dataset(malformed_row),
            processing_class=words,
        )
        try:
            trainer.train()
        finally:
            if getattr(trainer, "_has_async_funcs", False):  # TRL never closes its reward loop
                shutdown_event_loop_in_daemon(trainer.async_loop_thread, trainer.async_loop)
                trainer.async_loop.close()
                atexit.unregister(shutdown_event_loop_in_daemon)
        tables = [
            pandas.read_parquet(p) for p in sorted(glob.glob(os.path.join(out, "completions", "*.parquet")))
        ]
    return trainer, tables


class Recorder:
    """Wraps a reward function to keep, per call, the farm's results it got (its `last_results`)."""

    def __init__(self, reward: Callable[..., Any]) -> None:
        self.reward = reward
        self.calls: list[list[Any]] = []
        self.seconds: list[float] = []

    def results(self) -> list[Any]:
        return self.reward.last_results  # type: ignore[attr-defined, no-any-return]


def wrapped(reward: Callable[..., Any], recorder: Recorder) -> Callable[..., Any]:
    if asyncio_function(reward):

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            rewards = await reward(*args, **kwargs)
            recorder.seconds.append(time.monotonic() - started)
            recorder.calls.append(list(reward.last_results))  # type: ignore[attr-defined]
            return rewards

        call_async.__name__ = reward.__name__
        return call_async

    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        rewards = reward(*args, **kwargs)
        recorder.seconds.append(time.monotonic() - started)
        recorder.calls.append(list(reward.last_results))  # type: ignore[attr-defined]
        return rewards

    call.__name__ = reward.__name__
    return call


def asyncio_function(function: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)


def farm_rewards(results: list[Any]) -> list[float | None]:
    """What the farm says each row is worth: its reward, or None where no reward exists."""
    return [None if r is None or not r.has_reward else float(r.reward) for r in results]


def logged_rewards(table: Any, name: str) -> list[float | None]:
    return [None if math.isnan(value) else value for value in table[name].tolist()]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_trls_logged_rewards_are_the_farms_verdicts(redis_server, workers, asynchronous: bool) -> None:
    workers.start()
    recorder = Recorder(make_trl_reward("humaneval", broker_url=redis_server.url, asynchronous=asynchronous))
    trainer, tables = train(wrapped(recorder.reward, recorder), malformed_row=True)
    name = recorder.reward.__name__
    assert len(recorder.calls) == len(tables) == 2
    statuses = {r.status for call in recorder.calls for r in call}
    assert "ok" in statuses and statuses & {"wrong_answer", "syntax_error", "runtime_error"}, statuses
    for results, table in zip(recorder.calls, tables, strict=True):
        assert [r.id for r in results] == [f"trl-{i}" for i in range(len(table))]  # the rows, in order
        assert logged_rewards(table, name) == farm_rewards(results)
        for result, advantage in zip(results, table["advantage"].tolist(), strict=True):
            if not result.has_reward:  # the malformed row: masked, never trained on as 0.0
                assert result.status == "invalid_job" and advantage == 0.0
    assert any(r.status == "invalid_job" for call in recorder.calls for r in call)
    steps = [h for h in trainer.state.log_history if f"rewards/{name}/mean" in h]
    assert len(steps) == 2 and all(math.isfinite(h["loss"]) for h in steps)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_stopped_farm_masks_every_row_and_the_step_ends_by_the_deadline(
    redis_server, asynchronous: bool
) -> None:
    # No worker node: nothing is ever scored. Each reward call gives up at its deadline.
    reward = make_trl_reward(
        "humaneval", broker_url=redis_server.url, asynchronous=asynchronous, deadline_s=3
    )
    recorder = Recorder(reward)
    trainer, tables = train(wrapped(reward, recorder))
    assert all(r.is_infra for call in recorder.calls for r in call)
    assert all(3 <= seconds < 8 for seconds in recorder.seconds), recorder.seconds
    for table in tables:
        assert logged_rewards(table, reward.__name__) == [None] * 4
        assert table["advantage"].tolist() == [0.0] * 4
    assert [h.get("reward") for h in trainer.state.log_history if "loss" in h] == [None, None]
