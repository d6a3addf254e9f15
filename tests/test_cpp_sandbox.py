"""C++ in the sandbox: compiled once per slot, every run from the same binary, the statuses of the
contract, and faults of the farm under a native run handled as under a Python one."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from evalfarm.sandbox import Limits, Sandbox, SandboxConfig, Status, _native, languages

pytestmark = pytest.mark.sandbox

ADD = """
#include <iostream>
int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(slot=910) as box:
        yield box


def test_a_program_compiles_once_and_every_run_uses_the_binary(sandbox: Sandbox) -> None:
    source = ADD + "// compiles once\n"
    runs = [sandbox.run(source, f"{i} {i}\n", language="cpp") for i in range(5)]
    assert [(r.status, r.stdout) for r in runs] == [(Status.OK, f"{2 * i}\n".encode()) for i in range(5)]
    assert [r.compile["cached"] for r in runs if r.compile] == [False, True, True, True, True]
    assert runs[0].compile is not None and runs[0].compile["status"] == "ok" and runs[0].compile["wall_s"] > 0
    assert all(r.exit_code == 0 for r in runs)


def test_a_compile_error_is_a_syntax_error_with_the_compilers_message(sandbox: Sandbox) -> None:
    result = sandbox.run("int main() { return undeclared; }", language="cpp")
    assert result.status is Status.SYNTAX_ERROR
    assert result.error is not None and result.error.startswith("compile error: ")
    assert "undeclared" in result.error and b"error:" in result.stderr
    assert result.compile == {"status": "syntax_error", "cached": False, "wall_s": result.compile["wall_s"]}


def test_a_compile_past_its_limits_is_a_timeout_or_memory_limit_of_the_compile(sandbox: Sandbox) -> None:
    slow = sandbox.run(
        "#include <bits/stdc++.h>\nint main() {}\n", language="cpp", limits=Limits(compile_wall_s=0.2)
    )
    assert slow.status is Status.TIMEOUT and "compile" in (slow.error or "")
    assert slow.compile is not None and slow.compile["status"] == "timeout"
    hungry = sandbox.run(
        '#include "/dev/zero"\nint main() {}\n', language="cpp", limits=Limits(compile_memory_mb=128)
    )
    assert hungry.status is Status.MEMORY_LIMIT and "compile" in (hungry.error or "")


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ("int main() { return 3; }", Status.RUNTIME_ERROR, "exit code 3"),
        ("int main() { volatile int* p = nullptr; return *p; }", Status.RUNTIME_ERROR, "SIGSEGV"),
        ("#include <cassert>\nint main() { assert(1 == 2); }", Status.RUNTIME_ERROR, "aborted"),
        (
            "#include <vector>\nint main() { std::vector<char> v(1L << 40); }",
            Status.MEMORY_LIMIT,
            "bad_alloc",
        ),
        ("int main() { for (volatile long i = 0;; i++) {} }", Status.TIMEOUT, "CPU limit"),
        ('#include <cstdio>\nint main() { for (;;) std::puts("xxxxxxxx"); }', Status.OUTPUT_LIMIT, "output"),
    ],
    ids=["exit-code", "segfault", "assert", "bad-alloc", "spin", "flood"],
)
def test_run_time_failures_have_the_contracts_statuses(
    sandbox: Sandbox, body: str, status: Status, error: str
) -> None:
    result = sandbox.run(body, language="cpp", limits=Limits(wall_s=3, cpu_s=1, memory_mb=256))
    assert result.status is status, result.error
    assert error in (result.error or "")


def test_deep_recursion_has_a_stack_as_large_as_the_memory_limit(sandbox: Sandbox) -> None:
    # A million nested calls, as a contest DFS makes: far past the 8 MiB a default stack allows.
    deep = """
    #include <cstdio>
    int depth(int n) { volatile char pad[64]; pad[0] = 1; return n == 0 ? pad[0] : depth(n - 1) + pad[0]; }
    int main() { std::printf("%d\\n", depth(1000000)); }
    """
    result = sandbox.run(deep, language="cpp", limits=Limits(memory_mb=512))
    assert (result.status, result.stdout) == (Status.OK, b"1000001\n"), result.error


def test_each_run_has_a_fresh_working_directory(sandbox: Sandbox) -> None:
    program = """
    #include <cstdio>
    int main() {
        bool seen = std::fopen("/tmp/mark", "r") != nullptr;
        std::FILE* f = std::fopen("/tmp/mark", "w");
        std::fputs("x", f);
        std::fclose(f);
        std::puts(seen ? "seen" : "fresh");
    }
    """
    assert [sandbox.run(program, language="cpp").stdout for _ in range(3)] == [b"fresh\n"] * 3


def test_a_run_cannot_change_the_binary_the_next_runs_execute(sandbox: Sandbox) -> None:
    program = """
    #include <cstdio>
    #include <fcntl.h>
    #include <initializer_list>
    #include <unistd.h>
    int main() {
        for (const char* path : {"/proc/self/exe", "/proc/1/exe"}) {
            int fd = open(path, O_RDWR);
            if (fd >= 0 && write(fd, "\\0\\0\\0\\0", 4) == 4) std::puts("WROTE");
        }
        for (int fd = 3; fd < 64; fd++) {
            if (write(fd, "\\0\\0\\0\\0", 4) == 4) std::puts("WROTE fd");
            ftruncate(fd, 0);
        }
        std::puts("intact");
    }
    """
    runs = [sandbox.run(program, language="cpp") for _ in range(3)]
    assert [r.stdout for r in runs] == [b"intact\n"] * 3, [r.error for r in runs]


def test_the_binary_cache_is_bounded_least_recently_used_first() -> None:
    config = SandboxConfig(binary_cache_entries=2)
    sources = [ADD + f"// program {i}\n" for i in range(3)]
    with Sandbox(slot=911, config=config) as small:
        cached = [small.run(s, "1 1\n", language="cpp").compile["cached"] for s in sources]  # type: ignore[index]
        again = small.run(sources[2], "1 1\n", language="cpp").compile  # the most recent: still held
        first = small.run(sources[0], "1 1\n", language="cpp").compile  # evicted by the third
    assert cached == [False, False, False]
    assert again is not None and again["cached"] is True
    assert first is not None and first["cached"] is False


def test_a_run_killed_from_outside_is_retried_and_a_lost_server_recompiles(sandbox: Sandbox) -> None:
    source = '#include <unistd.h>\n#include <cstdio>\nint main() { usleep(1500000); std::puts("done"); }\n'
    assert sandbox.run(source, language="cpp").stdout == b"done\n"  # compiled and held
    assert sandbox.server_pid is not None
    server = sandbox.server_pid
    killed: list[int] = []

    def kill_the_run() -> None:  # as the host's OOM killer would, once: the retry must succeed
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not killed:
            for pid in _children(server):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    sandbox.take_restarts()
    thread = threading.Thread(target=kill_the_run)
    thread.start()
    result = sandbox.run(source, language="cpp")
    thread.join()
    assert killed and (result.status, result.stdout) == (Status.OK, b"done\n"), result.error
    assert sandbox.take_restarts() == {"run_killed_outside": 1}
    os.kill(server, signal.SIGKILL)  # the server, and the binaries it held, are gone
    after = sandbox.run(source, language="cpp")
    assert (after.status, after.stdout) == (Status.OK, b"done\n")
    assert after.compile is not None and after.compile["cached"] is False


def test_no_compiler_is_the_farms_failure_not_the_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dataclasses.replace(languages.CPP, compile=(("no-such-compiler-g++", "{source}"),))
    monkeypatch.setitem(languages.LANGUAGES, "cpp", missing)
    with Sandbox(slot=912) as box:
        result = box.run(ADD, "1 2\n", language="cpp")
    assert result.status is Status.INFRA_ERROR and "no-such-compiler-g++" in (result.error or "")


def test_without_a_launcher_native_runs_are_the_farms_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    def unavailable(cache_dir: str) -> str:
        raise _native.LauncherUnavailable("no C compiler (cc) to build the native-run launcher")

    monkeypatch.setattr(_native, "build", unavailable)
    with Sandbox(slot=913, config=SandboxConfig(cache_dir=str(tmp_path))) as box:
        assert box.layers["native"].startswith("off (no C compiler")
        result = box.run(ADD, "1 2\n", language="cpp")
        python = box.run("print(1 + 2)")
    assert result.status is Status.INFRA_ERROR and "native runs are off" in (result.error or "")
    assert (python.status, python.stdout) == (Status.OK, b"3\n")


def test_the_launcher_is_built_once_per_cache_directory(tmp_path) -> None:
    first = _native.build(str(tmp_path))
    modified = os.stat(first).st_mtime_ns
    assert _native.build(str(tmp_path)) == first and os.stat(first).st_mtime_ns == modified
    assert os.access(first, os.X_OK) and os.stat(first).st_size < 64 << 10  # no C library in it


def _children(pid: int) -> list[int]:
    """The direct children of `pid` (a fork server's: its runs)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


ECHO_INTERACTOR = r"""
#include "testlib.h"
int main(int argc, char* argv[]) {
    registerInteraction(argc, argv);
    std::string said = ouf.readToken();
    if (said != inf.readToken()) quitf(_wa, "said %s", said.c_str());
    quitf(_ok, "said it");
}
"""


def test_an_interactive_run_waits_for_its_interactors_compile() -> None:
    # A Python program against a C++ interactor whose compile (testlib.h: seconds) outlasts the
    # program's wall clock and the client's margin: the client waits for the compile, as it does for
    # a program's own, instead of taking the server for lost.
    from evalfarm.envs.codecontests.judging import checker_limits, testlib_header
    from evalfarm.sandbox import InteractorSpec, JudgeRun, attachment_path

    spec = InteractorSpec(
        code=ECHO_INTERACTOR.encode(),
        language="cpp",
        judge=JudgeRun(
            argv=(attachment_path(0), "/tmp/tout", attachment_path(1)),
            attachments=(b"hello\n", b""),
            crash_exit=3,
        ),
        limits=dataclasses.replace(checker_limits(1.0), wall_s=1.5),
        headers={"testlib.h": testlib_header()},
    )
    with Sandbox(slot=914, config=SandboxConfig(margin_s=0.1)) as box:
        result = box.run_interactive("print('hello', flush=True)\n", spec, Limits(wall_s=0.5))
    assert (result.status, result.judge and result.judge["exit_code"]) == (Status.OK, 0), result
    assert box.take_restarts() == {}
