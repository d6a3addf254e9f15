"""A dataset's own files, row by row, each row with its split and its rank in that split.

Files: parquet (read batch by batch, only the columns asked for), JSON lines, and Arrow IPC, as the
`datasets` library writes its cache and `save_to_disk` folders (`data-00000-of-00009.arrow` stream
files beside `dataset_info.json` and `state.json`; huggingface/datasets' `arrow_dataset.py` writes
them with `pa.RecordBatchStreamWriter` and lists them, in order, in `state.json`'s `_data_files`).
Arrow files are memory-mapped and turned into Python rows a few at a time, so a shard of large
solutions costs only the rows being read.

A row's split is `state.json`'s `_split`, else its folder's name (`train/`, `test/`), else the split
its file's name starts with (`train-00000-of-00009.parquet`, `test.jsonl`), else the file's stem;
its rank counts every row of that split read before it, in file order: TACO's own evaluation and its
special-judge list number a split's problems that way.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalfarm.envs.datasets import DatasetError

BATCH_ROWS = 64
SUFFIXES = (".parquet", ".jsonl", ".arrow")
SPLITS = ("train", "test", "validation", "valid", "dev")
_NAME_PARTS = re.compile(r"[-_.]")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of a dataset, where it was found: its split and its rank in that split."""

    values: dict[str, Any]
    split: str
    index: int


def source_files(
    source: str | Path, suffixes: tuple[str, ...] = SUFFIXES, skip: tuple[str, ...] = ()
) -> list[Path]:
    """`source` itself if it is a file, else every file below it with one of `suffixes` (none named
    in `skip`, nor under a folder named there), in order: a `save_to_disk` folder's as its
    `state.json` lists them, the others by path."""
    source = Path(source)
    if source.is_file():
        return [source]
    found = (
        [path for path in source.rglob("*") if path.suffix in suffixes and not set(skip) & set(path.parts)]
        if source.is_dir()
        else []
    )
    if not found:
        raise DatasetError(f"no {' or '.join(suffix.lstrip('.') for suffix in suffixes)} file at {source}")
    return sorted(found, key=_file_order)


def _file_order(path: Path) -> tuple[str, int, str]:
    listed = _state(path.parent).get("_data_files") or []
    names = [entry.get("filename") for entry in listed if isinstance(entry, dict)]
    return (str(path.parent), names.index(path.name) if path.name in names else len(names), path.name)


def _state(folder: Path) -> dict[str, Any]:
    """A `save_to_disk` folder's `state.json`, or nothing."""
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def split_of(path: Path) -> str:
    """The split a file's rows belong to (see the module's docstring)."""
    split = _state(path.parent).get("_split")
    if isinstance(split, str) and split:
        return split
    if path.parent.name in SPLITS:
        return path.parent.name
    named = [part for part in _NAME_PARTS.split(path.name) if part in SPLITS]
    return named[0] if named else path.stem


def iter_rows(
    files: list[Path], required: tuple[str, ...], columns: tuple[str, ...] | None = None
) -> Iterator[Row]:
    """The rows of `files`, in small batches; DatasetError if a file lacks a `required` column.
    `columns`: those to read where a file has them (the large others left on disk)."""
    ranks: Counter[str] = Counter()
    for path in files:
        split = split_of(path)
        for values in _rows_of(path, required, columns):
            yield Row(values, split, ranks[split])
            ranks[split] += 1


def _rows_of(
    path: Path, required: tuple[str, ...], columns: tuple[str, ...] | None
) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # a tooling dependency: workers never need it

        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        _require(path, names, required)
        wanted = [name for name in columns if name in names] if columns is not None else None
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
            yield from batch.to_pylist()
    elif path.suffix == ".arrow":
        yield from _arrow_rows(path, required, columns)
    else:
        yield from _json_rows(path, required)


def _arrow_rows(
    path: Path, required: tuple[str, ...], columns: tuple[str, ...] | None
) -> Iterator[dict[str, Any]]:
    """An Arrow IPC file's rows: the stream format `datasets` writes, or the file format."""
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        try:
            reader = pa.ipc.open_stream(source)
            schema, batches = reader.schema, iter(reader)
        except pa.ArrowInvalid:
            source.seek(0)
            opened = pa.ipc.open_file(source)
            schema = opened.schema
            batches = (opened.get_batch(index) for index in range(opened.num_record_batches))
        _require(path, schema.names, required)
        wanted = [name for name in columns if name in schema.names] if columns is not None else None
        for batch in batches:
            if wanted is not None:
                batch = batch.select(wanted)
            for offset in range(0, batch.num_rows, BATCH_ROWS):
                yield from batch.slice(offset, BATCH_ROWS).to_pylist()


def _json_rows(path: Path, required: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: not a JSON object")
            _require(path, list(row), required)
            yield row


def _require(path: Path, names: list[str], required: tuple[str, ...]) -> None:
    missing = [name for name in required if name not in names]
    if missing:
        raise DatasetError(f"{path}: missing columns {', '.join(missing)}: not this dataset's format")
