"""Benchmark: the weight_edits grader against seed 004's reference grader, side by side in one run.

Two answer sets, every answer graded by both graders in this process, pinned to one core:

- sparse: one answer per game whose edits reach W1 through a few rows of a strided slice;
- dense: one answer per game writing a whole W1 column and slices of 200+ rows, plus two answers
  writing all of W1 and W2 (and W3) with varied values (freeway, the longest game, and
  space_invaders, the one with the most active inputs).

Each answer plays EPISODES episodes (default 1,000, the reference's default; `--episodes N`); ours
is timed three times (the median kept), the reference once. Nothing else should run on the pinned
core meanwhile (`--core`, default the last). Prints per answer both times, the speedup and whether
reward and metadata are identical (== and repr), the totals, and where our time goes (a second,
profiled run: game steps and loop, observations and policy bounds, fallbacks to the reference's
computation per million steps, MinAtar replays).
The reference is loaded at run time from the seeds directory next to the repository
(`../shared/seeds/`, or the directory in EVALFARM_SEEDS_DIR); without it the benchmark says so and
stops. The reference takes minutes (freeway: ~2.5 M steps an answer); it prints its progress.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from evalfarm.envs.weight_edits import apply_edits, grade_answer  # noqa: E402
from evalfarm.envs.weight_edits.deadline import Deadline  # noqa: E402
from evalfarm.envs.weight_edits.policy import Policy  # noqa: E402
from evalfarm.envs.weight_edits.profiling import Profile  # noqa: E402
from evalfarm.envs.weight_edits.runner import compile_loop, run_episodes  # noqa: E402

SEED_NAME = "004_84e0b83d72e90365.txt"
SEED_DIRS = tuple(
    Path(d) for d in (os.environ.get("EVALFARM_SEEDS_DIR"), REPO.parent / "shared" / "seeds") if d
)
EPISODES = 1000
GOAL_EACH, GOAL_TOTAL = 30.0, 100.0
OUR_RUNS = 3


def edits(*lines: str) -> str:
    return "Here are my edits.\n```edits\n" + "\n".join(lines) + "\n```\n"


def literal(values: np.ndarray) -> str:
    """A nested list literal of the values, as an answer would write them."""
    return repr(np.round(values, 3).tolist())


def all_weights(seed: int) -> str:
    """Every W1, W2 and W3 entry written, with varied values."""
    rng = np.random.default_rng(seed)
    return edits(
        f"W1[:, :] = {literal(rng.normal(0.0, 0.3, (600, 32)))}",
        f"W2[:, :] = {literal(rng.normal(0.0, 0.5, (32, 32)))}",
        f"W3[:, :] = {literal(rng.normal(0.0, 0.5, (32, 6)))}",
        f"b1[:] = {literal(rng.normal(0.0, 0.1, 32))}",
    )


SPARSE: dict[str, tuple[str, str]] = {
    # Watch the chicken's row and the lane above it; mostly go up.
    "freeway": (
        "freeway",
        edits(
            "W1[0:600:6, 0] = 1.5",
            "W1[25:600:60, 1] = -1.0",
            "W2[0, 0] = 2.0",
            "W2[1, 1] = 1.0",
            "W3[0, 2] = 3.0",
            "W3[1, 0] = 2.0",
            "b3[4] = 0.5",
        ),
    ),
    # Move toward gold, away from enemies.
    "asterix": (
        "asterix",
        edits(
            "W1[1:600:6, 0] = 1.0",
            "W1[2:600:6, 1] = 1.0",
            "W2[0, 0] = 1.0",
            "W2[1, 1] = 1.0",
            "W3[0, 2] = 2.0",
            "W3[1, 4] = 2.0",
            "b3[:] += 0.1",
        ),
    ),
    # Follow the ball with the paddle.
    "breakout": (
        "breakout",
        edits(
            "W1[3:600:6, 0] = 1.0",
            "W1[0:600:6, 1] = 1.0",
            "W2[0, 0] = 1.0",
            "W2[1, 1] = -1.0",
            "W3[0, 3] = 2.0",
            "W3[1, 1] = 2.0",
        ),
    ),
    # Fire, and dive when the sub is near the surface.
    "seaquest": (
        "seaquest",
        edits(
            "W1[0:60:6, 0] = 1.0",
            "W1[5:600:6, 1] = 0.05",
            "W2[0, 0] = 1.0",
            "W2[1, 1] = 1.0",
            "W3[0, 4] = 2.0",
            "W3[1, 5] = 2.0",
            "b3[5] = 1.0",
        ),
    ),
    # Aim at the aliens above the cannon and fire.
    "space_invaders": (
        "space_invaders",
        edits(
            "W1[540:600:6, 0] = 0.5",
            "W1[2:600:6, 1] = 0.02",
            "W2[0, 0] = 1.0",
            "W2[1, 1] = 1.0",
            "W3[0, 3] = 1.5",
            "W3[1, 1] = 1.0",
            "b3[5] = 1.5",
        ),
    ),
}
BLOCK = "[[1.0, -0.5, 0.3, 0.2], [0.5, 1.5, -0.2, 0.1], [-0.3, 0.2, 1.0, 0.4], [0.2, -0.1, 0.3, 1.2]]"
DENSE: dict[str, tuple[str, str]] = {
    # Every input a little, the chicken's channel and its trails more, a 300-row slice against.
    "freeway": (
        "freeway",
        edits(
            "W1[:, 0] = 0.15",
            "W1[0:600:6, 1] = 1.0",
            "W1[100:400, 2] = -0.2",
            "W1[4:600:6, 3] = 0.3",
            f"W2[0:4, 0:4] = {BLOCK}",
            "W3[0:4, 2] = [2.0, 1.5, -1.0, 0.5]",
            "W3[0:4, 4] = [-1.0, 0.5, 1.0, -0.5]",
            "b3[2] = 1.0",
        ),
    ),
    # Gold draws, enemies repel, the top half of the board a little.
    "asterix": (
        "asterix",
        edits(
            "W1[:, 0] = 0.1",
            "W1[2:600:6, 1] = 0.8",
            "W1[1:600:6, 2] = -0.8",
            "W1[0:300, 3] = 0.05",
            f"W2[0:4, 0:4] = {BLOCK}",
            f"W3[0:4, 1:5] = {BLOCK}",
        ),
    ),
    # Ball, paddle and trail, and everything a little.
    "breakout": (
        "breakout",
        edits(
            "W1[:, 0] = 0.05",
            "W1[3:600:6, 1] = 1.0",
            "W1[540:600:6, 2] = -1.0",
            "W1[4:600:6, 3] = 0.5",
            "W1[0:360, 4] = 0.02",
            "W2[0:5, 0:5] = 0.4",
            "W3[0:5, 1] = [1.0, -1.0, 0.5, 0.8, -0.2]",
            "W3[0:5, 3] = [-1.0, 1.0, -0.5, 0.3, 0.2]",
        ),
    ),
    # Everything a little, the rows above and below, the gauges.
    "seaquest": (
        "seaquest",
        edits(
            "W1[:, 4] = 0.02",
            "W1[0:250, 5] = 0.1",
            "W1[1:600:6, 6] = -0.3",
            "W1[5:600:6, 7] = 0.2",
            f"W2[4:8, 4:8] = {BLOCK}",
            "W3[4:8, 2] = [1.0, -0.5, 0.5, 1.5]",
            "W3[4:8, 4] = [-1.0, 1.0, -0.5, 0.5]",
            "W3[4:8, 5] = [0.5, 0.5, 1.0, -1.0]",
        ),
    ),
    # Aliens, the cannon's row, a 300-row slice, everything a little.
    "space_invaders": (
        "space_invaders",
        edits(
            "W1[:, 1] = 0.03",
            "W1[100:400, 2] = -0.05",
            "W1[540:600:6, 3] = 0.5",
            "W1[1:600:6, 4] = 0.1",
            f"W2[1:5, 1:5] = {BLOCK}",
            "W3[1:5, 1] = [1.0, -0.5, 0.5, -1.0]",
            "W3[1:5, 3] = [-1.0, 0.5, 1.0, 0.5]",
            "W3[1:5, 5] = [0.5, 1.0, -0.5, 1.5]",
        ),
    ),
    "freeway, all of W1-W3": ("freeway", all_weights(1)),
    "space_invaders, all of W1-W3": ("space_invaders", all_weights(2)),
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


def with_progress(reference: types.ModuleType, label: str, episodes: int) -> None:
    """Print the reference's progress every tenth of its episodes (it builds one environment each)."""
    make = reference.__dict__.setdefault("_make_environment", reference.make_environment)
    started, count = time.perf_counter(), [0]

    def counting(game: str, source: str) -> Any:
        count[0] += 1
        if count[0] % max(1, episodes // 10) == 0:
            elapsed = time.perf_counter() - started
            print(f"    reference {label}: {count[0]}/{episodes} episodes, {elapsed:.0f} s", flush=True)
        return make(game, source)

    reference.make_environment = counting


@dataclasses.dataclass
class Row:
    label: str
    game: str
    reference_s: float
    ours_s: float
    identical: bool


def timed(grade: Any, game: str, answer: str, episodes: int) -> tuple[float, Any]:
    started = time.perf_counter()
    result = grade(game, "original", answer, episodes)
    return time.perf_counter() - started, result


def compare(reference: types.ModuleType, label: str, game: str, answer: str, episodes: int) -> Row:
    """Both grades of one answer: ours three times (the median kept: ours takes well under a second,
    where one slow moment of a shared machine weighs a lot), the reference once, after."""
    runs = [timed(grade_answer, game, answer, episodes) for _ in range(OUR_RUNS)]
    ours_s, ours = statistics.median(seconds for seconds, _ in runs), runs[0][1]
    with_progress(reference, label, episodes)
    reference_s, expected = timed(reference.grade_answer, game, answer, episodes)
    identical = ours == expected and repr(ours) == repr(expected)
    if not identical:
        print(f"  {label}: DIFFERENT\n    reference: {expected}\n    ours:      {ours}")
    return Row(label, game, reference_s, ours_s, identical)


def profiled(answers: dict[str, tuple[str, str]], episodes: int) -> Profile:
    """Our grades once more, with the loop's counters and clocks on."""
    profile = Profile()
    for game, answer in answers.values():
        weights, _ = apply_edits(answer)
        run_episodes(game, Policy(weights), range(episodes), Deadline(), profile)
    return profile


def print_rows(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    print(f"{'answer':<32}{'reference s':>12}{'ours s':>10}{'speedup':>10}  identical")
    for row in rows:
        speedup = row.reference_s / row.ours_s
        print(f"{row.label:<32}{row.reference_s:>12.2f}{row.ours_s:>10.3f}{speedup:>9.1f}x  {row.identical}")
    reference_s, ours_s = sum(r.reference_s for r in rows), sum(r.ours_s for r in rows)
    identical = all(r.identical for r in rows)
    print(f"{'total':<32}{reference_s:>12.2f}{ours_s:>10.3f}{reference_s / ours_s:>9.1f}x  {identical}")


def print_profile(title: str, profile: Profile) -> None:
    per_million = profile.fallbacks / profile.steps * 1e6
    print(
        f"{title:<8}{profile.steps:>12,}{profile.total_s:>9.3f}{profile.game_s:>11.3f}{profile.policy_s:>10.3f}"
        f"{profile.fallbacks:>11,}{per_million:>13.1f}{profile.fallback_s:>12.4f}{profile.replays:>9}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=EPISODES)
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    reference = load_reference()
    if reference is None:
        print(f"skipped: the reference grader {SEED_NAME} is not in {' or '.join(map(str, SEED_DIRS))}")
        return 0
    os.sched_setaffinity(0, {args.core})
    compile_loop()  # loaded (or compiled) before anything is timed
    print(f"{args.episodes} episodes per answer, one process pinned to core {args.core}")
    sets = {"sparse": SPARSE, "dense": DENSE}
    rows = {
        name: [
            compare(reference, f"{name} {label}", game, answer, args.episodes)
            for label, (game, answer) in answers.items()
        ]
        for name, answers in sets.items()
    }
    for name, set_rows in rows.items():
        print_rows(
            f"{name} answers", [dataclasses.replace(r, label=r.label.split(" ", 1)[1]) for r in set_rows]
        )
    every = [row for set_rows in rows.values() for row in set_rows]
    total = sum(r.reference_s for r in every) / sum(r.ours_s for r in every)
    slowest = min(r.reference_s / r.ours_s for r in every)
    identical = all(r.identical for r in every)
    print(
        f"\nall {len(every)} answers: {total:.1f}x in total, {slowest:.1f}x the least, identical: {identical}"
    )
    met = slowest >= GOAL_EACH and total >= GOAL_TOTAL
    print(
        f"goal (>= {GOAL_EACH:g}x every answer, >= {GOAL_TOTAL:g}x in total): {'met' if met else 'not met'}"
    )
    print("\nwhere our time goes (a second run, profiled; seconds)")
    print(
        f"{'set':<8}{'steps':>12}{'total':>9}{'game+loop':>11}{'policy':>10}{'fallbacks':>11}"
        f"{'per 1M steps':>13}{'fallback s':>12}{'replays':>9}"
    )
    for name, answers in sets.items():
        print_profile(name, profiled(answers, args.episodes))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
