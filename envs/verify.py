"""A drop-in verifier: read an agent trajectory, grade its answer, write `reward.json` as seed 004 does.

Seed 004's `main()` reads `WEIGHT_SPACE_GAME`, `WEIGHT_SPACE_SOURCE` and `WEIGHT_SPACE_EPISODES`
(default 1000), takes the answer from `/logs/trajectory.json` and writes
`/logs/verifier/reward.json` = `{"normalized_score": ..., **metadata}`. For the same inputs this
module writes the same bytes. Where the seed would crash with a traceback (a missing variable, a
missing or malformed trajectory), it writes the seed's failure shape instead: score 0 and the error.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalfarm.envs.base import EnvError
from evalfarm.envs.trajectory import assistant_answer, last_assistant_content

DEFAULT_TRAJECTORY = Path("/logs/trajectory.json")
DEFAULT_REWARD = Path("/logs/verifier/reward.json")
GAME_VARIABLE = "WEIGHT_SPACE_GAME"
SOURCE_VARIABLE = "WEIGHT_SPACE_SOURCE"
EPISODES_VARIABLE = "WEIGHT_SPACE_EPISODES"
DEFAULT_EPISODES = "1000"


class VerifyError(EnvError):
    """The verifier's input is unusable; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class WeightEditsTask:
    """What to grade the answer on: the seed's three variables."""

    game: str | None
    source: str | None
    episodes: int | None

    def metadata(self) -> dict[str, Any]:
        """The metadata keys the seed sets before grading."""
        return {"game": self.game, "source": self.source, "episodes": self.episodes, "parse_success": 0.0}


def task_from_environ(environ: Mapping[str, str], **overrides: Any) -> WeightEditsTask:
    """The task from the seed's variables (`overrides` win when not None); VerifyError when one is bad.

    The error, if any, is raised after every variable was read, with `task` set on the exception so
    the failure can still record what was known.
    """
    game = overrides.get("game") or environ.get(GAME_VARIABLE)
    source = overrides.get("source") or environ.get(SOURCE_VARIABLE)
    raw_episodes = overrides.get("episodes") or environ.get(EPISODES_VARIABLE, DEFAULT_EPISODES)
    try:
        episodes: int | None = int(raw_episodes)
    except ValueError:
        episodes = None
    task = WeightEditsTask(game, source, episodes)
    missing = [name for name, value in ((GAME_VARIABLE, game), (SOURCE_VARIABLE, source)) if value is None]
    if missing:
        raise _with_task(VerifyError(f"missing environment variable {' and '.join(missing)}"), task)
    if episodes is None:
        raise _with_task(VerifyError(f"{EPISODES_VARIABLE}: not an integer: {raw_episodes!r}"), task)
    return task


def _with_task(error: VerifyError, task: WeightEditsTask) -> VerifyError:
    error.task = task  # type: ignore[attr-defined]
    return error


def read_trajectory(path: Path) -> Any:
    """The trajectory JSON at `path`; VerifyError when it is missing, unreadable or not an object."""
    try:
        trajectory = json.loads(path.read_text())
    except FileNotFoundError:
        raise VerifyError(f"trajectory: no file at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise VerifyError(f"trajectory: cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise VerifyError(f"trajectory: {path} is not valid JSON: {error}") from None
    if not isinstance(trajectory, dict):
        raise VerifyError(f"trajectory: {path} must hold a JSON object, not {type(trajectory).__name__}")
    return trajectory


def answer_of(trajectory: Any) -> tuple[str, bool]:
    """The answer the seed grades, and whether an assistant message was found at all."""
    try:
        found = last_assistant_content(trajectory) is not None
        return assistant_answer(trajectory), found
    except (AttributeError, TypeError) as error:
        raise VerifyError(f"trajectory: not in the steps/messages format: {error}") from None


def reward_payload(normalized_score: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The seed's reward.json object."""
    return {"normalized_score": normalized_score, **metadata}


def failure_payload(task: WeightEditsTask, error: str) -> dict[str, Any]:
    """The seed's failure shape: score 0, parse_success 0 and the error."""
    return reward_payload(0.0, {**task.metadata(), "error": error})


def write_reward(path: Path, payload: Mapping[str, Any]) -> None:
    """Write reward.json as the seed does (default `json.dumps` separators, no trailing newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))


def grade_locally(task: WeightEditsTask, answer: str) -> dict[str, Any]:
    """The seed's payload for `answer`, graded in this process."""
    from evalfarm.envs.weight_edits import grade_answer

    assert task.game is not None and task.source is not None and task.episodes is not None
    return reward_payload(*grade_answer(task.game, task.source, answer, task.episodes))
