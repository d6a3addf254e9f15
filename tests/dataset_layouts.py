"""Small copies of the six datasets, in their real layouts and encodings, written from what their
published schemas say (no fetched data file is kept here): each fact's source is named beside it.
Used by test_dataset_sources.py (what `prepare` reads) and test_dataset_lint.py (what `lint` judges).
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TESTS = pa.list_(pa.struct([("input", pa.string()), ("output", pa.string())]))
SUBMISSIONS = pa.list_(pa.struct([("code", pa.string()), ("language", pa.string())]))


def write_parquet(path: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    full = [{name: row.get(name) for name in schema.names} for row in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=schema), path)
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# Programs shared by the datasets' solutions.
REVERSED = "input()\nprint(*reversed(input().split()))\n"
REVERSED_CPP = r"""
#include <cstdio>
#include <vector>
int main() {
    int n;
    scanf("%d", &n);
    std::vector<int> a(n);
    for (int &x : a) scanf("%d", &x);
    for (int i = n - 1; i >= 0; i--) printf("%d ", a[i]);
    puts("");
}
"""
REVERSED_JAVA = """
import java.util.*;
public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = in.nextInt();
        StringBuilder out = new StringBuilder();
        for (int i = n - 1; i >= 0; i--) out.append(a[i]).append(' ');
        System.out.println(out.toString().trim());
    }
}
"""
SUM = "import sys\nprint(sum(map(int, sys.stdin.read().split()[1:])))\n"
SUM_CPP = r"""
#include <cstdio>
int main() {
    int n;
    long long total = 0, x;
    scanf("%d", &n);
    for (int i = 0; i < n; i++) { scanf("%lld", &x); total += x; }
    printf("%lld\n", total);
}
"""
SUM_OF_THREE = "import sys\nprint(sum(map(int, sys.stdin.read().split()[1:4])))\n"  # right while n <= 3


def burning(seconds: float, then: str) -> str:
    """A program that spends `seconds` of CPU, then does `then`: right, and too slow."""
    return f"import time\nwhile time.process_time() < {seconds}:\n    pass\n{then}"


# --- open-r1/codeforces ----------------------------------------------------------------------------
# The columns and types: the dataset card's `dataset_info.features` (huggingface.co/datasets/
# open-r1/codeforces, README.md): `time_limit` and `memory_limit` float64 (seconds, MB),
# `official_tests` a list of {input, output}, `official_tests_complete` bool, `input_mode` string
# ("stdio" or "file"), `generated_checker` string, `executable` bool, `generated_tests` int64 (a count).
OPENR1_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("aliases", pa.list_(pa.string())), ("contest_id", pa.string()),
        ("contest_name", pa.string()), ("contest_type", pa.string()), ("contest_start", pa.int64()),
        ("contest_start_year", pa.int64()), ("index", pa.string()), ("time_limit", pa.float64()),
        ("memory_limit", pa.float64()), ("title", pa.string()), ("description", pa.string()),
        ("input_format", pa.string()), ("output_format", pa.string()), ("interaction_format", pa.string()),
        ("note", pa.string()), ("examples", TESTS), ("editorial", pa.string()), ("rating", pa.int64()),
        ("tags", pa.list_(pa.string())), ("testset_size", pa.int64()), ("official_tests", TESTS),
        ("official_tests_complete", pa.bool_()), ("input_mode", pa.string()),
        ("generated_checker", pa.string()), ("executable", pa.bool_()), ("generated_tests", pa.int64()),
    ]
)  # fmt: skip
# generated_tests/test_cases_{contest:04d}.parquet: open-r1's scorer reads it and groups its rows by
# `problem_id`, taking `input` and `output` (src/open_r1/utils/competitive_programming/cf_scoring.py,
# get_generated_contest_tests); the dataset card names the rank column `test_case_i`.
GENERATED_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("input", pa.string()),
        ("output", pa.string()),
        ("test_case_i", pa.int64()),
    ]
)
# A generated checker under open-r1's protocol: `checker.py input correct_output solution_output`,
# a pass printed as 1 (guipenedo/piston, packages/codeforces/1.0.0/run).
SHUFFLE_CHECKER = """
import sys
given, correct, output = (open(path).read().split() for path in sys.argv[1:4])
print(1 if sorted(output) == sorted(given[1:]) else 0)
"""
# It reads the test's input byte for byte: it counts a line's length as the runner gives it.
LENGTH_CHECKER = """
import sys
line = open(sys.argv[1], "rb").read().split(b"\\n")[0]
print(1 if open(sys.argv[3]).read().split() == [str(len(line))] else 0)
"""
LENGTH_CPP = r"""
#include <iostream>
#include <string>
int main() {
    std::string line;
    std::getline(std::cin, line);
    std::cout << line.size() << "\n";
}
"""
LENGTH_BYTES = "import sys\nprint(len(sys.stdin.buffer.readline().rstrip(b'\\n')))\n"
FILE_REVERSED = (
    "n, *a = open('input.txt').read().split()\nopen('output.txt', 'w').write(' '.join(reversed(a)))\n"
)


def openr1_row(problem_id: str, **fields: Any) -> dict[str, Any]:
    tests = [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}, {"input": "2\n5 4\n", "output": "5 4\n"}]
    contest, index = problem_id.split("/")
    return {
        "id": problem_id, "contest_id": contest, "index": index, "title": problem_id,
        "description": "Print the numbers in any order.", "input_format": "n, then n numbers",
        "output_format": "The numbers.", "examples": tests[:1], "official_tests": tests,
        "official_tests_complete": True, "input_mode": "stdio", "rating": 800, "time_limit": 1.0,
        "memory_limit": 256.0, "executable": True, "generated_tests": 0,
    } | fields  # fmt: skip


def openr1_dataset(root: Path) -> Path:
    """open-r1/codeforces as downloaded: `data/` (its parquet shards) and `generated_tests/`."""
    sums = [{"input": "3\r\n1 2 3\r\n", "output": "6\r\n"}]  # Codeforces' own tests end lines with \r\n
    rows = [
        openr1_row("1/A", generated_checker=SHUFFLE_CHECKER, generated_tests=1),
        openr1_row("1/B", description="Print the numbers. If there are several answers, print any of them."),
        openr1_row("2/A", interaction_format="Ask queries of the form '? x'."),
        openr1_row("2/B", input_mode="file", description="Read input.txt, write output.txt."),
        # truncated official tests (one shown by Codeforces), completed by three generated ones
        openr1_row("1/C", description="Print the sum.", official_tests=sums, official_tests_complete=False,
                   generated_tests=3, examples=[]),
        openr1_row("3/A", official_tests_complete=False, generated_tests=0),  # outside `verifiable`
        openr1_row("3/B", executable=False),  # outside `verifiable`
        openr1_row("1/D", description="Print the length of the line.", generated_checker=LENGTH_CHECKER,
                   official_tests=[{"input": "hello\r\n", "output": "5\r\n"}], examples=[]),
        openr1_row("4/A", description="Print the sum.", time_limit=0.5, memory_limit=64.0,
                   official_tests=[{"input": "2\n20 22\n", "output": "42\n"}], examples=[]),
    ]  # fmt: skip
    write_parquet(root / "data" / "train-00000-of-00001.parquet", OPENR1_SCHEMA, rows)
    generated = [
        {"problem_id": "1/C", "input": "4\n1 2 3 4\n", "output": "10\n", "test_case_i": 1},
        {"problem_id": "1/C", "input": "5\n1 1 1 1 1\n", "output": "5\n", "test_case_i": 2},
        {"problem_id": "1/A", "input": "4\n9 8 7 6\n", "output": "9 8 7 6\n", "test_case_i": 0},
        {"problem_id": "1/C", "input": "1\n7\n", "output": "7\n", "test_case_i": 0},
    ]
    write_parquet(root / "generated_tests" / "test_cases_0001.parquet", GENERATED_SCHEMA, generated)
    return root


# --- ByteDance-Seed/Code-Contests-Plus -------------------------------------------------------------
# Columns as the card lists them: `time_limit` in milliseconds and `memory_limit` in MB (integers),
# `checker` (testlib, C++), `correct_submissions` and `incorrect_submissions` ({code, language}),
# `test_cases` ({input, output}).
CCPLUS_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("source", pa.string()), ("title", pa.string()), ("description", pa.string()),
        ("time_limit", pa.int64()), ("memory_limit", pa.int64()), ("validator", pa.string()),
        ("generator", pa.string()), ("generator_cmd", pa.string()), ("checker", pa.string()),
        ("correct_submissions", SUBMISSIONS), ("incorrect_submissions", SUBMISSIONS), ("test_cases", TESTS),
    ]
)  # fmt: skip
TESTLIB_SHUFFLE = r"""
#include "testlib.h"
#include <algorithm>
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::vector<int> given(n), got(n);
    for (int i = 0; i < n; i++) given[i] = inf.readInt();
    for (int i = 0; i < n; i++) got[i] = ouf.readInt();
    std::sort(given.begin(), given.end());
    std::sort(got.begin(), got.end());
    if (given != got) quitf(_wa, "not a permutation of the input");
    quitf(_ok, "a permutation");
}
"""


def ccplus_dataset(root: Path) -> Path:
    tests = [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}, {"input": "2\n5 4\n", "output": "5 4\n"}]
    row = {
        "id": "1575A", "source": "codeforces", "title": "Shuffle", "description": "Any order.",
        "time_limit": 1000, "memory_limit": 256, "checker": TESTLIB_SHUFFLE, "test_cases": tests,
        "correct_submissions": [
            {"code": REVERSED, "language": "py3"},
            {"code": REVERSED_CPP, "language": "cpp"},
            {"code": REVERSED_JAVA, "language": "java"},
        ],
        "incorrect_submissions": [
            {"code": "input()\nprint(1)\n", "language": "py3"},
            {"code": burning(2.5, REVERSED), "language": "py3"},  # right, and 2.5x over its 1000 ms
        ],
    }  # fmt: skip
    return write_parquet(root / "part-00000-of-00010.parquet", CCPLUS_SCHEMA, [row])


# --- BAAI/TACO -------------------------------------------------------------------------------------
# Every column is a string (the card's `features`); `input_output` and `solutions` are JSON, the
# limits are text or null ("1 second", "256 megabytes"). BAAI/TACO ships `train/data-0000X-of-00009
# .arrow` and `test/data-00000-of-00001.arrow`: `datasets` `save_to_disk` folders, Arrow IPC stream
# files listed in each folder's `state.json` (`_data_files`, `_split`), beside `dataset_info.json`
# (huggingface/datasets, arrow_dataset.py: save_to_disk).
TACO_COLUMNS = (
    "question", "solutions", "starter_code", "input_output", "difficulty", "raw_tags", "name", "source",
    "tags", "skill_types", "url", "Expected Auxiliary Space", "time_limit", "date", "picture_num",
    "memory_limit", "Expected Time Complexity",
)  # fmt: skip
TACO_SCHEMA = pa.schema([(name, pa.string()) for name in TACO_COLUMNS])
PAIR_SUM = "def pair_sum(a, b):\n    return a + [b] if isinstance(a, list) else a + b\n"
EVEN = "print('yes' if int(input()) % 2 == 0 else 'no')\n"
THIRD = "a, b = map(int, input().split())\nprint(f'{a / b:.7f}')\n"


def taco_rows() -> dict[str, list[dict[str, Any]]]:
    call = {"fn_name": "pair_sum", "inputs": [[1, 2], [[3], 4]], "outputs": [[3], [[3, 4]]]}
    stdin = {"inputs": ["1 2\n", ["3", "4"]], "outputs": [["3"], "7\n"]}
    train = [
        {"question": "Return a + b, or the list with b appended.", "name": "pair", "url": "https://x/pair",
         "starter_code": "def pair_sum(a, b):\n", "input_output": json.dumps(call), "difficulty": "EASY",
         "solutions": json.dumps([PAIR_SUM]), "time_limit": "1 second", "memory_limit": "256 megabytes"},
        {"question": "Print the sum of the numbers.", "name": None, "url": None, "starter_code": "",
         "input_output": json.dumps(stdin), "difficulty": "EASY", "time_limit": None, "memory_limit": None,
         "solutions": json.dumps(["import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"])},
    ]  # fmt: skip
    test = [
        {"question": "Print YES if n is even, NO otherwise.", "name": "even", "difficulty": "EASY",
         "input_output": json.dumps({"inputs": ["4\n", "7\n"], "outputs": ["YES\n", "NO\n"]}),
         "solutions": json.dumps([EVEN]), "time_limit": "2.0 seconds", "memory_limit": "64.0 megabytes"},
        {"question": "Print any divisor of n.", "name": "divisor", "difficulty": "EASY",
         "input_output": json.dumps({"inputs": ["6\n"], "outputs": ["2\n"]}),
         "solutions": json.dumps(["print(int(input()))\n"]), "time_limit": "None", "memory_limit": "None"},
        {"question": "Print a / b.", "name": "third", "difficulty": "EASY",
         "input_output": json.dumps({"inputs": ["1 3\n"], "outputs": ["0.3333333333\n"]}),
         "solutions": json.dumps([THIRD]), "time_limit": "500 ms", "memory_limit": "256 megabytes"},
    ]  # fmt: skip
    return {"train": train, "test": test}


def write_arrow_stream(path: Path, rows: list[dict[str, Any]], schema: pa.Schema = TACO_SCHEMA) -> None:
    full = [{name: row.get(name) for name in schema.names} for row in rows]
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(pa.Table.from_pylist(full, schema=schema))


def taco_save_to_disk(root: Path, shards: dict[str, int] | None = None) -> Path:
    """TACO as `save_to_disk` writes it (BAAI/TACO's own files): a folder per split, its Arrow stream
    shards in the order `state.json` lists them, and TACO's special-judge list beside them
    (FlagOpen/TACO, output_spj.jsonl: `idx` in the test split, `special_judge`, `case`)."""
    shards = shards or {"train": 2, "test": 1}
    (root).mkdir(parents=True, exist_ok=True)
    (root / "dataset_dict.json").write_text(json.dumps({"splits": list(shards)}))
    for split, rows in taco_rows().items():
        folder = root / split
        folder.mkdir()
        count = shards[split]
        names = [f"data-{index:05d}-of-{count:05d}.arrow" for index in range(count)]
        per = -(-len(rows) // count)
        for index, name in enumerate(names):
            write_arrow_stream(folder / name, rows[index * per : (index + 1) * per])
        state = {
            "_data_files": [{"filename": name} for name in names], "_fingerprint": f"{split}0000",
            "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
            "_output_all_columns": False, "_split": split,
        }  # fmt: skip
        (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
        (folder / "dataset_info.json").write_text(
            json.dumps({"features": {c: {"dtype": "string"} for c in TACO_COLUMNS}})
        )
    spj = [
        {"idx": 0, "special_judge": True, "case": 2},  # case-insensitive comparison
        {"idx": 1, "special_judge": True, "case": 1},  # answers that are not unique
        {"idx": 2, "special_judge": True, "case": 3},  # reals within a tolerance
    ]
    (root / "output_spj.jsonl").write_text("".join(json.dumps(line) + "\n" for line in spj))
    return root


# --- codeparrot/apps -------------------------------------------------------------------------------


def apps_dataset(root: Path) -> Path:
    """APPS as JSON lines (codeparrot/apps' `test.jsonl`): an integer `problem_id`, the rest strings."""
    row = {
        "problem_id": 4012, "question": "Sum.", "starter_code": "", "difficulty": "introductory",
        "url": "https://codeforces.com/problemset/problem/1/A",
        "input_output": json.dumps({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}),
        "solutions": json.dumps(["print(sum(map(int, input().split())))\n"]),
    }  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "test.jsonl").write_text(json.dumps(row) + "\n")
    return root / "test.jsonl"


# --- livecodebench/code_generation_lite ------------------------------------------------------------


def lcb_private(tests: list[dict[str, str]]) -> str:
    """LiveCodeBench's encoding of private tests: base64 of zlib of a pickled JSON string
    (LiveCodeBench, lcb_runner/benchmarks/code_generation.py: CodeGenerationProblem.__post_init__)."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def lcb_dataset(root: Path) -> Path:
    functional = {
        "question_title": "Two Sum Count", "question_content": "Count pairs summing to target.",
        "platform": "leetcode", "question_id": "3000", "contest_id": "weekly-1",
        "contest_date": "2024-01-01T00:00:00", "difficulty": "easy",
        "starter_code": "class Solution:\n    def countPairs(self, nums: List[int], target: int) -> int:\n",
        "public_test_cases": json.dumps([{"input": "[1, 2, 3]\n4", "output": "1", "testtype": "functional"}]),
        "private_test_cases": lcb_private(
            [{"input": "[1, 1, 1]\n2", "output": "3", "testtype": "functional"},
             {"input": "[]\n0", "output": "0", "testtype": "functional"}]
        ),
        "metadata": json.dumps({"func_name": "countPairs"}),
    }  # fmt: skip
    stdin = {
        "question_title": "A+B", "question_content": "Print a+b.", "platform": "atcoder",
        "question_id": "abc300_a", "contest_id": "abc300", "contest_date": "2024-01-01T00:00:00",
        "difficulty": "easy", "starter_code": "",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
        "private_test_cases": lcb_private([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]),
        "metadata": "{}",
    }  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "test.jsonl").write_text(json.dumps(functional) + "\n" + json.dumps(stdin) + "\n")
    return root / "test.jsonl"


# --- deepmind/code_contests ------------------------------------------------------------------------
# deepmind/code_contests' contest_problem.proto: `time_limit` a google.protobuf.Duration (a
# {seconds, nanos} struct in the parquet shards), `memory_limit_bytes`, `input_file` and `output_file`
# ("Some problems expect specific files to be used instead"; empty otherwise), solutions'
# `language` an enum (1 Python 2, 2 C++, 3 Python 3, 4 Java).
CODE_CONTESTS_TESTS = pa.struct([("input", pa.list_(pa.string())), ("output", pa.list_(pa.string()))])
CODE_CONTESTS_SOLUTIONS = pa.struct([("language", pa.list_(pa.int64())), ("solution", pa.list_(pa.string()))])
CODE_CONTESTS_SCHEMA = pa.schema(
    [
        ("name", pa.string()), ("description", pa.string()), ("public_tests", CODE_CONTESTS_TESTS),
        ("private_tests", CODE_CONTESTS_TESTS), ("generated_tests", CODE_CONTESTS_TESTS),
        ("source", pa.int64()), ("difficulty", pa.int64()), ("solutions", CODE_CONTESTS_SOLUTIONS),
        ("incorrect_solutions", CODE_CONTESTS_SOLUTIONS), ("cf_contest_id", pa.int64()),
        ("cf_index", pa.string()), ("cf_points", pa.float32()), ("cf_rating", pa.int32()),
        ("cf_tags", pa.list_(pa.string())), ("is_description_translated", pa.bool_()),
        ("untranslated_description", pa.string()),
        ("time_limit", pa.struct([("seconds", pa.int64()), ("nanos", pa.int64())])),
        ("memory_limit_bytes", pa.int64()), ("input_file", pa.string()), ("output_file", pa.string()),
    ]
)  # fmt: skip
FILE_SUM_JAVA = """
import java.io.*;
import java.util.*;
public class Main {
    public static void main(String[] args) throws IOException {
        Scanner in = new Scanner(new File("input.txt"));
        int n = in.nextInt();
        long total = 0;
        for (int i = 0; i < n; i++) total += in.nextLong();
        try (PrintWriter out = new PrintWriter("output.txt")) { out.println(total); }
    }
}
"""
FILE_SUM_CPP = r"""
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    freopen("output.txt", "w", stdout);
    int n;
    long long total = 0, x;
    scanf("%d", &n);
    for (int i = 0; i < n; i++) { scanf("%lld", &x); total += x; }
    printf("%lld\n", total);
}
"""


def code_contests_dataset(root: Path) -> Path:
    def tests(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
        return {"input": [i for i, _ in pairs], "output": [o for _, o in pairs]}

    sums = [("3\n1 2 3\n", "6\n"), ("2\n20 22\n", "42\n"), ("5\n1 1 1 1 1\n", "5\n")]
    rows = [
        {"name": "1_A. Sum", "description": "Print the sum.", "public_tests": tests(sums[:1]),
         "private_tests": tests(sums[1:2]), "generated_tests": tests(sums[2:]), "source": 2, "difficulty": 7,
         "time_limit": {"seconds": 2, "nanos": 500_000_000}, "memory_limit_bytes": 256 << 20,
         "input_file": "", "output_file": "",
         "solutions": {"language": [1, 3, 2], "solution": ["print sum", SUM, SUM_CPP]},
         "incorrect_solutions": {"language": [3], "solution": [SUM_OF_THREE]}},
        # an old round that reads input.txt and writes output.txt
        {"name": "2_B. File sum", "description": "Read input.txt, write output.txt.",
         "public_tests": tests(sums[:1]), "private_tests": tests(sums[1:]), "generated_tests": tests([]),
         "source": 2, "difficulty": 8, "time_limit": {"seconds": 1, "nanos": 0},
         "memory_limit_bytes": 64 << 20, "input_file": "input.txt", "output_file": "output.txt",
         "solutions": {"language": [4, 2], "solution": [FILE_SUM_JAVA, FILE_SUM_CPP]},
         "incorrect_solutions": {"language": [3], "solution": [SUM]}},  # reads stdin: nothing there
    ]  # fmt: skip
    return write_parquet(root / "data" / "test-00000-of-00001.parquet", CODE_CONTESTS_SCHEMA, rows)
