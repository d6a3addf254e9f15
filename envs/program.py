"""The `program` env: run one program with its stdin and report what it did.

`language` is `python` (the default) or `cpp` (C++17, compiled in the sandbox; the result's `compile`
says how long that took, `{"status", "wall_s", "cached"}`, and a program that does not compile is a
`syntax_error` with the compiler's messages as its stderr).

A job may also carry `files` (relative path -> base64 content, written into the run's private /tmp,
its working directory, before it starts) and `fetch_files` (paths whose contents, base64, come back
in the result's `files` when the program ends; at most 8 MiB in all), as SandboxFusion's requests do,
in every language. A compiled program's (or a runtime's) files are names in its working directory
(no folder, no `/mnt/`), each a file it may read and write, and every name it fetches comes back
(empty when it wrote nothing there).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from evalfarm.envs.base import Context, Env, InvalidJob
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.validation import JobModel, Language, require_language, validate_job
from evalfarm.sandbox import Limits

MAX_CODE_CHARS = 1 << 20
MAX_STDIN_CHARS = 16 << 20
MAX_FILES = 64
MAX_FILES_CHARS = 32 << 20  # base64 text of all input files together


def relative_path(path: str) -> str:
    """`path` if it names a file inside the working directory, or under /mnt (SandboxFusion's
    programs write there: a run's /mnt is its own, inside its /tmp); ValueError otherwise."""
    normal = posixpath.normpath(path)
    inside = normal.removeprefix("/mnt/") if normal.startswith("/mnt/") else normal
    if not path or "\0" in path or inside.startswith("/") or inside == "." or inside.split("/")[0] == "..":
        raise ValueError(f"{path!r} is not a relative path inside the working directory, nor one under /mnt")
    return normal


def in_run(path: str) -> str:
    """Where a job's path is in the run's /tmp (`/mnt/x` -> `.mnt/x`)."""
    return ".mnt/" + path.removeprefix("/mnt/") if path.startswith("/mnt/") else path


class ProgramJob(JobModel):
    """A `program` job: the code and, optionally, its standard input and working-directory files."""

    code: str = Field(max_length=MAX_CODE_CHARS)
    stdin: str = Field(default="", max_length=MAX_STDIN_CHARS)
    files: dict[str, str | None] = Field(default_factory=dict, max_length=MAX_FILES)
    fetch_files: list[str] = Field(default_factory=list, max_length=MAX_FILES)
    language: Language = "python"  # sandbox.languages.NAMES

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str | None]) -> dict[str, str | None]:
        """Relative paths and base64 contents, within the size cap."""
        if sum(len(content or "") for content in files.values()) > MAX_FILES_CHARS:
            raise ValueError(f"the files take more than {MAX_FILES_CHARS} characters of base64")
        checked = {}
        for path, content in files.items():
            try:
                base64.b64decode(content or "", validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"{path!r}: not base64") from None
            checked[relative_path(path)] = content
        return checked

    @field_validator("fetch_files")
    @classmethod
    def _fetch_files(cls, paths: list[str]) -> list[str]:
        """Relative paths."""
        return [relative_path(path) for path in paths]


class ProgramEnv(Env):
    """Runs the program once; no reward, the run itself is the result."""

    id = "program"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
    default_limits = Limits()

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the program in this slot's sandbox."""
        request = validate_job(ProgramJob, job)
        require_language(ctx.sandbox, request.language)
        files = {in_run(path): content or "" for path, content in request.files.items()}
        fetch = {in_run(path): path for path in request.fetch_files}
        try:
            run = ctx.sandbox.run(
                request.code, request.stdin, limits, files=files or None, fetch=list(fetch) or None,
                language=request.language,
            )  # fmt: skip
        except ValueError as error:  # a compiled program's file that is not a name in its directory
            raise InvalidJob(f"files: {error}") from None
        result = {"status": run.status.value, "reward": None, "error": run.error, **run.to_fields()}
        if request.fetch_files:
            result["files"] = {fetch.get(path, path): content for path, content in (run.files or {}).items()}
        if run.compile is not None:
            result["compile"] = {key: run.compile[key] for key in ("status", "wall_s", "cached")}
        return result
