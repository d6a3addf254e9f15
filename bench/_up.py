"""`evalfarm up` for the benchmarks: started in the background, its printed URLs read, stopped with
SIGTERM as a user stops it (it stops everything it started)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class RunningUp:
    """`evalfarm up --workers N [ARGUMENTS]` with `environment` added to this process's."""

    def __init__(self, *arguments: str, workers: int = 2, **environment: str) -> None:
        command = [sys.executable, "-m", "evalfarm.workers.cli", "up", "--workers", str(workers), *arguments]
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **environment},
        )
        assert self.proc.stdout is not None
        # `up` prints "broker:", "metrics:", then "http:" and "flower:" when asked for, one a line.
        wanted = 2 + ("--http" in arguments) + ("--flower" in arguments)
        lines = [self.proc.stdout.readline() for _ in range(wanted)]
        urls = dict(line.strip().partition(":")[::2] for line in lines)
        if "broker" not in urls or ("--http" in arguments and "http" not in urls):
            self.stop()
            raise SystemExit(f"evalfarm up did not start: {lines!r}")
        self.broker = urls["broker"].strip()
        self.metrics = urls.get("metrics", "").strip()
        self.http = urls.get("http", "").strip()  # the gateway's URL, with --http

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> RunningUp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
