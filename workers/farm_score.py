"""The farm modes of `evalfarm score`: `--broker URL` (a running farm) and `--local` (an embedded one)."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from typing import Any

# The contract's invalid_job status, for lines that never become jobs (not JSON at all).
_INVALID = {"status": "invalid_job", "code": 10, "reward": None}


def add_arguments(where: Any) -> None:
    """Add `--broker URL` and `--local` to the score command's mutually exclusive group."""
    where.add_argument("--broker", metavar="URL", help="score on a running farm (or EVALFARM_BROKER_URL)")
    where.add_argument("--local", action="store_true", help="start a farm here, score, stop it (default)")


@contextlib.contextmanager
def farm_results(args: argparse.Namespace, lines: list[str]) -> Iterator[Iterator[dict[str, Any]]]:
    """Results of JSONL `lines` in order, from the farm the flags name (embedded unless a broker)."""
    from broker.client import Farm
    from workers.options import settings_from

    settings = settings_from(broker_url=getattr(args, "broker", None))
    jobs = [parse_line(line) for line in lines]
    if settings.broker_url and not getattr(args, "local", False):
        with Farm(settings=settings, progress=False) as farm:
            yield _merged(farm, jobs)
        return
    from workers.embedded import EmbeddedFarm

    with EmbeddedFarm(workers=args.workers) as embedded, Farm(embedded.broker_url, progress=False) as farm:
        yield _merged(farm, jobs)


def parse_line(line: str) -> Any:
    """The job on a JSONL line, or a ready invalid_job result (marked) when the line is not JSON."""
    try:
        return json.loads(line)
    except ValueError as error:
        return _BadLine(f"line is not valid JSON: {error}")


class _BadLine(dict[str, Any]):
    """A line that never became a job: answered here, never sent."""

    def __init__(self, error: str) -> None:
        super().__init__(id=None, env=None, error=error, **_INVALID)


def _merged(farm: Any, jobs: list[Any]) -> Iterator[dict[str, Any]]:
    """The farm's results for the real jobs, with the bad lines' answers put back in place."""
    real = [i for i, job in enumerate(jobs) if not isinstance(job, _BadLine)]
    results = farm.iter_ordered([jobs[i] for i in real])
    position = 0
    for index, job in enumerate(jobs):
        if isinstance(job, _BadLine):
            yield dict(job)
        else:
            assert real[position] == index
            position += 1
            yield next(results)
