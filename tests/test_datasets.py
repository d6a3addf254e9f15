"""Dataset tools: the JSONL loader and its caps, the store workers look problems up in, install, prepare."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs.base import InvalidJob
from evalfarm.envs.codecontests.prepare import PrepareOptions, prepare_codecontests
from evalfarm.envs.datasets import Caps, DatasetError, DatasetStore, Problem, install_dataset, load_problems
from evalfarm.workers.cli import main


def problem(pid: str, public: int = 1, hidden: int = 2) -> dict[str, Any]:
    """A problem object of `public` and `hidden` addition tests."""
    tests = [{"input": f"{i} {i}\n", "output": f"{2 * i}\n"} for i in range(max(public, hidden))]
    return {
        "id": pid,
        "description": f"add ({pid})",
        "public_tests": tests[:public],
        "hidden_tests": tests[:hidden],
    }


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_loader_skips_malformed_lines_with_bounded_warnings(tmp_path: Path, caplog: Any) -> None:
    bad = ["{not json", "[1, 2]", json.dumps({"id": "x"}), json.dumps(problem("h0", hidden=0))] * 5
    path = write_jsonl(tmp_path / "d.jsonl", [problem("a"), *bad, "", problem("b")])
    with caplog.at_level(logging.WARNING, logger="evalfarm.envs.datasets"):
        loaded = load_problems(path, max_warnings=3)
    assert [p.id for p in loaded.problems] == ["a", "b"]
    assert loaded.skipped == 20
    assert len(caplog.records) == 4
    assert "17 more lines skipped" in caplog.records[-1].getMessage()
    assert "d.jsonl:2: skipped: not JSON" in caplog.records[0].getMessage()


def test_loader_skips_duplicates_and_too_few_public_tests(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [problem("a"), problem("a"), problem("p0", public=0)])
    assert [p.id for p in load_problems(path).problems] == ["a", "p0"]
    assert [p.id for p in load_problems(path, Caps(min_public=1)).problems] == ["a"]


def test_loader_caps(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [problem(f"p{i}", public=4, hidden=9) for i in range(6)])
    loaded = load_problems(path, Caps(max_problems=3, max_public=2, max_hidden=5))
    assert len(loaded.problems) == 3
    assert {(len(p.public_tests), len(p.hidden_tests)) for p in loaded.problems} == {(2, 5)}


def test_loader_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"dataset file not found: .*nope\.jsonl"):
        load_problems(tmp_path / "nope.jsonl")


def test_install_then_store_lookup(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", [problem("a"), "garbage", problem("b")])
    directory = tmp_path / "datasets"
    dataset_id, loaded = install_dataset(source, directory)
    assert (dataset_id, len(loaded.problems), loaded.skipped) == ("mine", 2, 1)
    assert [p.name for p in directory.iterdir()] == ["mine.jsonl"]  # no temporary file left behind
    store = DatasetStore(directory)
    assert store.lookup("b").hidden_tests[1].output == "2\n"
    assert store.lookup("a", dataset="mine").id == "a"


def test_install_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", [problem("a")])
    install_dataset(source, tmp_path / "d")
    with pytest.raises(DatasetError, match="already exists"):
        install_dataset(source, tmp_path / "d")
    install_dataset(source, tmp_path / "d", replace=True)


@pytest.mark.parametrize("bad_id", ["", "../up", "a/b", ".hidden", "x" * 65])
def test_install_checks_the_id(tmp_path: Path, bad_id: str) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", [problem("a")])
    with pytest.raises(DatasetError, match="bad dataset id"):
        install_dataset(source, tmp_path / "d", dataset_id=bad_id)


def test_install_refuses_a_file_without_valid_problems(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", ["{}", "nope"])
    with pytest.raises(DatasetError, match="no valid problem"):
        install_dataset(source, tmp_path / "d")


def test_store_finds_datasets_installed_after_it_started(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    store = DatasetStore(directory)
    with pytest.raises(InvalidJob, match="problem_id: unknown problem 'a'"):
        store.lookup("a")
    install_dataset(write_jsonl(tmp_path / "late.jsonl", [problem("a")]), directory)
    assert store.lookup("a").id == "a"
    assert store.ids() == ["late"]


def test_store_ambiguous_problem_id_needs_a_dataset() -> None:
    store = DatasetStore()
    store.add("one", [Problem.model_validate(problem("a"))])
    store.add("two", [Problem.model_validate(problem("a", hidden=1))])
    with pytest.raises(InvalidJob, match="in several datasets"):
        store.lookup("a")
    assert len(store.lookup("a", dataset="two").hidden_tests) == 1


# --- prepare: a small parquet file with the schema of deepmind/code_contests -------------------------


def code_contests_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write `rows` with the column types of the public deepmind/code_contests shards."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tests = pa.struct([("input", pa.list_(pa.string())), ("output", pa.list_(pa.string()))])
    solutions = pa.struct([("language", pa.list_(pa.int64())), ("solution", pa.list_(pa.string()))])
    schema = pa.schema(
        [
            ("name", pa.string()),
            ("description", pa.string()),
            ("public_tests", tests),
            ("private_tests", tests),
            ("generated_tests", tests),
            ("source", pa.int64()),
            ("difficulty", pa.int64()),
            ("solutions", solutions),
            ("incorrect_solutions", solutions),
            ("cf_contest_id", pa.int64()),
            ("cf_index", pa.string()),
            ("cf_points", pa.float32()),
            ("cf_rating", pa.int32()),
            ("cf_tags", pa.list_(pa.string())),
            ("is_description_translated", pa.bool_()),
            ("untranslated_description", pa.string()),
            ("time_limit", pa.struct([("seconds", pa.int64()), ("nanos", pa.int64())])),
            ("memory_limit_bytes", pa.int64()),
            ("input_file", pa.string()),
            ("output_file", pa.string()),
        ]
    )
    defaults = {"source": 2, "solutions": {"language": [3], "solution": ["print(1)"]}, "cf_tags": []}
    full = [{name: row.get(name, defaults.get(name)) for name in schema.names} for row in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=schema), path)
    return path


def cc_row(name: str, public: int, private: int, generated: int, difficulty: int) -> dict[str, Any]:
    def tests(prefix: str, count: int) -> dict[str, list[str]]:
        return {
            "input": [f"{prefix}{i}\n" for i in range(count)],
            "output": [f"{prefix}{i}!\n" for i in range(count)],
        }

    return {
        "name": name,
        "description": f"Problem {name}",
        "public_tests": tests("pub", public),
        "private_tests": tests("priv", private),
        "generated_tests": tests("gen", generated),
        "difficulty": difficulty,
    }


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    directory = tmp_path / "code_contests" / "data"
    directory.mkdir(parents=True)
    code_contests_parquet(directory / "test-00000-of-00002.parquet", [cc_row("1575_A. Sort", 1, 2, 3, 7)])
    rows = [cc_row("no public", 0, 2, 2, 7), cc_row("no hidden", 1, 0, 0, 7), cc_row("hard", 2, 1, 1, 12)]
    code_contests_parquet(directory / "test-00001-of-00002.parquet", [*rows, cc_row("easy", 1, 1, 0, 1)])
    return directory.parent


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_prepare_from_a_directory_of_shards(shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "cc.jsonl"
    done = prepare_codecontests(shards, out, PrepareOptions(max_hidden=4))
    assert (done.read, done.written) == (5, 3)
    assert sum(done.skipped.values()) == 2  # no public test; no hidden test
    first, *rest = read_jsonl(out)
    assert first["id"] == "1575_A. Sort" and first["description"] == "Problem 1575_A. Sort"
    assert first["public_tests"] == [{"input": "pub0\n", "output": "pub0!\n"}]
    # private tests first, then generated ones, capped at max_hidden
    assert [t["input"] for t in first["hidden_tests"]] == ["priv0\n", "priv1\n", "gen0\n", "gen1\n"]
    assert [p["id"] for p in rest] == ["hard", "easy"]


def test_prepare_filters(shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "cc.jsonl"
    prepare_codecontests(shards, out, PrepareOptions(min_public=2))
    assert [p["id"] for p in read_jsonl(out)] == ["hard"]
    prepare_codecontests(shards, out, PrepareOptions(min_difficulty=2, max_difficulty=10))
    assert [p["id"] for p in read_jsonl(out)] == ["1575_A. Sort"]
    prepare_codecontests(shards, out, PrepareOptions(max_samples=2))
    assert [p["id"] for p in read_jsonl(out)] == ["1575_A. Sort", "hard"]


def test_prepare_refuses_what_is_not_code_contests(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(DatasetError, match="missing columns"):
        prepare_codecontests(tmp_path / "other.parquet", tmp_path / "o.jsonl", PrepareOptions())
    with pytest.raises(DatasetError, match="no parquet file"):
        prepare_codecontests(tmp_path / "nothing", tmp_path / "o.jsonl", PrepareOptions())


def test_cli_prepare_load_list(shards: Path, tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    out, directory = tmp_path / "cc.jsonl", tmp_path / "installed"
    monkeypatch.setenv("EVALFARM_DATASETS_DIR", str(directory))
    assert main(["datasets", "prepare", "codecontests", "--source", str(shards), "--out", str(out)]) == 0
    assert "3 problems written" in capsys.readouterr().out
    assert main(["datasets", "load", str(out), "--id", "cc-test", "--max-hidden", "1"]) == 0
    assert "dataset 'cc-test': 3 problems installed" in capsys.readouterr().out
    assert main(["datasets", "load", str(out), "--id", "cc-test"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["datasets", "list"]) == 0
    assert capsys.readouterr().out == "cc-test\t3 problems\n"
    assert len(DatasetStore(directory).lookup("hard").hidden_tests) == 1
    assert main(["datasets", "load", str(tmp_path / "missing.jsonl")]) == 2
    assert "dataset file not found" in capsys.readouterr().err
