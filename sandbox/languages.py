"""Compiled languages: how a program's source becomes the binary its tests run.

Python programs run inside the fork server's own interpreter and are not listed here. A compiled
language names its compiler (looked up on the run's PATH, which the sandbox's read-only view of
/usr shares with the host or image) and the exact command line, so that one source always gives one
binary and the binary can be cached under a hash of both.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil

from evalfarm.sandbox._runner import RUN_ENVIRONMENT
from evalfarm.sandbox.limits import Limits

SOURCE_DIR = "/tmp"  # the compile run's own tmpfs


@dataclasses.dataclass(frozen=True)
class Language:
    """One compiled language: its compiler, flags and file names inside the compile run."""

    name: str
    compiler: str  # a name looked up on the run's PATH
    flags: tuple[str, ...]
    source_name: str
    binary_name: str = "main"


# As Codeforces compiles C++17 (`g++ -static -DONLINE_JUDGE -O2 -std=c++17`, with GNU extensions as
# its GNU G++17 entry has them): statically linked, so that a test's start does no dynamic linking
# (a third of a millisecond here instead of one and a half), and ONLINE_JUDGE defined, which
# contest solutions test to read stdin rather than a local file.
CPP = Language(
    name="cpp",
    compiler="g++",
    flags=("-O2", "-std=gnu++17", "-static", "-DONLINE_JUDGE", "-pipe"),
    source_name="main.cpp",
)

LANGUAGES = {"cpp": CPP}
# What a job's `language` field may say (`python` runs in the fork server's interpreter).
NAMES = ("python", *LANGUAGES)


class CompilerMissing(Exception):
    """This machine has no compiler for a language the job asked for."""


@functools.cache
def compiler_path(language: Language) -> str:
    """The compiler's absolute path, resolved once; raises CompilerMissing."""
    found = shutil.which(language.compiler, path=RUN_ENVIRONMENT["PATH"])
    if found is None:
        raise CompilerMissing(
            f"no {language.name} compiler ({language.compiler}) on this worker's PATH "
            f"({RUN_ENVIRONMENT['PATH']})"
        )
    return os.path.realpath(found)


def native_request(
    language: Language, source: bytes, limits: Limits, headers: dict[str, bytes] | None = None
) -> dict:
    """The `native` part of a run request: the cache key (the command line, the source and the
    headers written beside it), the compile's command line and limits, and the binary's argv."""
    source_path = f"{SOURCE_DIR}/{language.source_name}"
    binary_path = f"{SOURCE_DIR}/{language.binary_name}"
    argv = [compiler_path(language), *language.flags, "-o", binary_path, source_path]
    digest = hashlib.sha256(json.dumps(argv).encode() + b"\0" + source)
    for name, content in sorted((headers or {}).items()):
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(content).digest())
    key = digest.hexdigest()
    return {
        "key": key,
        "argv": [language.binary_name],
        "compile": {
            "argv": argv,
            "source_path": source_path,
            "binary_path": binary_path,
            "limits": compile_limits(limits).to_dict(),
        },
    }


def compile_limits(limits: Limits) -> Limits:
    """The compile's own limits: the job's `compile_wall_s` and `compile_memory_mb`, room for the
    compiler's processes and temporary files, and its messages capped."""
    return Limits(
        wall_s=limits.compile_wall_s,
        cpu_s=limits.compile_wall_s,
        memory_mb=limits.compile_memory_mb,
        output_bytes=1 << 20,
        file_size_mb=256,
        workdir_mb=512,
        open_files=256,
        processes=32,
    )
