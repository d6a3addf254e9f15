"""The farm modes of `evalfarm score`: `--broker URL` (a running farm) and `--local` (an embedded one)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any


def add_arguments(where: Any) -> None:
    """Add `--broker URL` and `--local` to the score command's mutually exclusive group."""
    where.add_argument("--broker", metavar="URL", help="score on a running farm (or EVALFARM_BROKER_URL)")
    where.add_argument("--local", action="store_true", help="start a farm here, score, stop it (default)")


@contextlib.contextmanager
def farm_results(args: argparse.Namespace, lines: list[Any]) -> Iterator[Iterator[dict[str, Any]]]:
    """Results of the jobs file's `lines` in order, from the farm the flags name (embedded unless a
    broker); lines that are not jobs are answered in place."""
    from evalfarm.broker.farm import Farm
    from evalfarm.workers.jobs_file import in_place, parse
    from evalfarm.workers.options import settings_from

    settings = settings_from(broker_url=getattr(args, "broker", None))
    jobs = [parse(line) for line in lines]
    if settings.broker_url and not getattr(args, "local", False):
        with Farm(settings=settings, progress=False) as farm:
            yield in_place(jobs, farm.iter_ordered)
        return
    from evalfarm.workers.embedded import EmbeddedFarm

    with EmbeddedFarm(workers=args.workers) as embedded, Farm(embedded.broker_url, progress=False) as farm:
        yield in_place(jobs, farm.iter_ordered)
