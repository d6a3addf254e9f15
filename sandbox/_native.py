"""Native runs: a compiled binary started through the launcher (`_launcher.c`) under the walls a
Python run has.

The worker builds the launcher once per machine (`build`, with the host's C compiler, cached by a
hash of its source); each fork server binds it into its skeleton at LAUNCHER and starts it with
posix_spawn for every test (`spawn`), with the run's limits, Landlock rights and seccomp filter on
its command line: the policy stays here and in the modules it comes from.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from evalfarm.sandbox import _child, _landlock, _rootfs

LAUNCHER = "/.evalfarm-launcher"  # where a fork server's skeleton has it
LAUNCHER_SOURCE = Path(__file__).with_name("_launcher.c")
# No C library and no start-up code (see _launcher.c); warnings are errors, so a compiler that
# reads the source differently fails the build rather than producing a launcher that misbehaves.
_BUILD_FLAGS = (
    "-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-pie", "-no-pie",
    "-Wall", "-Wextra", "-Werror",
)  # fmt: skip
BINARY_FD = 4  # the binary (or the runtime), as the launcher expects it
FIRST_CGROUP_FD = 5
STAGE_FD = 9  # a runtime's program, copied into the run's /tmp by the launcher
# Beyond a native run's memory limit in its address-space cap: a static binary's own text and data,
# the stack's guard gap and the vDSO, so that a program may use the whole of its memory limit.
SLACK_BYTES = 16 << 20


class LauncherUnavailable(Exception):
    """The launcher could not be built: no C compiler, or it failed."""


def build(cache_dir: str) -> str:
    """The launcher's path, compiled into `cache_dir` the first time; raises LauncherUnavailable."""
    import shutil
    import subprocess

    compiler = shutil.which("cc", path=_child.RUN_ENVIRONMENT["PATH"]) or shutil.which(
        "gcc", path=_child.RUN_ENVIRONMENT["PATH"]
    )
    if compiler is None:
        raise LauncherUnavailable("no C compiler (cc) to build the native-run launcher")
    source = LAUNCHER_SOURCE.read_bytes()
    identity = "\0".join([os.path.realpath(compiler), *_BUILD_FLAGS]).encode() + b"\0" + source
    name = f"launcher-{hashlib.sha256(identity).hexdigest()[:16]}"
    target = Path(cache_dir) / name
    if target.is_file():
        return str(target)
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:  # no writable cache (a user without a home): this process's own directory
        import tempfile

        target = Path(tempfile.mkdtemp(prefix="evalfarm-launcher-")) / name
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [compiler, *_BUILD_FLAGS, "-o", str(partial), str(LAUNCHER_SOURCE)]
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        os.replace(partial, target)  # whole or not at all, when slots build it at once
    except (OSError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        raise LauncherUnavailable(
            f"building the native-run launcher failed: {error} {detail[-500:]!r}"
        ) from error
    return str(target)


def default_cache_dir() -> str:
    """Where this user's built launcher is kept: under /run as root, else the user's cache dir."""
    if os.geteuid() == 0:
        return "/run/evalfarm/cache"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "evalfarm")


def launcher_argv(
    limits: dict[str, Any],
    uid: int | None,
    landlock_abi: int,
    seccomp_filter: bytes,
    cgroup_fds: int,
    language: dict[str, Any] | None = None,
) -> list[str]:
    """The launcher's `name=value` arguments for one run; `language`: the native request's
    `memory` (`address_space` or `cgroup`), `threads` and `stage` (see sandbox.languages)."""
    rules = _landlock.policy(landlock_abi) if landlock_abi else None
    memory = limits["memory_mb"] << 20
    language = language or {}
    by_cgroup = language.get("memory") == "cgroup"
    values: dict[str, Any] = {
        "uid": -1 if uid is None else uid,
        "host_proc": _rootfs.HOST_PROC if uid is None else "",
        "tmpfs": _child.tmpfs_options({"limits": limits, "uid": uid}),
        "cgroup_fds": cgroup_fds,
        "cpu_s": max(1, int(limits["cpu_s"] + 0.999)),
        "file_size_bytes": limits["file_size_mb"] << 20,
        "open_files": limits["open_files"],
        "processes": limits["processes"] + (language.get("threads") or 0),
        # No stack limit, as judges allow: deep recursion is common in contest solutions, and the
        # main stack may grow until the memory cap. (A finite limit would also size every thread's
        # stack: glibc gives each new thread RLIMIT_STACK, so a second thread would find no
        # address space left; unlimited, a thread gets glibc's default.)
        "stack_bytes": -1,
        # Where the slot's cgroup caps the run, it alone caps memory: what the program touches, as
        # judges count it (a C program whose malloc failed under an address-space cap would crash
        # as a runtime error), and runtimes that reserve address space beyond what they use start.
        # Without a cgroup, RLIMIT_AS is the cap (and runtimes that need a cgroup are not offered).
        "address_space_bytes": -1 if by_cgroup or cgroup_fds else memory + SLACK_BYTES,
        "stage": language.get("stage") or "",
        "landlock_attr_bytes": rules.attr_bytes if rules else 0,
        "landlock_fs": rules.handled_fs if rules else 0,
        "landlock_net": rules.handled_net if rules else 0,
        "landlock_scoped": rules.scoped if rules else 0,
        "landlock_file_rights": rules.file_rights if rules else 0,
        "landlock_dirs": ":".join(_landlock.WRITABLE_DIRS),
        "landlock_files": ":".join(_landlock.WRITABLE_FILES),
        "seccomp": seccomp_filter.hex(),
    }
    return [f"{name}={value}" for name, value in values.items()]


def spawn(
    arguments: list[str],
    argv: list[str],
    environment: dict[str, str],
    run_fds: tuple[int, ...],
    binary_fd: int,
    cgroup_fds: list[int],
    attached: tuple[int, ...] = (),
    stage_fd: int | None = None,
    links: tuple[str, ...] = (),
) -> int:
    """Start the launcher (as the first process of the PID namespace the caller unshared), its
    descriptors in place; its pid. `links`: names in the run's /tmp of the first attachments (a
    program's files, `sandbox._server_run.Run.native`).

    Every descriptor is first copied above all the others, then into place, so that no move
    overwrites one still to be moved.
    """
    if FIRST_CGROUP_FD + len(cgroup_fds) > STAGE_FD:
        raise ValueError(f"{len(cgroup_fds)} cgroup files: more than the launcher has room for")
    staged = [stage_fd] if stage_fd is not None else []
    sources = [*run_fds, binary_fd, *cgroup_fds, *attached, *staged]
    targets = [
        0,
        1,
        2,
        _child.RESULT_FD,
        BINARY_FD,
        *range(FIRST_CGROUP_FD, FIRST_CGROUP_FD + len(cgroup_fds)),
        *range(_child.ATTACHED_FD, _child.ATTACHED_FD + len(attached)),
        *([STAGE_FD] if staged else []),
    ]
    staging = max(*sources, *targets) + 1
    actions = [(os.POSIX_SPAWN_DUP2, fd, staging + i) for i, fd in enumerate(sources)]
    actions += [(os.POSIX_SPAWN_DUP2, staging + i, target) for i, target in enumerate(targets)]
    named = [*arguments, f"attached={len(attached)}", f"links={':'.join(links)}"]
    return os.posix_spawn(LAUNCHER, [LAUNCHER, *named, "--", *argv], environment, file_actions=actions)
