"""The toolchain table: every language a program may be written in, beside Python, in one entry each.

Python programs run inside the fork server's own interpreter and are not listed here. Every other
language is an entry of `LANGUAGES`: how a completion's fenced block names it, how its source is
compiled (the exact command lines, run inside the sandbox under the job's `compile_*` limits, their
tools looked up on the run's PATH, which the sandbox's read-only view of /usr shares with the host or
image) and how the result runs. One source always gives one build, cached under a hash of the
command lines and the source (`native_request`). Adding a language is one entry here, its packages in
`.ci/run` and the worker image, and its tests.

A build is either a static binary the launcher starts itself (C, C++, Go, Rust), or a file a runtime
runs (a Java archive; for Node.js and PyPy, the source itself): the launcher then starts the runtime,
with the file staged in the run's private /tmp first. Node.js and PyPy compile nothing, but their
compile step is the runtime's own syntax check (`node --check`, PyPy's `compile()`), so that a
program that does not parse is a `syntax_error` before its first test, as a Python program is, with
the check's message, and a source that parses is checked once and kept like any build.

Memory is capped in one of two ways (`memory`):
- `address_space`: RLIMIT_AS at the job's `memory_mb` (plus a binary's own text), as judges do for C
  and C++; a slot's cgroup caps the whole run as well where it has one.
- `cgroup`: runtimes (and compilers: rustc, javac, go) that reserve address space far beyond what
  they use (the JVM, Go, V8, PyPy) are capped by the slot's cgroup alone; a worker without cgroups
  does not offer them (`offered`). Where a slot has a cgroup, it alone caps every native run
  (sandbox._native). A runtime's own heap cap (`-Xmx`, `--max-old-space-size`) is set from
  `memory_mb`, at twice it: those runtimes grow their heap with what is live, not with garbage, so
  a program whose live data passes its memory is killed by the cgroup first, a `memory_limit` the
  kernel reports, rather than ending in the runtime's own out-of-memory error (`runtime_error`).

Limits are not scaled per language (time limits are the job's, as on Codeforces, which gives every
language the same limit): a runtime's own start (the JVM's ~50-100 ms of CPU) counts in them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil

from evalfarm.limits import Limits

SOURCE_DIR = "/tmp"  # the compile run's own tmpfs, and each run's
# The PATH of every run (sandbox._child.RUN_ENVIRONMENT), where tools are looked up. This module
# imports nothing else of the farm: the gateway and the envs read the table too.
RUN_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclasses.dataclass(frozen=True)
class Language:
    """One language: how a completion names it, how its source becomes what runs, how it runs."""

    name: str
    title: str  # as messages name it
    fences: tuple[str, ...]  # the tags of a completion's fenced block in this language
    suffixes: tuple[str, ...]  # file suffixes `evalfarm run` reads as this language
    source_name: str  # the source's file name in the compile run (Java: its public class's)
    build_name: str = "main"  # what the compile writes, in the compile run's /tmp
    public_class: bool = False  # the source's file is named after its public class, the main class
    # The compile, one command line after another, the first word of each looked up on PATH;
    # {source} and {build} are the source's and the build's paths. Empty: the source runs as it is.
    compile: tuple[tuple[str, ...], ...] = ()
    compile_environment: tuple[tuple[str, str], ...] = ()
    # The runtime that runs the build (looked up on PATH) and its arguments ({program}: where the
    # build is staged, {main}: Java's main class, {heap_mb}); None: the build is a static binary.
    runtime: str | None = None
    run: tuple[str, ...] = ()
    memory: str = "address_space"  # or "cgroup" (see the module's docstring)
    threads: int = 0  # processes the runtime starts of its own, added to the job's `processes`
    system_paths: tuple[str, ...] = ()  # host paths the runtime reads beyond /usr and /lib

    @property
    def compiled(self) -> bool:
        return bool(self.compile)

    def entry(self, source: bytes) -> tuple[str, str]:
        """The source's file name and the program's main class (`public_class` languages: the
        source's public class, which names its file; `Main` when it has none)."""
        if not self.public_class:
            return self.source_name, ""
        found = _PUBLIC_CLASS.search(source.decode("utf-8", "replace"))
        main = found.group(1) if found else "Main"
        return f"{main}{os.path.splitext(self.source_name)[1]}", main


_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]*)", re.MULTILINE)

# As Codeforces compiles C and C++ (`-static -DONLINE_JUDGE -O2`, GNU dialects): statically linked,
# so that a test's start does no dynamic linking (a third of a millisecond here instead of one and a
# half), and ONLINE_JUDGE defined, which contest solutions test to read stdin rather than a file.
_GCC = ("-O2", "-static", "-DONLINE_JUDGE", "-pipe")
_RUSTC = ("-O", "--edition", "2021", "-C", "target-feature=+crt-static", "-C", "strip=symbols")
_JVM = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")  # fewer threads, a faster start
_JAVA_TOOL = tuple(f"-J{flag}" for flag in _JVM)
_JAVAC = ("javac", "-J-Xmx512m", *_JAVA_TOOL, "-encoding", "UTF-8", "-d", "/tmp/classes", "{source}")
_JAR = ("jar", "-J-Xmx256m", *_JAVA_TOOL, "cf", "{build}", "-C", "/tmp/classes", ".")
# PyPy's syntax check: the source compiled as the run would compile it, the error alone printed (no
# frame of the check itself), as CPython's runs print theirs.
_PYPY_CHECK = (
    "import sys, traceback\n"
    "try:\n"
    "    compile(open(sys.argv[1], 'rb').read(), 'main.py', 'exec')\n"
    "except Exception as error:\n"
    "    sys.stderr.write(''.join(traceback.format_exception_only(type(error), error)))\n"
    "    sys.exit(1)\n"
)
_GO_ENVIRONMENT = (
    ("CGO_ENABLED", "0"),
    ("GOCACHE", "/tmp/.gocache"),
    ("GOPATH", "/tmp/.gopath"),
    ("GO111MODULE", "off"),
    ("GOTOOLCHAIN", "local"),
    ("GOFLAGS", "-buildvcs=false"),
)
_TABLE = (
    Language(
        name="cpp",
        title="C++",
        fences=("cpp", "c++", "cc", "cxx"),
        suffixes=(".cpp", ".cc", ".cxx", ".c++"),
        source_name="main.cpp",
        compile=(("g++", *_GCC, "-std=gnu++17", "-o", "{build}", "{source}"),),
    ),
    Language(
        name="c",
        title="C",
        fences=("c",),
        suffixes=(".c",),
        source_name="main.c",
        compile=(("gcc", *_GCC, "-std=gnu17", "-o", "{build}", "{source}", "-lm"),),
    ),
    Language(
        name="rust",
        title="Rust",
        fences=("rust", "rs"),
        suffixes=(".rs",),
        source_name="main.rs",
        compile=(("rustc", *_RUSTC, "-C", "linker={tool:gcc}", "-o", "{build}", "{source}"),),
        memory="cgroup",  # rustc's codegen threads reserve more address space than a compile's cap
    ),
    Language(
        name="go",
        title="Go",
        fences=("go", "golang"),
        suffixes=(".go",),
        source_name="main.go",
        compile=(("go", "build", "-o", "{build}", "{source}"),),
        compile_environment=_GO_ENVIRONMENT,
        memory="cgroup",
        threads=16,
    ),
    Language(
        name="java",
        title="Java",
        fences=("java",),
        suffixes=(".java",),
        source_name="Main.java",
        build_name="main.jar",
        public_class=True,
        compile=(_JAVAC, _JAR),
        runtime="java",
        run=(
            "-ea",  # assertions on, as SandboxFusion and MultiPL-E's Java tests expect
            "-Xmx{heap_mb}m",
            "-Xss64m",
            *_JVM,
            "-XX:-UsePerfData",
            "-Xshare:auto",
            "-cp",
            "{program}",
            "{main}",
        ),
        memory="cgroup",
        threads=32,
        system_paths=("/etc/java-17-openjdk",),
    ),
    Language(
        name="nodejs",
        title="JavaScript",
        fences=("javascript", "js", "nodejs", "node"),
        suffixes=(".js",),
        source_name="main.js",
        build_name="main.js",  # the checked source is the build
        compile=(("node", "--check", "{source}"),),
        runtime="node",
        run=("--max-old-space-size={heap_mb}", "{program}"),
        memory="cgroup",
        threads=16,
    ),
    Language(
        name="pypy3",
        title="PyPy",
        fences=("pypy", "pypy3"),
        suffixes=(),
        source_name="main.py",
        build_name="main.py",
        compile=(("pypy3", "-S", "-B", "-c", _PYPY_CHECK, "{source}"),),
        runtime="pypy3",
        run=("{program}",),
        memory="cgroup",
        threads=4,
    ),
)
LANGUAGES = {language.name: language for language in _TABLE}
CPP = LANGUAGES["cpp"]
# Other names of a language, as jobs and SandboxFusion's clients send them.
ALIASES = {"javascript": "nodejs", "c++": "cpp", "golang": "go", "pypy": "pypy3"}
# What a job's `language` field may say (`python` runs in the fork server's interpreter).
NAMES = ("python", *LANGUAGES, *ALIASES)


def canonical(name: str) -> str:
    """A language's own name for one of its names."""
    return ALIASES.get(name, name)


class CompilerMissing(Exception):
    """This machine lacks a tool a language needs (its compiler or its runtime)."""


@functools.cache
def tool_path(name: str, language: str) -> str:
    """A tool's absolute path, resolved once (through /etc/alternatives, which runs do not see);
    raises CompilerMissing."""
    found = shutil.which(name, path=RUN_PATH)
    if found is None:
        raise CompilerMissing(f"no {name} for {language} on this worker's PATH ({RUN_PATH})")
    return os.path.realpath(found)


def compiled(name: str) -> bool:
    """Whether programs in the language `name` compile before they run (Python's do not)."""
    return name in LANGUAGES and LANGUAGES[name].compiled


def installed() -> tuple[str, ...]:
    """The languages whose every tool this machine has (Python always)."""
    names = ["python"]
    for language in LANGUAGES.values():
        tools = [command[0] for command in language.compile] + (
            [language.runtime] if language.runtime else []
        )
        try:
            for tool in filter(None, tools):
                tool_path(tool, language.title)
        except CompilerMissing:
            continue
        names.append(language.name)
    return tuple(names)


def offered(cgroups: bool) -> tuple[str, ...]:
    """The languages a sandbox runs: those installed, less the runtimes only a cgroup caps when it
    has none."""
    return tuple(
        name for name in installed() if name == "python" or cgroups or LANGUAGES[name].memory != "cgroup"
    )


def system_paths() -> tuple[str, ...]:
    """Host paths some runtime reads beyond the system directories, where they exist."""
    return tuple(
        path for language in LANGUAGES.values() for path in language.system_paths if os.path.exists(path)
    )


def native_request(
    language: Language, source: bytes, limits: Limits, headers: dict[str, bytes] | None = None
) -> dict:
    """The `native` part of a run request: the cache key (the command lines, the source and the
    headers written beside it), the compile's command lines and limits (None when the source runs
    as it is), the runtime, and the program's argv."""
    source_name, main = language.entry(source)
    source_path = f"{SOURCE_DIR}/{source_name}"
    build_path = f"{SOURCE_DIR}/{language.build_name}"
    commands = [
        [
            tool_path(command[0], language.title),
            *(_fill(word, source_path, build_path, language.title) for word in command[1:]),
        ]
        for command in language.compile
    ]
    digest = hashlib.sha256(json.dumps([commands, language.compile_environment]).encode() + b"\0" + source)
    for name, content in sorted((headers or {}).items()):
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(content).digest())
    staged = build_path if language.compiled else source_path
    heap_mb = 2 * limits.memory_mb
    if language.runtime is None:
        argv = ["main"]
        runtime = None
    else:
        runtime = tool_path(language.runtime, language.title)
        values = {"{program}": staged, "{main}": main, "{heap_mb}": str(heap_mb)}
        argv = [language.runtime, *(_replace(word, values) for word in language.run)]
    return {
        "key": digest.hexdigest(),
        "argv": argv,
        "runtime": runtime,
        "stage": staged if language.runtime is not None else None,
        "memory": language.memory,
        "threads": language.threads,
        "compile": (
            {
                "commands": commands,
                "environment": dict(language.compile_environment),
                "source_path": source_path,
                "binary_path": build_path,
                "limits": compile_limits(limits).to_dict(),
                "memory": language.memory,
            }
            if language.compiled
            else None
        ),
    }


def _fill(word: str, source: str, build: str, title: str) -> str:
    """A compile's word with its paths in place; `{tool:NAME}`: the path of the tool NAME (runs do
    not see /etc/alternatives, through which `cc` is found)."""
    tool = _TOOL.search(word)
    if tool:
        word = word.replace(tool.group(0), tool_path(tool.group(1), title))
    return word.replace("{source}", source).replace("{build}", build)


_TOOL = re.compile(r"\{tool:([\w.+-]+)\}")


def _replace(word: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        word = word.replace(name, value)
    return word


def compile_limits(limits: Limits) -> Limits:
    """The compile's own limits: the job's `compile_wall_s` and `compile_memory_mb`, room for the
    compiler's processes and threads and temporary files, and its messages capped."""
    return Limits(
        wall_s=limits.compile_wall_s,
        cpu_s=limits.compile_wall_s,
        memory_mb=limits.compile_memory_mb,
        output_bytes=1 << 20,
        file_size_mb=256,
        workdir_mb=512,
        open_files=256,
        processes=64,
    )
