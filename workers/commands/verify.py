"""`evalfarm verify`: grade an agent trajectory and write reward.json, a drop-in for seed 004's verifier.

With no flags it does what the seed's `main()` does: `WEIGHT_SPACE_GAME`, `WEIGHT_SPACE_SOURCE` and
`WEIGHT_SPACE_EPISODES` (default 1000) from the environment, the answer from /logs/trajectory.json,
`{"normalized_score": ..., **metadata}` to /logs/verifier/reward.json. Bad input gives a message on
stderr, exit status 1 and a reward.json recording the error with score 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_BAD_INPUT, EXIT_FARM = 0, 1, 2
CODE_ENVS = ("codecontests", "humaneval")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `verify` subcommand."""
    from evalfarm.envs.verify import DEFAULT_REWARD, DEFAULT_TRAJECTORY

    parser = subparsers.add_parser(
        "verify",
        help="grade a trajectory's last assistant answer and write reward.json (seed 004's verifier)",
    )
    parser.add_argument(
        "--trajectory", type=Path, default=DEFAULT_TRAJECTORY, help="the trajectory JSON to read"
    )
    parser.add_argument("--reward", type=Path, default=DEFAULT_REWARD, help="where to write reward.json")
    parser.add_argument(
        "--env",
        default="weight_edits",
        choices=("weight_edits", *CODE_ENVS),
        help="the env that grades the answer",
    )
    weights = parser.add_argument_group("weight_edits (default: the WEIGHT_SPACE_* variables)")
    weights.add_argument("--game", help="overrides WEIGHT_SPACE_GAME")
    weights.add_argument("--source", help="overrides WEIGHT_SPACE_SOURCE")
    weights.add_argument("--episodes", help="overrides WEIGHT_SPACE_EPISODES")
    code = parser.add_argument_group("code envs")
    code.add_argument("--job", type=Path, help="a JSON file with the job's other fields (problem, test, ...)")
    code.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a job field (VALUE parsed as JSON if it can be)",
    )
    parser.add_argument(
        "--broker", help="grade through the farm at this broker URL instead of in this process"
    )
    parser.set_defaults(func=verify)


def verify(args: argparse.Namespace) -> int:
    """Grade and write reward.json; the exit status says whether the input was usable."""
    if args.env == "weight_edits":
        return _verify_weight_edits(args)
    return _verify_code_env(args)


def _fail(path: Path, payload: dict[str, Any], message: str, status: int = EXIT_BAD_INPUT) -> int:
    from evalfarm.envs.verify import write_reward

    print(f"evalfarm verify: {message}", file=sys.stderr)
    write_reward(path, payload)
    return status


def _verify_weight_edits(args: argparse.Namespace) -> int:
    from evalfarm.envs.verify import (
        VerifyError,
        WeightEditsTask,
        answer_of,
        failure_payload,
        grade_locally,
        read_trajectory,
        task_from_environ,
        write_reward,
    )

    task = WeightEditsTask(None, None, None)
    try:
        task = task_from_environ(os.environ, game=args.game, source=args.source, episodes=args.episodes)
        answer, found = answer_of(read_trajectory(args.trajectory))
    except VerifyError as error:
        task = getattr(error, "task", task)
        return _fail(args.reward, failure_payload(task, str(error)), str(error))
    payload = (
        grade_locally(task, answer) if not args.broker else _weight_edits_on_farm(args.broker, task, answer)
    )
    if payload is None:
        return _fail(
            args.reward, failure_payload(task, "the farm did not grade the answer"), "farm failure", EXIT_FARM
        )
    if not found:
        # The seed grades "" (no edits block) and exits 0; the missing message is reported too.
        return _fail(args.reward, payload, f"no assistant message in {args.trajectory}")
    write_reward(args.reward, payload)
    return EXIT_OK


def _weight_edits_on_farm(broker: str, task: Any, answer: str) -> dict[str, Any] | None:
    """The seed's payload graded by the farm, episodes split over its processes; None if it failed."""
    from evalfarm.broker.farm import Farm
    from evalfarm.envs.verify import reward_payload
    from evalfarm.envs.weight_edits import merge_results, split_job

    job = {"id": "verify", "env": "weight_edits", "game": task.game, "source": task.source}
    job.update({"answer": answer, "episodes": task.episodes})
    with Farm(broker, progress=False) as farm:
        parts = split_job(job, farm.processes())
        result = merge_results(job, [dict(part) for part in farm.score(parts)])
    if result["status"] not in ("ok", "parse_error"):
        print(f"evalfarm verify: {result['status']}: {result.get('error')}", file=sys.stderr)
        return None
    return reward_payload(result["reward"], result["metadata"])


def _code_job(args: argparse.Namespace, answer: str) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(args.job.read_text()) if args.job else {}
    for field in args.field:
        key, _, value = field.partition("=")
        try:
            job[key] = json.loads(value)
        except json.JSONDecodeError:
            job[key] = value
    job.update({"id": job.get("id", "verify"), "env": args.env, "completion": answer})
    return job


def _verify_code_env(args: argparse.Namespace) -> int:
    from evalfarm.envs.verify import VerifyError, answer_of, read_trajectory, write_reward

    failure: dict[str, Any] = {"normalized_score": 0.0, "env": args.env}
    try:
        answer, found = answer_of(read_trajectory(args.trajectory))
        job = _code_job(args, answer)
    except (VerifyError, OSError, ValueError) as error:
        return _fail(args.reward, {**failure, "error": str(error)}, str(error))
    result = _score_code_job(job, args.broker)
    payload = {
        "normalized_score": result.get("reward") or 0.0,
        **{k: v for k, v in result.items() if k != "id"},
    }
    if result.get("status") in ("invalid_job", "infra_error"):
        return _fail(args.reward, payload, f"{result['status']}: {result.get('error')}", EXIT_FARM)
    if not found:
        return _fail(args.reward, payload, f"no assistant message in {args.trajectory}")
    write_reward(args.reward, payload)
    return EXIT_OK


def _score_code_job(job: dict[str, Any], broker: str | None) -> dict[str, Any]:
    if broker:
        from evalfarm.broker.farm import Farm

        with Farm(broker, progress=False) as farm:
            return dict(farm.score([job])[0])
    from evalfarm.envs import Context, score_job

    ctx = Context()
    try:
        return score_job(job, ctx)
    finally:
        ctx.close()
