"""What `evalfarm datasets prepare` reads of the six datasets in their real layouts and encodings
(tests/dataset_layouts.py): every row's tests, judge, limits in each dataset's units, files, and
solutions in every language the farm runs."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest
from dataset_layouts import (
    FILE_SUM_CPP,
    FILE_SUM_JAVA,
    LENGTH_CHECKER,
    REVERSED,
    REVERSED_CPP,
    REVERSED_JAVA,
    SHUFFLE_CHECKER,
    SUM,
    TESTLIB_SHUFFLE,
    apps_dataset,
    ccplus_dataset,
    code_contests_dataset,
    lcb_dataset,
    openr1_dataset,
    read_jsonl,
    taco_save_to_disk,
    write_arrow_stream,
)

from evalfarm.envs.codecontests.openr1 import strip_cr
from evalfarm.envs.codecontests.prepare import PrepareOptions, prepare_codecontests
from evalfarm.envs.codecontests.problem_limits import problem_limits
from evalfarm.envs.codecontests.sources import SourceOptions, prepare_source
from evalfarm.envs.datasets import DatasetError, Problem
from evalfarm.workers.cli import main


def prepared(kind: str, source: Path, tmp_path: Path, **options: Any) -> dict[str, dict[str, Any]]:
    out = tmp_path / f"{kind}.jsonl"
    prepare_source(kind, source, out, SourceOptions(**options))
    problems = {problem["id"]: problem for problem in read_jsonl(out)}
    for problem in problems.values():
        Problem.model_validate(problem)  # what the farm will load
    return problems


def test_limits_in_each_datasets_units() -> None:
    assert problem_limits(1.0, 256.0) == {"cpu_s": 1.0, "wall_s": 2.0, "memory_mb": 256}  # open-r1
    assert problem_limits(0.5, None) == {"cpu_s": 0.5, "wall_s": 1.5}  # a second more at least
    assert problem_limits(6.0, 255.5) == {"cpu_s": 6.0, "wall_s": 12.0, "memory_mb": 256}  # MB rounded up
    assert problem_limits(2.0, None, time_scale=1.5) == {"cpu_s": 3.0, "wall_s": 6.0}
    assert problem_limits(None, None) is None and problem_limits(0.0, 0) is None


# --- open-r1/codeforces ----------------------------------------------------------------------------


@pytest.fixture
def openr1(tmp_path: Path) -> Path:
    return openr1_dataset(tmp_path / "codeforces")


def test_openr1_read_from_the_folder_as_downloaded(openr1: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "cf.jsonl"
    assert main(["datasets", "prepare", "openr1-codeforces", "--source", str(openr1), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "7 problems written" in printed and "(9 rows read)" in printed
    assert "1 skipped: not executable" in printed
    assert "1 skipped: official tests truncated and no generated test" in printed
    # its data/ folder alone finds the generated tests beside it
    problems = prepared("openr1-codeforces", openr1 / "data", tmp_path)
    assert sorted(problems) == ["1/A", "1/B", "1/C", "1/D", "2/A", "2/B", "4/A"]


def test_openr1_hidden_tests_are_official_then_generated(openr1: Path, tmp_path: Path) -> None:
    problems = prepared("openr1-codeforces", openr1, tmp_path)
    # the one official test Codeforces showed, then the generated ones in test_case_i order
    assert [test["input"] for test in problems["1/C"]["hidden_tests"]] == [
        "3\n1 2 3\n", "1\n7\n", "4\n1 2 3 4\n", "5\n1 1 1 1 1\n",
    ]  # fmt: skip
    assert len(problems["1/A"]["hidden_tests"]) == 3  # two official, one generated
    assert len(prepared("openr1-codeforces", openr1, tmp_path, max_hidden=2)["1/C"]["hidden_tests"]) == 2


def test_openr1_without_its_generated_tests_skips_the_truncated_problems(
    openr1: Path, tmp_path: Path
) -> None:
    alone = tmp_path / "alone"
    (openr1 / "data").rename(alone)
    problems = prepared("openr1-codeforces", alone, tmp_path)
    assert "1/C" not in problems  # one official test of four: a wrong program would pass it
    assert len(problems["1/A"]["hidden_tests"]) == 2  # complete official tests: judged on them


def test_openr1_line_ends_are_read_as_its_runner_reads_them(openr1: Path, tmp_path: Path) -> None:
    problems = prepared("openr1-codeforces", openr1, tmp_path)
    assert problems["1/C"]["hidden_tests"][0] == {"input": "3\n1 2 3\n", "output": "6\n"}
    assert problems["1/D"]["hidden_tests"] == [{"input": "hello\n", "output": "5\n"}]
    assert strip_cr("a\r\r\nb\r") == "a\r\nb"  # sed 's/\r$//': one \r at each line's end


def test_openr1_judges_limits_and_files(openr1: Path, tmp_path: Path) -> None:
    problems = prepared("openr1-codeforces", openr1, tmp_path, time_scale=2.0)
    checker = {"type": "program", "language": "python", "protocol": "openr1"}
    assert problems["1/A"]["checker"] == checker | {"code": SHUFFLE_CHECKER}
    assert problems["1/D"]["checker"] == checker | {"code": LENGTH_CHECKER}
    assert problems["1/B"]["checker"] == "auto"  # the statement decides: any of them -> judge_error
    assert (
        problems["2/A"]["checker"]["type"] == "missing"
        and "interactive" in problems["2/A"]["checker"]["reason"]
    )
    assert problems["2/B"]["files"] == {"input": "input.txt", "output": "output.txt"}
    assert problems["2/B"]["checker"] == "auto"  # judged, not marked unjudgeable
    assert problems["1/A"]["limits"] == {"cpu_s": 2.0, "wall_s": 4.0, "memory_mb": 256}  # 1 s, scaled 2x
    assert problems["4/A"]["limits"] == {"cpu_s": 1.0, "wall_s": 2.0, "memory_mb": 64}
    assert "Input\n\nn, then n numbers" in problems["1/A"]["description"]


# --- ByteDance-Seed/Code-Contests-Plus -------------------------------------------------------------


def test_codecontests_plus_keeps_its_checker_limits_and_submissions_in_every_language(tmp_path: Path) -> None:
    (problem,) = prepared("codecontests-plus", ccplus_dataset(tmp_path), tmp_path).values()
    assert problem["checker"] == {
        "type": "program",
        "language": "cpp",
        "protocol": "testlib",
        "code": TESTLIB_SHUFFLE,
    }
    assert problem["limits"] == {"cpu_s": 1.0, "wall_s": 2.0, "memory_mb": 256}  # 1000 ms, 256 MB
    assert problem["solutions"] == [
        {"language": "python", "code": REVERSED},
        {"language": "cpp", "code": REVERSED_CPP},
        {"language": "java", "code": REVERSED_JAVA},
    ]
    assert [s["language"] for s in problem["incorrect_solutions"]] == ["python", "python"]


# --- BAAI/TACO and codeparrot/apps -----------------------------------------------------------------


@pytest.mark.parametrize("shards", [{"train": 2, "test": 1}, {"train": 1, "test": 2}])
def test_taco_read_from_its_own_arrow_files(tmp_path: Path, shards: dict[str, int]) -> None:
    problems = prepared("taco", taco_save_to_disk(tmp_path / "TACO", shards), tmp_path)
    assert sorted(problems) == ["test/0", "test/1", "test/2", "train/0", "train/1"]  # split/rank
    call, stdin = problems["train/0"], problems["train/1"]  # train/1: a row with null name and url
    assert call["fn_name"] == "pair_sum" and "checker" not in call
    assert call["hidden_tests"] == [{"input": [1, 2], "output": 3}, {"input": [[3], 4], "output": [3, 4]}]
    assert call["limits"] == {"cpu_s": 1.0, "wall_s": 2.0, "memory_mb": 256}
    assert stdin["hidden_tests"] == [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "3\n4\n", "output": "7\n"},
    ]
    assert "limits" not in stdin  # null limits: the env's defaults
    assert problems["test/0"]["limits"] == {"cpu_s": 2.0, "wall_s": 4.0, "memory_mb": 64}
    assert problems["test/2"]["limits"] == {"cpu_s": 0.5, "wall_s": 1.5, "memory_mb": 256}
    assert "limits" not in problems["test/1"]  # "None"


def test_taco_uses_its_special_judge_list(tmp_path: Path) -> None:
    source = taco_save_to_disk(tmp_path / "TACO")
    problems = prepared("taco", source, tmp_path)
    assert problems["test/0"]["checker"] == {"type": "tokens", "case_insensitive": True}
    assert problems["test/1"]["checker"]["type"] == "missing"
    assert problems["test/2"]["checker"] == "float:1e-05"  # numpy.allclose's relative 1e-5
    assert problems["train/1"]["checker"] == "auto"  # the list numbers the test split only
    (source / "output_spj.jsonl").unlink()
    assert prepared("taco", source, tmp_path)["test/0"]["checker"] == "auto"
    listed = tmp_path / "spj.jsonl"
    listed.write_text(json.dumps({"idx": 2, "special_judge": False, "case": 0}) + "\n")
    assert prepared("taco", source, tmp_path, special_judge=str(listed))["test/2"]["checker"] == "auto"
    listed.write_text("not json\n")
    with pytest.raises(DatasetError, match="not TACO's special-judge list"):
        prepared("taco", source, tmp_path, special_judge=str(listed))


def test_taco_read_from_an_arrow_file_of_its_cache_and_its_parquet_conversion(tmp_path: Path) -> None:
    from dataset_layouts import TACO_SCHEMA, taco_rows, write_parquet

    cached = tmp_path / "cache" / "taco-test-00000-of-00001.arrow"  # `datasets`' cache names its files so
    cached.parent.mkdir()
    write_arrow_stream(cached, taco_rows()["test"])
    assert sorted(prepared("taco", cached.parent, tmp_path)) == ["test/0", "test/1", "test/2"]
    converted = write_parquet(
        tmp_path / "ALL" / "test-00000-of-00001.parquet", TACO_SCHEMA, taco_rows()["test"]
    )
    assert sorted(prepared("taco", converted.parent, tmp_path)) == ["test/0", "test/1", "test/2"]


def test_an_arrow_file_in_the_ipc_file_format_is_read_too(tmp_path: Path) -> None:
    import pyarrow as pa
    from dataset_layouts import TACO_SCHEMA, taco_rows

    rows = taco_rows()["test"]
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in TACO_SCHEMA.names} for row in rows], TACO_SCHEMA
    )
    path = tmp_path / "test" / "data.arrow"
    path.parent.mkdir()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, TACO_SCHEMA) as writer:
        writer.write_table(table)
    assert sorted(prepared("taco", path.parent, tmp_path)) == ["test/0", "test/1", "test/2"]


def test_apps_lines_read_as_taco(tmp_path: Path) -> None:
    (problem,) = prepared("apps", apps_dataset(tmp_path / "apps"), tmp_path).values()
    assert problem["id"] == "4012" and problem["hidden_tests"][0] == {"input": "1 2\n", "output": "3\n"}


# --- livecodebench/code_generation_lite ------------------------------------------------------------


def test_livecodebench_grades_on_public_and_private_tests(tmp_path: Path) -> None:
    problems = prepared("livecodebench", lcb_dataset(tmp_path / "lcb"), tmp_path)
    functional, stdin = problems["3000"], problems["abc300_a"]
    assert functional["fn_name"] == "countPairs"
    # public then private (decoded from base64(zlib(pickle))), as get_evaluation_sample orders them
    assert functional["hidden_tests"] == [
        {"input": "[1, 2, 3]\n4", "output": 1},
        {"input": "[1, 1, 1]\n2", "output": 3},
        {"input": "[]\n0", "output": 0},
    ]
    assert functional["public_tests"] == [{"input": "[1, 2, 3]\n4", "output": 1}]
    assert stdin["hidden_tests"] == [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "5 5\n", "output": "10\n"},
    ]
    assert stdin["checker"] == "auto" and "limits" not in stdin


def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path) -> None:
    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (print, ("ran",))

    row = {"question_id": "x", "public_test_cases": "[]", "metadata": "{}",
           "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()}  # fmt: skip
    source = tmp_path / "test.jsonl"
    source.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match="only plain data"):
        prepare_source("livecodebench", source, tmp_path / "o.jsonl", SourceOptions())


# --- deepmind/code_contests ------------------------------------------------------------------------


def test_code_contests_limits_files_and_solutions_in_every_language(tmp_path: Path) -> None:
    source = code_contests_dataset(tmp_path / "code_contests")
    out = tmp_path / "cc.jsonl"
    options = PrepareOptions(max_solutions=5, time_scale=2.0)
    done = prepare_codecontests(source.parent.parent, out, options)
    assert (done.read, done.written) == (2, 2)
    plain, files = read_jsonl(out)
    assert plain["limits"] == {"cpu_s": 5.0, "wall_s": 10.0, "memory_mb": 256}  # 2.5 s scaled 2x
    assert "files" not in plain  # empty input_file and output_file: stdin and stdout
    assert files["files"] == {"input": "input.txt", "output": "output.txt"}
    assert files["limits"] == {"cpu_s": 2.0, "wall_s": 4.0, "memory_mb": 64}
    assert [s["language"] for s in plain["solutions"]] == ["python", "cpp"]  # Python 2 is not run
    assert plain["solutions"][0]["code"] == SUM
    assert files["solutions"] == [
        {"language": "java", "code": FILE_SUM_JAVA},
        {"language": "cpp", "code": FILE_SUM_CPP},
    ]
    for problem in (plain, files):
        Problem.model_validate(problem)


# --- what every reader shares --------------------------------------------------------------------------


def test_a_file_of_another_dataset_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="missing columns examples, official_tests"):
        prepare_source("openr1-codeforces", ccplus_dataset(tmp_path), tmp_path / "o.jsonl", SourceOptions())


def test_an_id_seen_before_is_written_once(openr1: Path, tmp_path: Path) -> None:
    # the card's `verifiable` config repeats rows of the default one; a folder holding both
    import shutil

    shutil.copytree(openr1 / "data", openr1 / "verifiable")
    out = tmp_path / "cf.jsonl"
    done = prepare_source("openr1-codeforces", openr1, out, SourceOptions())
    assert done.written == 7 and len({p["id"] for p in read_jsonl(out)}) == 7
    assert any("already written" in reason for reason in done.skipped)


def test_tests_past_the_farms_size_caps_are_left_out_and_counted(tmp_path: Path) -> None:
    from dataset_layouts import CCPLUS_SCHEMA, write_parquet

    from evalfarm.envs.datasets import MAX_TEST_CHARS

    tests = [{"input": "1\n", "output": "1\n"}, {"input": "x" * (MAX_TEST_CHARS + 1), "output": "2\n"}]
    source = write_parquet(tmp_path / "part-0.parquet", CCPLUS_SCHEMA, [{"id": "big", "test_cases": tests}])
    out = tmp_path / "big.jsonl"
    done = prepare_source("codecontests-plus", source, out, SourceOptions())
    assert done.tests_left_out == 1 and read_jsonl(out)[0]["hidden_tests"] == tests[:1]


def test_the_time_scale_is_checked_on_the_command_line(openr1: Path, tmp_path: Path, capsys: Any) -> None:
    argv = ["datasets", "prepare", "openr1-codeforces", "--source", str(openr1), "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit):
        main([*argv, "--time-scale", "0"])
    assert "a factor in (0, 100]" in capsys.readouterr().err
    assert main([*argv, "--time-scale", "1.5"]) == 0
    assert read_jsonl(tmp_path / "o")[0]["limits"]["cpu_s"] == 1.5
