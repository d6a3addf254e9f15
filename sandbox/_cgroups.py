"""Memory, pids and CPU-accounting cgroups for one slot's runs, where a writable hierarchy exists
(v1 or v2).

RLIMIT_AS caps each process, not a run: a program may fork `processes` children each using the
full cap. The slot's memory cgroup caps the whole run, its pids cgroup counts threads too, and the
kernel's OOM kills inside it tell a memory verdict apart from a crash. RLIMIT_CPU is per process
too: the CPU time the cgroup accounts is the whole run's, children included, so a program cannot
spread its work over processes to pass a CPU limit. The fork server keeps file descriptors on the
control files, so they still work after it pivots into its skeleton root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time

_SLACK_MB = 64  # the interpreter's own pages a run dirties on top of the program's memory


class SlotCgroups:
    """The cgroup(s) runs of one slot join; one limit write per change, not per run."""

    def __init__(
        self,
        version: int,
        memory_dir: str,
        pids_dir: str,
        cpu_dir: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        """`extra`: directories in other hierarchies runs join too (v1's cpu, for a CPU share)."""
        self.version = version
        accounting = "+cpu" if cpu_dir else ""
        self.description = f"v{version} memory+pids{accounting} ({memory_dir})"
        names = {1: ("memory.limit_in_bytes", "memory.oom_control"), 2: ("memory.max", "memory.events")}
        limit_name, events_name = names[version]
        self._memory_limit = os.open(f"{memory_dir}/{limit_name}", os.O_WRONLY | os.O_CLOEXEC)
        self._events = os.open(f"{memory_dir}/{events_name}", os.O_RDONLY | os.O_CLOEXEC)
        self._pids_limit = os.open(f"{pids_dir}/pids.max", os.O_WRONLY | os.O_CLOEXEC)
        dirs = {memory_dir, pids_dir, *([cpu_dir] if cpu_dir else []), *extra}
        self.dirs = sorted(dirs)
        self.procs_fds = [os.open(f"{d}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in sorted(dirs)]
        usage = {1: "cpuacct.usage", 2: "cpu.stat"}[version]
        self._cpu_usage = os.open(f"{cpu_dir}/{usage}", os.O_RDONLY | os.O_CLOEXEC) if cpu_dir else None
        if version == 2:
            _write_if_present(f"{memory_dir}/memory.swap.max", "0")
        # A native run's peak memory (its rusage is the server's), reset as such a run starts: v1's
        # max_usage_in_bytes, v2's memory.peak (resettable through its descriptor since Linux 6.12:
        # the reset here finds out). Both count what the slot's cgroup already holds (page cache of
        # earlier runs), read as the run starts and subtracted.
        peak_name, usage_name = {1: ("memory.max_usage_in_bytes", "memory.usage_in_bytes"),
                                 2: ("memory.peak", "memory.current")}[version]  # fmt: skip
        try:
            self._peak: int | None = os.open(f"{memory_dir}/{peak_name}", os.O_RDWR | os.O_CLOEXEC)
            self._usage = os.open(f"{memory_dir}/{usage_name}", os.O_RDONLY | os.O_CLOEXEC)
            os.pwrite(self._peak, b"0" if version == 1 else b"reset", 0)
        except OSError:
            self._peak = None
        self._usage_before = 0
        self._limits: tuple[int, int] | None = None
        self._oom_kills = 0
        self._cpu_before = 0

    def prepare(self, memory_mb: int, workdir_mb: int, processes: int, peak: bool = False) -> None:
        """Set the limits for the next run (tmpfs pages count as memory) and note the OOM count;
        `peak`: measure its peak memory too (`peak_mb`)."""
        limits = ((memory_mb + workdir_mb + _SLACK_MB) << 20, processes + 8)
        if limits != self._limits:
            os.pwrite(self._memory_limit, str(limits[0]).encode(), 0)
            os.pwrite(self._pids_limit, str(limits[1]).encode(), 0)
            self._limits = limits
        self._oom_kills = self._read_oom_kills()
        self._cpu_before = self._read_cpu_ns()
        if peak and self._peak is not None:
            os.pwrite(self._peak, b"0" if self.version == 1 else b"reset", 0)
            self._usage_before = int(os.pread(self._usage, 64, 0))

    def clear(self, timeout_s: float) -> int:
        """Kill whatever is still in these cgroups and wait until they are empty; how many were
        killed. For a slot's new fork server: its predecessor's runs die with it (their
        parent-death signal), but not at once, and a compile still running there would share the
        slot's limits, its OOM count and its CPU time with the new server's runs, or refuse them
        a memory limit below its own usage (EBUSY). Raises OSError when some outlive `timeout_s`."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while members := self.members():
            if time.monotonic() > deadline:
                raise OSError(errno.EBUSY, f"{len(members)} earlier processes would not end", self.dirs[0])
            pidfds = {}
            for pid in members - killed:
                with contextlib.suppress(ProcessLookupError):
                    pidfds[pid] = os.pidfd_open(pid)
            still = self.members()  # a pidfd taken while its pid is still here is that process's
            for pid, fd in pidfds.items():
                if pid in still:
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                    killed.add(pid)
                os.close(fd)
            time.sleep(0.01)
        return len(killed)

    def members(self) -> set[int]:
        """The processes in these cgroups now."""
        found: set[int] = set()
        for path in self.dirs:
            with open(f"{path}/cgroup.procs") as procs:
                found.update(int(line) for line in procs if line.strip())
        return found

    def joined(self) -> None:
        """Close the `cgroup.procs` descriptors once the process that had to join has (a session's
        cgroups keep no others: its manager holds thousands)."""
        for fd in self.procs_fds:
            os.close(fd)
        self.procs_fds = []

    def remove(self) -> None:
        """Close the control files and remove the cgroups (once their processes are gone; a cgroup
        still busy is left, and removed with its parent's next clean-up)."""
        fds = [self._memory_limit, self._events, self._pids_limit, *self.procs_fds]
        fds += [fd for fd in (self._cpu_usage, self._peak) if fd is not None]
        if self._peak is not None:
            fds.append(self._usage)
        for fd in fds:
            os.close(fd)
        for path in self.dirs:
            try:
                os.rmdir(path)
            except OSError:
                pass

    def peak_mb(self) -> float | None:
        """The most memory the run added to the slot's cgroup at once since `prepare(peak=True)`, in
        MB (its pages, its /tmp files, the kernel's pages for it); None where it cannot be reset."""
        if self._peak is None:
            return None
        return max(0, int(os.pread(self._peak, 64, 0)) - self._usage_before) / (1 << 20)

    def cpu_s(self) -> float | None:
        """CPU seconds the slot's processes used since `prepare` (None: not accounted here)."""
        if self._cpu_usage is None:
            return None
        return (self._read_cpu_ns() - self._cpu_before) / 1e9

    def _read_cpu_ns(self) -> int:
        if self._cpu_usage is None:
            return 0
        text = os.pread(self._cpu_usage, 4096, 0).decode()
        if self.version == 1:
            return int(text)
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
        return 0

    def oom_killed(self) -> bool:
        """Whether the kernel OOM-killed a process of the slot since `prepare`."""
        return self._read_oom_kills() > self._oom_kills

    def _read_oom_kills(self) -> int:
        text = os.pread(self._events, 4096, 0).decode()
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0


def create(name: str, cpu: bool = False) -> tuple[SlotCgroups | None, str]:
    """The slot's cgroups, or None and the reason they are off; `cpu`: in v1's cpu hierarchy too
    (where `share_cpu` caps a parent's CPU time)."""
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    try:
        if "memory" in mounts and "pids" in mounts:
            memory_dir = _make(mounts["memory"] + own.get("memory", "/"), name)
            pids_dir = _make(mounts["pids"] + own.get("pids", "/"), name)
            cpu_dir = (
                _make(mounts["cpuacct"] + own.get("cpuacct", "/"), name) if "cpuacct" in mounts else None
            )
            extra = (_make(mounts["cpu"] + own.get("cpu", "/"), name),) if cpu and "cpu" in mounts else ()
            return SlotCgroups(1, memory_dir, pids_dir, cpu_dir, extra), ""
        if "unified" in mounts:
            return _create_v2(mounts["unified"], name), ""
    except OSError as error:
        return None, f"no writable hierarchy ({error.strerror}: {error.filename})"
    return None, "no memory and pids controllers mounted"


def share_cpu(name: str, cores: float) -> str:
    """Cap the CPU time of cgroup `name` (made with `create(..., cpu=True)`'s parent path) and its
    children at `cores` cores' worth; how, or why not."""
    mounts = _cgroup_mounts()
    period_us = 100_000
    quota_us = max(1000, int(cores * period_us))
    try:
        if "cpu" in mounts and "memory" in mounts:
            path = _make(mounts["cpu"] + _own_cgroups().get("cpu", "/"), name)
            _write(f"{path}/cpu.cfs_period_us", str(period_us))
            _write(f"{path}/cpu.cfs_quota_us", str(quota_us))
            return f"on ({cores:g} cores, v1 cpu quota)"
        if "unified" in mounts:
            root = mounts["unified"]
            _write(f"{root}/cgroup.subtree_control", "+cpu")
            parent = _make(root, "evalfarm")
            _write(f"{parent}/cgroup.subtree_control", "+cpu")
            path = _make(parent, name)
            _write(f"{path}/cgroup.subtree_control", "+memory +pids +cpu")
            _write(f"{path}/cpu.max", f"{quota_us} {period_us}")
            return f"on ({cores:g} cores, cpu.max)"
    except OSError as error:
        return f"off ({error.strerror}: {error.filename})"
    return "off (no cpu controller)"


def _create_v2(root: str, name: str) -> SlotCgroups:
    """Under an `evalfarm` cgroup at the root: the root is exempt from the no-internal-processes rule."""
    with open(f"{root}/cgroup.controllers") as handle:
        controllers = handle.read().split()
    if not {"memory", "pids"} <= set(controllers):
        raise OSError(0, "memory and pids controllers not available", root)
    _write(f"{root}/cgroup.subtree_control", "+memory +pids")
    parent = _make(root, "evalfarm")
    _write(f"{parent}/cgroup.subtree_control", "+memory +pids")
    *intermediate, leaf = name.split("/")
    for part in intermediate:  # a nested name: each level hands the controllers down
        parent = _make(parent, part)
        _write(f"{parent}/cgroup.subtree_control", "+memory +pids")
    slot = _make(parent, leaf)
    return SlotCgroups(2, slot, slot, slot)  # cpu.stat's usage is there without the cpu controller


def _cgroup_mounts() -> dict[str, str]:
    """controller -> mount point (v1), and "unified" -> the v2 mount point."""
    found: dict[str, str] = {}
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            _, mount_point, fstype, options = line.split()[:4]
            if fstype == "cgroup2":
                found.setdefault("unified", mount_point)
            elif fstype == "cgroup":
                for option in options.split(","):
                    if option in ("memory", "pids", "cpuacct", "cpu"):
                        found[option] = mount_point
    return found


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path in that v1 hierarchy."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as cgroups:
        for line in cgroups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path.rstrip("/")
    return own


def _make(parent: str, name: str) -> str:
    path = f"{parent}/{name}"
    os.makedirs(path, exist_ok=True)
    return path


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _write_if_present(path: str, text: str) -> None:
    if os.path.exists(path):
        _write(path, text)
