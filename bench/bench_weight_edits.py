"""Benchmark: the weight_edits grader against seed 004's reference grader, side by side in one run.

Five answers (one per game, non-trivial weights reaching the network through W1), 100 episodes each.
Prints the time of both per game, the speedups, and whether every reward and metadata is identical.
The reference is loaded at run time from the seeds directory next to the repository
(`../shared/seeds/`, or the directory in EVALFARM_SEEDS_DIR); without it the benchmark says so and stops.
"""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from envs.weight_edits import grade_answer  # noqa: E402

SEED_NAME = "004_84e0b83d72e90365.txt"
SEED_DIRS = tuple(
    Path(d) for d in (os.environ.get("EVALFARM_SEEDS_DIR"), REPO.parent / "shared" / "seeds") if d
)
EPISODES = 100


def edits(*lines: str) -> str:
    return "Here are my edits.\n```edits\n" + "\n".join(lines) + "\n```\n"


ANSWERS: dict[str, str] = {
    # Watch the chicken's row and the lane above it; mostly go up.
    "freeway": edits(
        "W1[0:600:6, 0] = 1.5",
        "W1[25:600:60, 1] = -1.0",
        "W2[0, 0] = 2.0",
        "W2[1, 1] = 1.0",
        "W3[0, 2] = 3.0",
        "W3[1, 0] = 2.0",
        "b3[4] = 0.5",
    ),
    # Move toward gold, away from enemies.
    "asterix": edits(
        "W1[1:600:6, 0] = 1.0",
        "W1[2:600:6, 1] = 1.0",
        "W2[0, 0] = 1.0",
        "W2[1, 1] = 1.0",
        "W3[0, 2] = 2.0",
        "W3[1, 4] = 2.0",
        "b3[:] += 0.1",
    ),
    # Follow the ball with the paddle.
    "breakout": edits(
        "W1[3:600:6, 0] = 1.0",
        "W1[0:600:6, 1] = 1.0",
        "W2[0, 0] = 1.0",
        "W2[1, 1] = -1.0",
        "W3[0, 3] = 2.0",
        "W3[1, 1] = 2.0",
    ),
    # Fire, and dive when the sub is near the surface.
    "seaquest": edits(
        "W1[0:60:6, 0] = 1.0",
        "W1[5:600:6, 1] = 0.05",
        "W2[0, 0] = 1.0",
        "W2[1, 1] = 1.0",
        "W3[0, 4] = 2.0",
        "W3[1, 5] = 2.0",
        "b3[5] = 1.0",
    ),
    # Aim at the aliens above the cannon and fire.
    "space_invaders": edits(
        "W1[540:600:6, 0] = 0.5",
        "W1[2:600:6, 1] = 0.02",
        "W2[0, 0] = 1.0",
        "W2[1, 1] = 1.0",
        "W3[0, 3] = 1.5",
        "W3[1, 1] = 1.0",
        "b3[5] = 1.5",
    ),
}


def load_reference() -> types.ModuleType | None:
    """Seed 004 as a module (its first line is a title, not code), or None when it is not there."""
    for directory in SEED_DIRS:
        path = directory / SEED_NAME
        if path.is_file():
            module = types.ModuleType("seed004")
            module.__file__ = str(path)
            exec(compile(path.read_text().split("\n", 1)[1], str(path), "exec"), module.__dict__)
            return module
    return None


def timed(grade: Any, game: str, answer: str) -> tuple[float, tuple[float, dict[str, Any]]]:
    started = time.perf_counter()
    result = grade(game, "original", answer, EPISODES)
    return time.perf_counter() - started, result


def main() -> int:
    reference = load_reference()
    if reference is None:
        print(f"skipped: the reference grader {SEED_NAME} is not in {' or '.join(map(str, SEED_DIRS))}")
        return 0
    print(f"{EPISODES} episodes per game, one process, one core")
    print(f"{'game':<16}{'reference s':>12}{'ours s':>10}{'speedup':>10}  identical")
    totals = [0.0, 0.0]
    identical_all = True
    for game, answer in ANSWERS.items():
        ours_s, ours = timed(grade_answer, game, answer)
        reference_s, expected = timed(reference.grade_answer, game, answer)
        identical = ours == expected and repr(ours) == repr(expected)
        identical_all &= identical
        totals[0] += reference_s
        totals[1] += ours_s
        print(f"{game:<16}{reference_s:>12.2f}{ours_s:>10.3f}{reference_s / ours_s:>9.1f}x  {identical}")
        if not identical:
            print(f"  reference: {expected}\n  ours:      {ours}")
    print(f"{'total':<16}{totals[0]:>12.2f}{totals[1]:>10.3f}{totals[0] / totals[1]:>9.1f}x  {identical_all}")
    return 0 if identical_all else 1


if __name__ == "__main__":
    sys.exit(main())
