"""The sandbox's behaviour on ordinary programs: I/O, exit statuses, costs, isolation between runs."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from evalfarm.sandbox import CallSpec, Limits, Sandbox, SandboxConfig, Status
from evalfarm.sandbox.bridge import parse_reply

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(slot=910) as sandbox:
        yield sandbox


@pytest.mark.check  # each layer reported on was checked by the slot's start-up probe
def test_every_layer_is_reported_on(sandbox: Sandbox) -> None:
    assert set(sandbox.layers) >= {
        "user",
        "namespaces",
        "filesystem",
        "seccomp",
        "landlock",
        "rlimits",
        "cgroups",
    }
    required = {name: state for name, state in sandbox.layers.items() if name != "cgroups"}
    assert all(state.startswith("on") for state in required.values()), sandbox.layers
    assert "seccomp on" in sandbox.status_line


def test_the_start_up_probe_fails_closed_on_a_layer_that_does_not_hold() -> None:
    from evalfarm.sandbox._probe import failed_layers

    layers = {"network": "on", "landlock": "off (not supported by this kernel)"}
    checks = b'{"network": false, "landlock": false, "seccomp": true}'
    assert failed_layers(layers, checks) == ["network"]  # landlock is reported off: not a failure
    assert failed_layers(layers, b"") == ["probe"]


def test_stdin_reaches_the_program_and_stdout_comes_back(sandbox: Sandbox) -> None:
    result = sandbox.run("import sys\nprint(sum(map(int, sys.stdin.read().split())))", "1 2 3\n4")
    assert (result.status, result.stdout, result.exit_code) == (Status.OK, b"10\n", 0)


def test_large_stdin_is_fed_while_output_is_drained(sandbox: Sandbox) -> None:
    data = "7\n" * 500_000  # far beyond a pipe buffer, echoed back as it is read
    result = sandbox.run("import sys\nfor line in sys.stdin: sys.stdout.write(line)", data)
    assert result.status is Status.OK and result.stdout == data.encode()


def test_nonzero_exit_and_exception_are_runtime_errors(sandbox: Sandbox) -> None:
    assert sandbox.run("raise SystemExit(3)").exit_code == 3
    failed = sandbox.run("1 / 0")
    assert failed.status is Status.RUNTIME_ERROR and b"ZeroDivisionError" in failed.stderr
    assert "main.py" in failed.stderr.decode() and "_runner" not in failed.stderr.decode()


def test_signal_death_is_a_runtime_error(sandbox: Sandbox) -> None:
    result = sandbox.run("import ctypes\nctypes.string_at(0)")
    assert result.status is Status.RUNTIME_ERROR and result.signal == 11


@pytest.mark.parametrize(
    "exit_code", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise SystemExit"]
)
def test_an_early_exit_with_status_zero_is_an_exit_with_status_zero(sandbox: Sandbox, exit_code: str) -> None:
    # A program's own exit: judged by its exit status and its output, as a judge does.
    result = sandbox.run(exit_code + "\nprint('never')")
    assert (result.status, result.exit_code, result.stdout) == (Status.OK, 0, b"")


def test_a_program_has_no_channel_to_report_on(sandbox: Sandbox) -> None:
    # The report is closed before the program's first line: no descriptor of the sandbox's is left.
    code = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"
    assert sandbox.run(code).stdout == b"[0, 1, 2, 3]\n"  # 3: the directory listdir opened


def test_a_program_cannot_pass_its_failure_off_as_the_farms(sandbox: Sandbox) -> None:
    # Whatever it writes wherever it can, and however it exits, its exit is its own.
    forged = 'open("/tmp/r", "w").write(\'{"setup_error": "forged"}\\n\')\nimport os\nos._exit(120)'
    result = sandbox.run(forged)
    assert (result.status, result.error) == (Status.RUNTIME_ERROR, "exit code 120")


def test_syntax_error_is_detected_before_running(sandbox: Sandbox) -> None:
    result = sandbox.run("print('ran')\ndef broken(:\n")
    assert result.status is Status.SYNTAX_ERROR and b"ran" not in result.stdout


def test_cpu_limit_is_a_timeout(sandbox: Sandbox) -> None:
    result = sandbox.run("while True: pass", limits=Limits(cpu_s=1, wall_s=10))
    # Ended by the CPU limit (about 1 s of CPU), long before the 10 s wall limit.
    assert result.status is Status.TIMEOUT and "CPU limit" in result.error and 0.9 < result.cpu_s < 3


def test_memory_error_under_the_cap_is_a_memory_limit(sandbox: Sandbox) -> None:
    result = sandbox.run("x = bytearray(300 << 20)", limits=Limits(memory_mb=100))
    assert result.status is Status.MEMORY_LIMIT
    assert (
        sandbox.run("x = bytearray(50 << 20); print(len(x))", limits=Limits(memory_mb=100)).status
        is Status.OK
    )


def test_memory_of_a_whole_run_is_capped_when_cgroups_are_on(sandbox: Sandbox) -> None:
    if not sandbox.layers["cgroups"].startswith("on"):
        pytest.skip(f"cgroups {sandbox.layers['cgroups']}")
    code = (  # three children of 150 MB each: every process is under the cap, the run is not
        "import os, time\n"
        "def child():\n"
        "    x = bytearray(150 << 20)\n"
        "    for i in range(0, len(x), 4096): x[i] = 1\n"
        "    time.sleep(0.5)\n"
        "    os._exit(0)\n"
        "children = []\n"
        "for _ in range(3):\n"
        "    pid = os.fork()\n"
        "    if pid == 0: child()\n"
        "    children.append(pid)\n"
        "for pid in children: assert os.waitpid(pid, 0)[1] == 0\n"
    )
    result = sandbox.run(code, limits=Limits(memory_mb=300))
    assert result.status is Status.MEMORY_LIMIT, (result.error, result.stderr[-300:])
    assert sandbox.run(code, limits=Limits(memory_mb=1000)).status is Status.OK


def test_costs_are_reported(sandbox: Sandbox) -> None:
    result = sandbox.run("x = bytearray(64 << 20)\nsum(range(3_000_000))")
    assert result.cpu_s > 0.01 and result.wall_s >= result.cpu_s * 0.5
    assert result.max_rss_mb > 64


def test_numpy_is_preloaded_and_single_threaded(sandbox: Sandbox) -> None:
    code = (
        "import sys, os\n"
        "print('numpy' in sys.modules, os.environ['OPENBLAS_NUM_THREADS'])\n"
        "import numpy\n"
        "print(numpy.ones(3).sum())"
    )
    assert sandbox.run(code).stdout == b"True 1\n3.0\n"


def test_programs_not_naming_numpy_run_on_a_server_without_it() -> None:
    with Sandbox(slot=903) as sandbox:
        assert len(sandbox.server_processes) == 1
        assert sandbox.run("import sys\nprint('nu' + 'mpy' in sys.modules)").stdout == b"False\n"
        assert len(sandbox.server_processes) == 1  # the extended server starts only when needed
        # Imported without being named, numpy still works there: the run pays for the import.
        code = "import importlib\nm = importlib.import_module('nu' + 'mpy')\nprint(m.arange(4).sum())"
        result = sandbox.run(code)
        assert (result.status, result.stdout) == (Status.OK, b"6\n"), result.stderr[-500:]
        assert len(sandbox.server_processes) == 1
        assert sandbox.run("import numpy, sys\nprint(numpy.ones(2).sum())").stdout == b"2.0\n"
        assert len(sandbox.server_processes) == 2


def test_environment_is_the_allow_list(sandbox: Sandbox) -> None:
    result = sandbox.run("import os, json\nprint(json.dumps(dict(os.environ)))")
    assert set(json.loads(result.stdout)) == {
        "PATH", "HOME", "TMPDIR", "LANG", "PYTHONHASHSEED", "PYTHONIOENCODING",
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    }  # fmt: skip


def test_working_directory_is_private_and_removed_after_the_run(sandbox: Sandbox) -> None:
    first = sandbox.run("import os\nopen('left.txt', 'w').write('x')\nprint(os.getcwd(), os.listdir('.'))")
    assert first.stdout == b"/tmp ['left.txt']\n"
    assert sandbox.run("import os\nprint(os.listdir('/tmp'))").stdout == b"[]\n"


def test_workdir_size_is_capped(sandbox: Sandbox) -> None:
    code = "open('/tmp/big', 'wb').write(b'0' * (20 << 20))"
    assert sandbox.run(code, limits=Limits(workdir_mb=8, file_size_mb=64)).status is Status.RUNTIME_ERROR
    assert sandbox.run(code, limits=Limits(workdir_mb=32, file_size_mb=64)).status is Status.OK
    assert sandbox.run(code, limits=Limits(workdir_mb=32, file_size_mb=8)).status is Status.RUNTIME_ERROR


def test_ipc_objects_do_not_outlive_a_run(sandbox: Sandbox) -> None:
    create = "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget(0x5EC2E7, 4096, 0o1666) >= 0)"
    look = "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget(0x5EC2E7, 4096, 0o666))"
    assert sandbox.run(create).stdout == b"True\n"
    assert sandbox.run(look).stdout == b"-1\n"


def test_runs_get_the_same_hash_seed(sandbox: Sandbox) -> None:
    code = "print(list({'apple', 'pear', 'fig', 'kiwi', 'plum'}))"
    assert sandbox.run(code).stdout == sandbox.run(code).stdout


def test_call_returns_json(sandbox: Sandbox) -> None:
    code = (
        "import numpy as np\n"
        "def make(n, scale=1):\n"
        "    return {'a': np.arange(n) * scale, 't': (1, 2), 's': np.float32(0.5)}"
    )
    result = sandbox.run(code, call=CallSpec("make", [3], {"scale": 2}))
    assert result.status is Status.OK
    reply = parse_reply(result.reply, json_compatible=True)
    assert reply.value == {"a": [0, 2, 4], "t": [1, 2], "s": 0.5}


def test_call_of_unserialisable_value_says_so(sandbox: Sandbox) -> None:
    result = sandbox.run("def f():\n    return object()", call=CallSpec("f"))
    reply = parse_reply(result.reply)
    assert not reply.returned and "type object is not a plain value" in (reply.error or "")


def test_call_value_over_the_cap_is_an_output_limit(sandbox: Sandbox) -> None:
    result = sandbox.run("def f():\n    return 'x' * 5000", call=CallSpec("f", max_value_bytes=1000))
    assert result.status is Status.OUTPUT_LIMIT


@pytest.mark.parametrize("through_symlink", [False, True])
def test_packages_installed_below_tmp_stay_importable(
    monkeypatch: pytest.MonkeyPatch, through_symlink: bool
) -> None:
    # Every run mounts its own /tmp, so a virtualenv there (a checkout in /tmp, say) is bound
    # elsewhere, and the servers' import paths, preloaded packages' included, follow it.
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    site = base / ("real-site" if through_symlink else "site-packages")
    package = site / "tmp_site_probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 41\n")
    (package / "later.py").write_text("VALUE = 1\n")
    if through_symlink:
        (base / "site-packages").symlink_to(site)
    monkeypatch.syspath_prepend(str(base / "site-packages"))
    config = SandboxConfig(preload=(*SandboxConfig().preload, "tmp_site_probe"))
    try:
        with Sandbox(slot=904, config=config) as sandbox:
            code = "import tmp_site_probe as top, tmp_site_probe.later\nprint(top.VALUE + top.later.VALUE)"
            result = sandbox.run(code)
            assert (result.status, result.stdout) == (Status.OK, b"42\n"), result.stderr[-500:]
            assert sandbox.run("import os\nprint(os.listdir('/tmp'))").stdout == b"[]\n"
    finally:
        shutil.rmtree(base)


def test_a_slot_starts_whatever_descriptor_number_its_channel_gets() -> None:
    # The server moves its channel to a fixed descriptor; the client's end may already be that one.
    # A slot opens a few descriptors of its own first (a uid lock as root), so try several offsets.
    from evalfarm.sandbox._server import CONTROL_FD

    for free_below in (1, 2, 3, 4):
        spare = []
        try:
            while (fd := os.open("/dev/null", os.O_RDONLY)) < CONTROL_FD - free_below:
                spare.append(fd)
            os.close(fd)  # from here up, the descriptors are free
            with Sandbox(slot=934) as sandbox:
                assert sandbox.run("print(1)").stdout == b"1\n"
        finally:
            for fd in spare:
                os.close(fd)


def _memory_of(pid: int) -> bytes:
    """Every readable byte of another process's memory (as root)."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            bounds, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in bounds.split("-"))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, ValueError, OverflowError):
                continue
    return b"".join(chunks)


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root")
def test_the_fork_server_never_holds_a_byte_of_a_job(sandbox: Sandbox) -> None:
    # Every run is forked from the server: what it held, the next run would find in its own memory.
    marker = "-".join(["EVALFARM", "MARKER", os.urandom(8).hex()])
    code = f"# {marker}\nimport sys\nprint(sys.stdin.read() + '{marker}')\ndef f(x):\n    return x\n"
    files = {"input.txt": base64.b64encode(marker.encode()).decode()}
    assert sandbox.run(code, stdin=marker, files=files, fetch=["input.txt"]).status is Status.OK
    assert sandbox.run(code, stdin=marker, call=CallSpec("f", [marker])).status is Status.OK
    assert sandbox.run(f"int main() {{ return 0; }} // {marker}", language="cpp").status is Status.OK
    assert sandbox.server_pid is not None
    assert marker.encode() not in _memory_of(sandbox.server_pid)
