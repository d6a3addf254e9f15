"""Entry point of the worker container: give this replica its own cores, then run the command.

`docker compose up --scale worker=N` starts N identical containers, and a cpuset in the compose file
would pin them all to the same cores. Instead each replica takes a *seat*: the first free lock among
`seat-0.lock`, `seat-1.lock`, ... in a directory every replica mounts (a named volume). Seat k owns
cores [k*P, (k+1)*P) of the host's allowed cores, P = EVALFARM_CPUS_PER_WORKER, and its pool is pinned
to them (EVALFARM_CPUS) with sandbox slots apart (EVALFARM_SLOT_BASE). The lock is held by the worker
itself (the descriptor survives exec), so the kernel frees the seat when the container stops or dies.

EVALFARM_CPUS_PER_WORKER=auto (compose's default) shares the host's cores among the replicas the
compose file runs (EVALFARM_WORKER_REPLICAS): on 2 cores with 2 replicas, one core each, so every
replica is pinned whatever the host. Without EVALFARM_CPUS_PER_WORKER, with EVALFARM_CPUS already
set, or with no seat left, the command runs unchanged (one pool process per allowed core).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path

SEATS_DIR = Path(os.environ.get("EVALFARM_SEATS_DIR", "/var/lib/evalfarm/seats"))


def take_seat(seats: int) -> tuple[int, int] | None:
    """Lock the first free seat; (seat, descriptor), or None when every seat is taken."""
    SEATS_DIR.mkdir(parents=True, exist_ok=True)
    for seat in range(seats):
        fd = os.open(SEATS_DIR / f"seat-{seat}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.set_inheritable(fd, True)  # held by the worker after exec, released when it exits
        return seat, fd
    return None


def seat_environment(per_worker: int) -> dict[str, str]:
    """The EVALFARM_* variables that pin this replica to its seat's cores; empty when none is free."""
    allowed = sorted(os.sched_getaffinity(0))
    taken = take_seat(len(allowed) // per_worker) if per_worker <= len(allowed) else None
    if taken is None:
        print(f"evalfarm-entrypoint: no free seat of {per_worker} cores among {len(allowed)}; "
              "running unpinned to a seat", file=sys.stderr)  # fmt: skip
        return {}
    seat, _ = taken
    cores = allowed[seat * per_worker : (seat + 1) * per_worker]
    print(f"evalfarm-entrypoint: seat {seat}, cores {cores}", file=sys.stderr)
    return {
        "EVALFARM_CPUS": json.dumps(cores),
        "EVALFARM_CONCURRENCY": os.environ.get("EVALFARM_CONCURRENCY") or str(per_worker),
        "EVALFARM_SLOT_BASE": str(seat * per_worker),
    }


def cores_per_worker(setting: str, replicas: str, cores: int) -> int:
    """A seat's cores: the setting, or for `auto` the host's cores shared by the replicas (at least 1)."""
    if setting.strip().lower() == "auto":
        return max(1, cores // max(1, int(replicas or 1)))
    return int(setting or 0)


def main(argv: list[str]) -> None:
    """Take a seat if asked to, then exec the command (default: `evalfarm worker`)."""
    per_worker = cores_per_worker(
        os.environ.get("EVALFARM_CPUS_PER_WORKER", ""),
        os.environ.get("EVALFARM_WORKER_REPLICAS", ""),
        len(os.sched_getaffinity(0)),
    )
    if per_worker > 0 and not os.environ.get("EVALFARM_CPUS"):
        os.environ.update(seat_environment(per_worker))
    command = argv or ["evalfarm", "worker"]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
