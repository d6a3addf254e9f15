"""One bad sample in a trainer's batch: every other sample keeps its reward, whatever route or adapter
the trainer scores its batch through.

A family in the manner of the hack corpus: honest controls (a right answer, a wrong one, one with no
code block, one that raises) with one bad sample among them, of each kind a batch meets:

- `judge_error`: its problem's checker FAILs on every output, the expected answer's too;
- `infra_error`: its program outlives the fault injector, which SIGKILLs every run of the node older
  than KILL_AFTER_S, as a host's OOM killer would, on every try (the farm's retries, then masked);
- `invalid_job`: its label is no problem the farm can judge.

Each batch goes to a real farm (Redis, a worker node, the gateway in its own process) through each
consumer as its trainer calls it: OpenRLHF 0.11's own remote reward client (one sample per request,
as its rollouts post them, and one request for the batch, as its `_fetch_rewards_via_http` posts a
list) and its own rollout loop, `/v1/score`, the TRL and verl adapters, verl's own sandbox_fusion
client (one request per test of a program) and OpenELM's list form of `/gen_racer`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import types
from collections.abc import Callable, Iterator
from typing import Any

import chaos_support
import foreign_clients
import pytest
import requests
from farm_support import worker_env
from test_gateway import Farm

from evalfarm.gateway.sandbox_fusion import answer_of
from evalfarm.result import Result
from evalfarm.status import Status
from evalfarm.workers.embedded import GatewayProcess, RedisServer, free_port

KILL_AFTER_S = 2.0  # the honest runs take milliseconds; the infra sample's run never ends on its own
MASKED = "masked"  # a consumer's own mask, as each consumer_* function reads it

ADD = {
    "id": "add",
    "public_tests": [],
    "hidden_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "10 -3\n", "output": "7\n"}],
}
BROKEN_JUDGE = {**ADD, "id": "add-broken-judge", "checker": {
    "type": "program", "language": "python", "protocol": "testlib", "code": "import sys\nsys.exit(3)\n",
}}  # fmt: skip
NOT_A_PROBLEM = {"id": "add-no-tests", "hidden_tests": "three"}

RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
WRONG = "```python\nprint(0)\n```"
NO_CODE = "The sum of a and b."
RAISES = "```python\nraise ValueError('no')\n```"
SLEEPS = "```python\nimport time\ntime.sleep(600)\n```"


@dataclasses.dataclass(frozen=True)
class Sample:
    """A completion, its problem, and the reward an honest judge gives it (MASKED: none)."""

    completion: str
    problem: dict[str, Any]
    reward: float | str


HONEST = [
    Sample(RIGHT, ADD, 1.0),
    Sample(WRONG, ADD, 0.0),
    Sample(NO_CODE, ADD, 0.0),
    Sample(RAISES, ADD, 0.0),
]
BAD = {
    "judge_error": Sample(RIGHT, BROKEN_JUDGE, MASKED),
    "infra_error": Sample(SLEEPS, ADD, MASKED),
    "invalid_job": Sample(RIGHT, NOT_A_PROBLEM, MASKED),
}


def batch(bad: str) -> list[Sample]:
    """The honest samples with the bad one in the middle."""
    return [*HONEST[:2], BAD[bad], *HONEST[2:]]


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    running = Farm(str(tmp_path_factory.mktemp("masking")))
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def faults(farm: Farm) -> Iterator[None]:
    """Every run of the farm's node that lives longer than KILL_AFTER_S is killed, while the test runs."""
    assert farm.node.proc is not None
    with chaos_support.killing_runs_older_than(KILL_AFTER_S, farm.node.proc.pid):
        yield


# -- the consumers: each scores a batch as its trainer does, and reads back rewards or its mask ------

PROMPT = "<|im_start|>user\nAdd two numbers.<|im_end|>\n<|im_start|>assistant\n"


def label(sample: Sample) -> str:
    return json.dumps({"env": "codecontests", "problem": sample.problem})


class CharTokenizer:
    """A tokenizer of one token per character, as OpenRLHF's executor calls a Hugging Face one."""

    def __call__(self, text: str, add_special_tokens: bool = False, return_tensors: str = "pt") -> Any:
        import numpy

        return {"input_ids": numpy.array([[ord(c) for c in text]])}  # what it reads of a tensor: tolist()

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(map(chr, ids))


class Model:
    """The policy: it answers each prompt with the completions given for it, in order."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = {prompt: list(texts) for prompt, texts in answers.items()}

    async def generate(
        self, prompt_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        text = self.answers["".join(map(chr, prompt_ids))].pop(0)
        output = types.SimpleNamespace(
            token_ids=[ord(c) for c in text], text=text, finish_reason="stop", logprobs=None
        )
        return types.SimpleNamespace(outputs=[output])


def sampling() -> Any:
    return types.SimpleNamespace(max_tokens=None, logprobs=None)


async def rollout(executor: Any, model: Model, prompt: str, label_text: str, n: int) -> list[dict[str, Any]]:
    """What OpenRLHF's vLLM actor does for one prompt (`generate_responses`): n executions at once."""
    return list(
        await asyncio.gather(
            *(
                executor.execute(prompt, label_text, sampling(), 1 << 16, CharTokenizer(), model)
                for _ in range(n)
            )
        )
    )


def openrlhf_view(rewards: Any, scores: Any, masked: Any) -> float | str | None:
    """One sample as OpenRLHF holds it: its reward, MASKED when the answer masks it (reward 0.0 and
    score NaN, the mask's one form), None when it has no reward at all (its request failed)."""
    if rewards is None:
        return None
    if masked == 1.0:
        assert rewards == 0.0 and math.isnan(scores), (rewards, scores)
        return MASKED
    assert scores == rewards
    return float(rewards)


def consumer_openrlhf(farm: Farm, samples: list[Sample]) -> list[Any]:
    """OpenRLHF 0.11: each sample posted on its own by `SingleTurnAgentExecutor.execute`."""
    executor = foreign_clients.openrlhf_agent().SingleTurnAgentExecutor(f"{farm.url}/get_reward")
    prompts = [f"{PROMPT}#{i}\n" for i in range(len(samples))]
    model = Model({p: [s.completion] for p, s in zip(prompts, samples, strict=True)})

    async def all_samples() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(
            *(rollout(executor, model, p, label(s), 1) for p, s in zip(prompts, samples, strict=True))
        )

    outputs = [output for [output] in asyncio.run(all_samples())]
    views = []
    for output in outputs:
        if output["reward"] is None:  # the request failed, after the client's five posts
            views.append(None)
            continue
        [masked] = output["extra_logs"].get("masked", [0.0])
        [reward], [score] = output["reward"], output["scores"]
        views.append(openrlhf_view(reward, score, masked))
    return views


def consumer_openrlhf_batch(farm: Farm, samples: list[Sample]) -> list[Any]:
    """One request for the whole batch, by OpenRLHF's own `_fetch_rewards_via_http`."""
    executor = foreign_clients.openrlhf_agent().SingleTurnAgentExecutor(f"{farm.url}/get_reward")
    queries = [PROMPT + s.completion + "<|im_end|>" for s in samples]
    labels = [label(s) for s in samples]
    [body] = asyncio.run(executor._fetch_rewards_via_http(queries, [PROMPT] * len(samples), labels))
    masked = body["extra_logs"].get("masked", [0.0] * len(samples))
    return [openrlhf_view(*entry) for entry in zip(body["rewards"], body["scores"], masked, strict=True)]


def consumer_native(farm: Farm, samples: list[Sample]) -> list[Any]:
    """`POST /v1/score`: each result's reward, MASKED where its status carries none."""
    jobs = [
        {"id": f"n{i}", "env": "codecontests", "problem": s.problem, "completion": s.completion}
        for i, s in enumerate(samples)
    ]
    resp = requests.post(f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=300)
    assert resp.status_code == 200, resp.text
    results = [Result(r) for r in resp.json()["results"]]
    return [r.reward if r.has_reward else MASKED for r in results]


def consumer_trl(farm: Farm, samples: list[Sample]) -> list[Any]:
    """TRL's call of `make_trl_reward("codecontests")`: None masks a row."""
    from evalfarm.trainers.rewards import make_trl_reward

    reward = make_trl_reward("codecontests", broker_url=farm.redis.url)
    rewards = reward(
        prompts=[PROMPT] * len(samples),
        completions=[s.completion for s in samples],
        problem=[s.problem for s in samples],
    )
    return [MASKED if r is None else r for r in rewards]


def consumer_verl(farm: Farm, samples: list[Sample]) -> list[Any]:
    """verl's batch reward manager's call of `verl_compute_score`: `masked` marks a row."""
    from evalfarm.trainers.rewards import verl_compute_score

    scores = verl_compute_score(
        ["codecontests"] * len(samples),
        [s.completion for s in samples],
        [{"problem": s.problem} for s in samples],
        [None] * len(samples),
    )
    assert all(s["score"] == 0.0 for s in scores if s["masked"])
    return [MASKED if s["masked"] else s["score"] for s in scores]


CONSUMERS: dict[str, Callable[[Farm, list[Sample]], list[Any]]] = {
    "openrlhf": consumer_openrlhf,
    "openrlhf-batch": consumer_openrlhf_batch,
    "v1-score": consumer_native,
    "trl": consumer_trl,
    "verl": consumer_verl,
}


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.timeout(600)
@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_one_bad_sample_costs_no_other_sample_its_reward(
    farm: Farm, faults: None, monkeypatch: pytest.MonkeyPatch, consumer: str, bad: str
) -> None:
    monkeypatch.setenv("EVALFARM_BROKER_URL", farm.redis.url)  # where verl's reward finds the farm
    samples = batch(bad)
    assert CONSUMERS[consumer](farm, samples) == [s.reward for s in samples]


# -- OpenRLHF's own rollout loop, fed by the gateway ---------------------------------------------------

GROUPS = {  # prompt -> its problem and the policy's two completions (OpenRLHF's n_samples_per_prompt)
    "A": (ADD, [RIGHT, WRONG]),
    "B": (BROKEN_JUDGE, [RIGHT, WRONG]),  # both judge_error
    "C": (ADD, [WRONG, SLEEPS]),  # the second, infra_error
    "D": (ADD, [WRONG, RIGHT]),  # D and E: the prompts dynamic filtering draws in place of B and C
    "E": (ADD, [RIGHT, NO_CODE]),
}


def rollouts(farm: Farm, filtering: bool, prompts: list[str]) -> list[Any]:
    """OpenRLHF's `SamplesGenerator._generate_vllm` over `prompts` (three at first), its dispatch to
    the vLLM actors replaced by what each actor runs (`generate_responses`), here."""
    module = foreign_clients.openrlhf_rollouts()
    executor = foreign_clients.openrlhf_agent().SingleTurnAgentExecutor(f"{farm.url}/get_reward")
    model = Model({p: GROUPS[p][1] for p in prompts})

    class Rollouts(module.SamplesGenerator):  # type: ignore[misc]
        def _dispatch_prompts_to_vllm(self, prompts: list[str], labels: list[str], **_: Any) -> list[Any]:
            async def each() -> list[Any]:
                n = self.args.rollout.n_samples_per_prompt
                return await asyncio.gather(
                    *(rollout(executor, model, p, lb, n) for p, lb in zip(prompts, labels, strict=True))
                )

            return asyncio.run(each())

    args = types.SimpleNamespace(
        rollout=types.SimpleNamespace(n_samples_per_prompt=2),
        algo=types.SimpleNamespace(dynamic_filtering_range=(0.0, 1.0)),  # OpenRLHF's default range
    )
    generator = Rollouts(types.SimpleNamespace(args=args), None, None, CharTokenizer(), [])
    data = iter([(i, [p], [json.dumps({"env": "codecontests", "problem": GROUPS[p][0]})], [None])
                 for i, p in enumerate(prompts)])  # fmt: skip
    experiences, consumed, _ = generator._generate_vllm(data, 3, filtering, max_len=1 << 16)
    assert consumed == len(prompts)
    return experiences


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_openrlhfs_dynamic_filtering_drops_the_group_of_a_masked_sample(farm: Farm, faults: None) -> None:
    pytest.importorskip("torch")
    experiences = rollouts(farm, True, list(GROUPS))
    # B and C each hold a masked sample: NaN scores put them outside every range; D and E replace them.
    assert [e.prompts[0] for e in experiences] == ["A", "A", "D", "D", "E", "E"]
    assert [e.rewards.item() for e in experiences] == [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    assert [e.info["masked"].item() for e in experiences] == [0.0] * 6


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_without_dynamic_filtering_openrlhf_keeps_every_sample_and_its_mask(farm: Farm, faults: None) -> None:
    pytest.importorskip("torch")
    experiences = rollouts(farm, False, ["A", "B", "C"])
    assert [e.prompts[0] for e in experiences] == ["A", "A", "B", "B", "C", "C"]
    # A number for every sample (its tensors take nothing else): the masked ones' 0.0, flagged.
    assert [e.rewards.item() for e in experiences] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert [e.info["masked"].item() for e in experiences] == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert [e.info["infra_error"].item() for e in experiences] == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert [math.isnan(e.scores.item()) for e in experiences] == [False, False, True, True, False, True]
    from openrlhf.trainer.ppo_utils.experience import Experience

    merged = Experience.concat_experiences(experiences, 0)  # as its experience maker batches them
    assert merged.rewards.flatten().tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert merged.info["masked"].flatten().tolist() == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]


# -- what still fails a whole request --------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.sandbox
def test_a_request_fails_whole_only_when_none_of_its_samples_can_have_a_reward(farm: Farm) -> None:
    url = f"{farm.url}/get_reward"
    good = label(HONEST[0])
    uneven = requests.post(url, json={"query": ["a"], "prompts": [], "labels": [good]}, timeout=30)
    assert uneven.status_code == 400 and "same length" in uneven.json()["error"]
    nothing = requests.post(
        url, json={"query": ["a", "b"], "prompts": ["", ""], "labels": ["x", 3]}, timeout=30
    )
    assert nothing.status_code == 400 and "labels[0]: not a JSON object" in nothing.json()["error"]
    one = requests.post(
        url, json={"query": [RIGHT, RIGHT], "prompts": ["", ""], "labels": ["x", good]}, timeout=60
    )
    assert one.status_code == 200
    assert (one.json()["rewards"], one.json()["extra_logs"]["masked"]) == ([0.0, 1.0], [1.0, 0.0])
    # OpenRLHF shards a request over its endpoints: with more endpoints than samples, some get none.
    empty = requests.post(url, json={"query": [], "prompts": [], "labels": []}, timeout=30)
    assert empty.status_code == 200
    assert empty.json() == {
        "rewards": [],
        "scores": [],
        "extra_logs": {"ok": [], "passed": [], "total": [], "masked": [], "infra_error": []},
    }


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_with_no_farm_the_request_is_503_and_openrlhf_gives_the_sample_no_reward(tmp_path: Any) -> None:
    redis = RedisServer(directory=str(tmp_path)).start()  # Redis answers; no worker node is live
    env = worker_env(EVALFARM_GATEWAY_OPENRLHF_DEADLINE_S="1")
    gateway = GatewayProcess(redis.url, free_port(), env).start()
    try:
        gateway.wait_ready(60)
        data = {"query": [PROMPT + RIGHT], "prompts": [PROMPT], "labels": [label(HONEST[0])]}
        resp = requests.post(f"{gateway.url}/get_reward", json=data, timeout=60)
        assert resp.status_code == 503 and "the farm is down" in resp.json()["error"]
        # OpenRLHF posts it five times, then leaves the sample with no reward, which stops its run
        # when the rollout's rewards are stacked: what a run with no farm should do.
        executor = foreign_clients.openrlhf_agent().SingleTurnAgentExecutor(f"{gateway.url}/get_reward")
        model = Model({PROMPT: [RIGHT]})
        [output] = asyncio.run(rollout(executor, model, PROMPT, data["labels"][0], 1))
        assert (output["reward"], output["scores"]) == (None, None)
    finally:
        gateway.stop(grace_s=10)
        redis.close()


# -- SandboxFusion's /run_code: a program's failure is a verdict, never an HTTP error ---------------------


def result_of(status: Status, **fields: Any) -> Result:
    error = None if status is Status.OK else "why"
    return Result(id="run_code", env="program", status=status.value, code=status.code, reward=None,
                  error=error, exit_code=None, signal=None, **fields)  # fmt: skip


@pytest.mark.parametrize("status", list(Status), ids=[s.value for s in Status])
def test_only_a_fault_of_the_farm_is_an_http_error_on_run_code(status: Status) -> None:
    body, http = answer_of(result_of(status))
    if status is Status.INFRA_ERROR:
        assert (body["status"], http) == ("SandboxError", 504)  # verl's client posts it again
    elif status in (Status.INVALID_JOB, Status.JUDGE_ERROR):
        assert (body["status"], http) == ("SandboxError", 200)  # no verdict; no retry would change it
    else:
        expected = "Success" if status is Status.OK else "Failed"
        assert (body["status"], http, body["run_result"]["status"]) == (
            expected,
            200,
            "TimeLimitExceeded" if status is Status.TIMEOUT else "Finished",
        )
    # A compiled language's program that did not compile (SandboxFusion compiles no script).
    compile_failed = answer_of(result_of(status, compile={"status": "syntax_error", "wall_s": 0.1}), "cpp")
    assert compile_failed[1] == http
    if http == 200 and body["status"] != "SandboxError":  # a program that did not compile
        assert (compile_failed[0]["status"], compile_failed[0]["run_result"]) == ("Failed", None)


PROGRAM_FAILURES = {
    "memory": "x = bytearray(2_000_000_000)\nprint(len(x))",
    "output": "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)",
    "signal": "import ctypes\nctypes.string_at(0)",
    "exit-code": "raise SystemExit(3)",
}


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.parametrize("failure", list(PROGRAM_FAILURES))
def test_a_programs_own_failure_is_failed_for_verls_client(farm: Farm, failure: str) -> None:
    sandbox_fusion = foreign_clients.verl_sandbox_fusion()
    in_outs = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    results, metadata = sandbox_fusion.utils.check_correctness(
        f"{farm.url}/run_code", in_outs, PROGRAM_FAILURES[failure], timeout=10, memory_limit_mb=256
    )
    assert results == [-2], metadata  # verl's runtime_error: SandboxFusion's "Failed", return code != 0
    assert (metadata[0]["api_status"], metadata[0]["run_status"]) == ("Failed", "Finished")
    assert metadata[0]["api_request_error"] is None  # one post: HTTP 200


SOMETIMES_SLEEPS = (
    "a, b = map(int, input().split())\nif a == 99:\n    import time\n    time.sleep(600)\nprint(a + b)"
)


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_verls_client_loses_only_the_test_the_farm_failed(farm: Farm, faults: None) -> None:
    sandbox_fusion = foreign_clients.verl_sandbox_fusion()
    in_outs = {"inputs": ["1 2\n", "99 1\n", "10 -3\n"], "outputs": ["3\n", "100\n", "7\n"]}
    results, metadata = sandbox_fusion.utils.check_correctness(
        f"{farm.url}/run_code", in_outs, SOMETIMES_SLEEPS, timeout=30
    )
    assert results == [True, -1, True], metadata
    assert metadata[1]["status"] == "api_error" and "504" in metadata[1]["api_request_error"]


# -- OpenELM's list of programs, and a job that kills its worker on /v1/score -------------------------


@pytest.mark.integration
@pytest.mark.sandbox
@pytest.mark.timeout(600)
def test_elms_list_of_programs_answers_each_one(farm: Farm, faults: None) -> None:
    square = foreign_clients.sodarace_seeds()["square"]
    sleeper = "import time\ndef make_walker():\n    time.sleep(600)"
    codes = [square, sleeper, "def make_walker():\n    return 2"]
    resp = requests.post(f"{farm.url}/gen_racer", json={"code": codes, "timeout": 60}, timeout=300)
    assert resp.status_code == 200
    walker, failed, not_walker = resp.json()
    assert walker["program_str"] == square and set(walker) == {"program_str", "result_obj"}
    assert failed == {"message": "Failed to execute code", "unsafe_execute_error_code": 6}
    assert not_walker == {"message": "Not walker", "unsafe_execute_error_code": 1}


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_a_job_that_kills_its_worker_costs_its_batch_nothing_on_v1_score(farm: Farm) -> None:
    jobs = [
        {"id": "right", "env": "codecontests", "problem": ADD, "completion": RIGHT},
        {"id": "killer", "env": "crash"},  # kills the process scoring it, on every try
        {"id": "wrong", "env": "codecontests", "problem": ADD, "completion": WRONG},
    ]
    resp = requests.post(f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=300)
    assert resp.status_code == 200
    right, killer, wrong = resp.json()["results"]
    assert (right["reward"], wrong["reward"]) == (1.0, 0.0)
    assert (killer["status"], killer["reward"], killer["infra"]) == ("infra_error", None, True)
