"""Inside one run: the forked child walls itself in, then executes the program in-process.

The child is PID 1 of a fresh PID namespace, so when it exits the kernel kills every process the
program left behind (daemons included). Order matters: mounts need privileges, so they come
first; the uid/capability drop next; Landlock and seccomp after that; RLIMIT_AS last, because a
small address-space cap can make loading the seccomp filter fail.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from typing import Any

from sandbox import _landlock, _linux, _rootfs, _seccomp

RESULT_FD = 3  # the channel back to the fork server: one JSON object describing the outcome
SETUP_FAILED_EXIT = 120
STACK_BYTES = 8 << 20  # numpy's threads fail to start when the stack cap is as large as memory

# A run's whole environment: nothing of the worker's variables reaches it. The fork server is
# started with exactly this environment, so a run inherits it without paying to rebuild it.
RUN_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


FETCH_MAX_BYTES = 8 << 20  # the files a run's result brings back, in all


def child_main(
    plan: dict[str, Any], fds: tuple[int, int, int, int], code: bytes, args: bytes, files: bytes = b""
) -> None:
    """Entry point of a freshly forked run; never returns."""
    try:
        _enter(plan, fds)
        if plan.get("compile"):
            _compile(plan["compile"], code)
    except BaseException as error:
        _report({"setup_error": f"{type(error).__name__}: {error}"})
        os._exit(SETUP_FAILED_EXIT)
    _execute(plan, code, args, files)


def _enter(plan: dict[str, Any], fds: tuple[int, int, int, int]) -> None:
    # The parent is outside this PID namespace (getppid() is 0), so a server death in the
    # microseconds before this call cannot be detected here; RLIMIT_CPU still ends such a run.
    _linux.set_pdeathsig(signal.SIGKILL)
    os.setsid()
    _linux.unshare(_linux.CLONE_NEWNS | _linux.CLONE_NEWIPC)
    _mount_run_filesystems(plan)
    os.chdir("/tmp")
    for fd in plan.get("cgroup_fds", []):
        os.write(fd, b"0")
    for target, fd in enumerate(fds):
        if plan["uid"] is not None:
            os.fchown(fd, plan["uid"], plan["uid"])  # so the program may reopen /dev/stdin
        os.dup2(fd, target)
    if plan.get("compile"):
        os.set_inheritable(RESULT_FD, False)  # not the compiler's
    os.closerange(RESULT_FD + 1, plan["max_fd"])
    _drop_privileges(plan)
    _linux.set_pdeathsig(signal.SIGKILL)  # a credential change clears it
    _linux.set_no_new_privs()
    if plan["landlock_abi"]:
        # Built per run: a rule holds an inode, and each run's /tmp is a new tmpfs.
        ruleset = _landlock.ruleset(plan["landlock_abi"])
        _landlock.restrict_self(ruleset)
        os.close(ruleset)
    _set_limits(plan["limits"])
    if plan["seccomp_filter"] is not None:
        _seccomp.install(plan["seccomp_filter"])
    address_space = plan["address_space_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def _mount_run_filesystems(plan: dict[str, Any]) -> None:
    _linux.mount("proc", "/proc", "proc", _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC)
    if plan["user_namespace"]:
        _linux.umount2(_rootfs.HOST_PROC, _linux.MNT_DETACH)
    _linux.mount("tmpfs", "/tmp", "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, tmpfs_options(plan))


def tmpfs_options(plan: dict[str, Any]) -> str:
    """The mount options of a run's /tmp: its size cap, and its owner when runs have a uid."""
    options = f"size={plan['limits']['workdir_mb']}m,mode=0700,nr_inodes=4096"
    if plan["uid"] is not None:
        options += f",uid={plan['uid']},gid={plan['uid']}"
    return options


def _drop_privileges(plan: dict[str, Any]) -> None:
    uid = plan["uid"]
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:
        _linux.drop_capabilities()


def _set_limits(limits: dict[str, Any]) -> None:
    cpu = max(1, int(limits["cpu_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    file_size = limits["file_size_mb"] << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"], limits["open_files"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_STACK, (STACK_BYTES, STACK_BYTES))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))


def _compile(spec: dict[str, Any], source: bytes) -> None:
    """Compile `source` with the compiler's command line in `spec`, as a child of this run; report
    how the compiler ended, then the binary's bytes after the report's line. Never returns."""
    with open(spec["source_path"], "wb") as handle:
        handle.write(source)
    argv = spec["argv"]
    try:
        pid = os.posix_spawn(argv[0], argv, os.environ)
    except OSError as error:
        _report({"setup_error": f"cannot start the compiler {argv[0]}: {error.strerror}"})
        os._exit(SETUP_FAILED_EXIT)
    _, status = os.waitpid(pid, 0)
    binary = b""
    if status == 0:
        try:
            with open(spec["binary_path"], "rb") as handle:
                binary = handle.read()
        except OSError:
            pass
    report = {
        "compiler_exit": os.waitstatus_to_exitcode(status),
        "binary_bytes": len(binary),
    }
    try:
        os.write(RESULT_FD, json.dumps(report).encode() + b"\n")
        view = memoryview(binary)
        while view:
            view = view[os.write(RESULT_FD, view) :]
    except OSError:
        pass
    os._exit(0)


def _mark_started() -> None:
    """Tell the server the program's own code starts now: a setup error it reports after this
    line is not believed (see `_server._parse_outcome`)."""
    os.write(RESULT_FD, b'{"started": true}\n')


def _report(outcome: dict[str, Any]) -> None:
    try:
        os.write(RESULT_FD, b"\n" + json.dumps(outcome).encode())
    except OSError:
        pass


def _execute(plan: dict[str, Any], code: bytes, args: bytes, files: bytes = b"") -> None:
    """Compile and run the program as __main__, then report how it ended."""
    import builtins
    import types

    try:
        compiled = compile(code, "main.py", "exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as error:
        _print_exception(error, skip_frames=1)
        _report({"syntax_error": f"{type(error).__name__}: {error}"})
        _exit(1)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    main.__dict__["__file__"] = "/tmp/main.py"
    sys.modules["__main__"] = main
    sys.argv = ["main.py"]
    outcome: dict[str, Any] = {"completed": False}
    exit_code = 0
    try:
        if files:
            _write_files(json.loads(files))
        _mark_started()
        exec(compiled, main.__dict__)
        if plan.get("call"):
            outcome.update(_call(main.__dict__, plan["call"], args))
        outcome["completed"] = "value_error" not in outcome
    except SystemExit as error:
        exit_code = _exit_code(error)
    except BaseException as error:
        outcome["exception"] = type(error).__name__
        _print_exception(error, skip_frames=1)
        exit_code = 1
    _finish_threads()
    if plan.get("fetch"):
        outcome["files"] = _fetch_files(plan["fetch"])
    _report(outcome)
    _exit(exit_code)


def _write_files(files: dict[str, Any]) -> None:
    """The job's input files, into /tmp (the run's own tmpfs, within its limits), as the program."""
    import base64

    for path, content in files.items():
        target = os.path.join("/tmp", path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(base64.b64decode(content) if content else b"")


def _fetch_files(paths: list[str]) -> dict[str, str]:
    """The requested files that exist under /tmp once the program ended, base64, within a total cap."""
    import base64

    found: dict[str, str] = {}
    budget = FETCH_MAX_BYTES
    for path in paths:
        target = os.path.join("/tmp", path)
        try:
            if not os.path.isfile(target) or os.path.getsize(target) > budget:
                continue
            with open(target, "rb") as handle:
                content = handle.read(budget + 1)
        except OSError:
            continue
        budget -= len(content)
        found[path] = base64.b64encode(content).decode()
    return found


def _call(namespace: dict[str, Any], spec: dict[str, Any], args: bytes) -> dict[str, Any]:
    """Call the named function and serialise its value to JSON, inside the sandbox."""
    function = namespace.get(spec["func_name"])
    if not callable(function):
        return {"value_error": f"{spec['func_name']!r} is not defined as a function by the program"}
    call_args = json.loads(args) if args else {}
    value = function(*call_args.get("args", []), **call_args.get("kwargs", {}))
    try:
        text = json.dumps(value, default=_to_json)
    except (TypeError, ValueError) as error:
        return {"value_error": f"the value returned by {spec['func_name']} is not JSON-serialisable: {error}"}
    if len(text) > spec["max_value_bytes"]:
        return {"value_too_large": len(text)}
    return {"value": text}


def _to_json(value: Any) -> Any:
    """numpy arrays as nested lists and numpy scalars as numbers; anything else is refused."""
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return value.tolist()
    raise TypeError(f"object of type {type(value).__name__} is not JSON serializable")


def _exit_code(error: SystemExit) -> int:
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def install_stdio() -> None:
    """Standard streams on fds 0-2 as a program expects them; the server installs them once and
    every run inherits them already built, its pipes dup'ed onto those fds."""
    import io

    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]


def _print_exception(error: BaseException, skip_frames: int) -> None:
    import traceback

    tb = error.__traceback__
    for _ in range(skip_frames):
        tb = tb.tb_next if tb is not None else None
    try:
        traceback.print_exception(type(error), error, tb, file=sys.stderr)
    except BaseException:
        pass


def _finish_threads() -> None:
    """Join non-daemon threads and run atexit handlers, as the interpreter does at exit."""
    import atexit

    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException as error:
        _print_exception(error, skip_frames=0)


def _exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(code)
