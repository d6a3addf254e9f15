"""The multiprocess directory of a node: emptied at start, dead processes' files folded away.

prometheus-client keeps one file per process and metric type in the directory. A node recycles its
pool children (every `max_tasks_per_child` messages) and replaces dead ones, so without care the
directory, and each scrape's work, would grow with every child that ever lived. At each scrape the
files of processes that are gone are folded: their live gauges are dropped (`mark_process_dead`) and
their counters and histograms are added into one `<type>_dead.db` per type, then deleted. Totals
stay monotonic; the number of files stays bounded by the pool size.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

# Types whose values are summed across processes, so a dead process's values can be summed in advance.
SUMMED_TYPES = ("counter", "histogram")
DEAD = "dead"
# A node's private directory: the prefix, the node's pid, a random suffix.
PRIVATE_PREFIX = "evalfarm-metrics-"


def prepare_dir(configured: str | None) -> Path:
    """The node's multiprocess directory, holding no file of an earlier run.

    A configured directory is kept and emptied of `*.db` files only (it may be a mounted volume);
    otherwise a private temporary one is made and removed when this process exits.
    """
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
        return path
    owner = os.getpid()
    _remove_orphans(Path(tempfile.gettempdir()))
    path = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{owner}-"))
    atexit.register(_remove_if_owner, path, owner)  # pool children leave by os._exit, never run this
    return path


def _remove_orphans(parent: Path) -> None:
    """Remove the private directories of nodes that died without cleaning up (SIGKILL, a crash)."""
    for path in parent.glob(f"{PRIVATE_PREFIX}*-*"):
        pid = path.name.removeprefix(PRIVATE_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)


def _remove_if_owner(path: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def fold_dead(directory: Path, owner: int) -> list[int]:
    """Fold the files of every process that is neither `owner` nor a live child of it; their pids."""
    # Imported here: `prepare_dir` runs before PROMETHEUS_MULTIPROC_DIR is set, and importing
    # prometheus_client any earlier would fix every metric of this process in memory.
    from prometheus_client.multiprocess import mark_process_dead

    dead = sorted(pid for pid in _writers(directory) if not _alive_child(pid, owner))
    for pid in dead:
        mark_process_dead(pid, str(directory))
        for kind in SUMMED_TYPES:
            source = directory / f"{kind}_{pid}.db"
            if source.exists():
                if _sized(source):  # a process killed between making its file and sizing it wrote nothing
                    add_into(source, directory / f"{kind}_{DEAD}.db")
                source.unlink()
    return dead


def ready_files(directory: Path) -> list[str]:
    """The metrics files a scrape can read.

    prometheus-client makes a process's file empty and then sizes it; a scrape that lands between
    the two (a pool child starting) would fail to parse it, and the whole /metrics would answer 500.
    An empty file holds no value yet, so leaving it out loses nothing. Once sized, a file never
    shrinks, and a writer publishes each new entry's bytes before the length that covers them.
    """
    return sorted(str(path) for path in directory.glob("*.db") if _sized(path))


def _sized(path: Path) -> bool:
    with contextlib.suppress(FileNotFoundError):
        return path.stat().st_size > 0
    return False


def add_into(source: Path, archive: Path) -> None:
    """Add every value of the metrics file `source` into the file `archive` (created if missing)."""
    from prometheus_client.mmap_dict import MmapedDict

    target = MmapedDict(str(archive))
    try:
        for key, value, timestamp, _ in MmapedDict.read_all_values_from_file(str(source)):
            total, _ = target.read_value(key)
            target.write_value(key, total + value, timestamp)
    finally:
        target.close()


def _writers(directory: Path) -> set[int]:
    """The pids that own files in `directory` (`counter_12.db`, `gauge_livesum_12.db`, ...)."""
    pids = set()
    for path in directory.glob("*.db"):
        last = path.stem.rsplit("_", 1)[-1]
        if last.isdigit():
            pids.add(int(last))
    return pids


def _alive_child(pid: int, owner: int) -> bool:
    """True for `owner` itself and its running (not zombie) children: the node's pool processes."""
    if pid == owner:
        return True
    with contextlib.suppress(OSError, ValueError, IndexError):
        # /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] not in ("Z", "X") and int(fields[1]) == owner
    return False
