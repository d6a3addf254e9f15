"""A program built on the host with the toolchain table's own command lines (sandbox/languages.py),
for the benchmarks that compare a sandboxed test with the same build run bare."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from evalfarm.sandbox import Limits, languages


def bare_command(language: languages.Language, code: str, directory: Path) -> list[str]:
    """The program built on the host with the table's own command lines; the command that runs it."""
    spec = languages.native_request(language, code.encode(), Limits())
    work = directory / language.name
    work.mkdir()

    def here(path: str) -> str:
        return str(work / Path(path).name)

    Path(
        here(spec["compile"]["source_path"] if spec["compile"] else f"/tmp/{language.source_name}")
    ).write_text(code)
    if spec["compile"]:
        environment = {**os.environ, **spec["compile"]["environment"]}
        for key in ("GOCACHE", "GOPATH"):
            if key in environment:
                environment[key] = str(work / key.lower())
        for command in spec["compile"]["commands"]:
            moved = [word.replace("/tmp/", f"{work}/") for word in command]
            subprocess.run(moved, check=True, cwd=work, env=environment, capture_output=True)
    if spec["runtime"] is None:
        return [here(spec["compile"]["binary_path"])]
    return [spec["runtime"], *(word.replace("/tmp/", f"{work}/") for word in spec["argv"][1:])]
