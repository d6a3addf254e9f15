"""The comparisons of `envs/codecontests/checkers.py`, held to testlib's own verdicts and to the cases a
real judge gets right: reals written other ways, whitespace, letter case, and the tricks that pass
a lenient comparison (Python's `float()` reads `1_000`; a relative tolerance forgives a count)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfarm.envs.codecontests.checkers import (
    EXACT,
    CheckerError,
    Comparison,
    NeedsChecker,
    ProgramChecker,
    double_compare,
    infer_checker,
    parse_checker,
    real,
    tokens_of,
    written_as_real,
)
from evalfarm.envs.codecontests.interactive import InteractorError, parse_interactor

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "testlib_golden.json").read_text())["cases"]

# testlib's standard checker -> the farm's comparison that follows it (on the cases it covers).
OURS = {
    "wcmp": parse_checker("tokens"),
    "lcmp": parse_checker("lines"),
    "nyesno": parse_checker("yesno"),
    "uncmp": parse_checker("unordered_tokens"),
    "rcmp4": parse_checker("float:1e-4"),
    "rcmp6": parse_checker("float:1e-6"),
    "rcmp9": parse_checker("float:1e-9"),
    "rncmp": parse_checker("float_abs:1.5e-5"),
}
FLOAT_CHECKERS = {"rcmp4", "rcmp6", "rcmp9", "rncmp"}


def covered(case: dict[str, object]) -> bool:
    """A case where testlib gives a verdict (not FAIL on its own answer) and the farm's rule is
    testlib's: tolerances apply only to answers written as reals (a count compares exactly)."""
    if case["exit"] == 3:
        return False
    if case["checker"] in FLOAT_CHECKERS:
        return all(written_as_real(token) for token in tokens_of(str(case["answer"])))
    return True


CASES = [case for case in GOLDEN if covered(case)]


def test_the_golden_file_covers_every_rule() -> None:
    assert {case["checker"] for case in CASES} == set(OURS)
    assert len(CASES) > 2000


@pytest.mark.parametrize("checker", sorted(OURS))
def test_each_comparison_gives_testlibs_verdicts(checker: str) -> None:
    wrong = [
        (case["answer"], case["output"], case["exit"])
        for case in CASES
        if case["checker"] == checker
        and OURS[checker].accepts(str(case["output"]), str(case["answer"])) != (case["exit"] == 0)
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("checker", "expected", "got"),
    [
        ("float:1e-6", "0.333333", "0.3333333333"),
        ("float:1e-6", "2.500000000", "2.5"),
        ("float:1e-6", "3.0", "3"),
        ("float:1e-6", "0.000000123", "1.23e-07"),
        ("float:1e-6", "0.0", "-0.0"),
        ("float:1e-6", "1000000.0", "1000000.5"),  # relative error 5e-7
        ("float:1e-6", "0.5 7 x", "0.5000001 7 x"),  # reals, an integer, a word
        ("float_abs:1e-6", "1.0", "1.000001"),
        ("float_rel:1e-6", "1000000.0", "1000001.0"),
        ("tokens", "1 2\n3", "1  2 3"),
        ("tokens", "1 2 3", "1\n2\n3\n"),
        ("tokens", "1 2", "\n1\t2"),
        ("tokens", "1 2", "1 2\r\n"),
        ("lines", "1 2\n3", "1   2\n3\n\n"),
        ("yesno", "YES", "yes"),
        ("yesno", "NO\nYES", "no yEs"),
        ("unordered_tokens", "1 2 3", "3 1 2"),
        ("unordered_lines", "1 2\n3 4", "3 4\n1  2"),
        ("exact", "1 2", "1 2   \n\n"),
    ],
)
def test_a_correct_answer_written_another_way_is_accepted(checker: str, expected: str, got: str) -> None:
    assert parse_checker(checker).accepts(got, expected)


@pytest.mark.parametrize(
    ("checker", "expected", "got"),
    [
        ("float:1e-6", "1000.5", "1_000.500"),  # Python's float() reads it; testlib does not
        ("float:1e-6", "1000000", "1000001"),  # a count: relative error 1e-6, still wrong
        ("float:1e-6", "5", "5.0"),  # an integer answer compares exactly
        ("float:1e-6", "1.5", "inf"),
        ("float:1e-6", "1.5", "nan"),
        ("float:1e-6", "1.5", "0x1.8p0"),
        ("float:1e-6", "2.5", "\uff12.\uff15"),  # fullwidth digits: float() reads them, testlib ASCII only
        ("float:1e-6", "2.5", "\u0662.\u0665"),  # Arabic-Indic digits
        ("float:1e-6", "2.5", "2.\uff15"),
        ("float:1e-6", "1.0", "1.0000011"),
        ("float:1e-6", "0.5 0.5", "0.5"),
        ("float_abs:1e-6", "1000000.0", "1000000.5"),  # relative error only
        ("float_rel:1e-6", "0.0", "1e-9"),  # absolute error only
        ("tokens", "1 2", "1 2 3"),
        ("tokens", "a b", "a\vb"),  # a vertical tab is part of a token, as in testlib
        ("lines", "1 2\n3", "1\n2 3"),
        ("lines", "1", "1\n2"),
        ("yesno", "YES", "NO"),
        ("tokens", "YES", "yes"),
        ("unordered_tokens", "1 2 2", "1 1 2"),
        ("exact", "1 2", "1  2"),
    ],
)
def test_a_wrong_answer_is_refused(checker: str, expected: str, got: str) -> None:
    assert not parse_checker(checker).accepts(got, expected)


def test_testlibs_numbers_and_its_comparison() -> None:
    assert [real(t) for t in ("1e", "5e+", ".5", "5.", "+1.5", "-0")] == [1.0, 5.0, 0.5, 5.0, 1.5, -0.0]
    assert [real(t) for t in ("nan", "inf", "1_0", "0x10", "1,5", "-", ".", "1.2.3", "")] == [None] * 9
    assert [real(t) for t in ("\uff12.\uff15", "\u0662", "1e\uff15", "\uff11")] == [None] * 4
    assert real("1e400") == float("inf")
    assert double_compare(1.0, 1.000001, 1e-6) and not double_compare(1.0, 1.0000011, 1e-6)
    assert double_compare(0.0, 1e-6, 1e-6) and not double_compare(0.0, 1.000001e-6, 1e-6)
    assert double_compare(float("inf"), 1e301, 1e-6) and not double_compare(float("inf"), -1e301, 1e-6)
    assert written_as_real("3.0") and written_as_real("1e5") and not written_as_real("3")


def test_names_objects_and_the_name_results_carry() -> None:
    assert parse_checker(None) is EXACT and EXACT.name == "exact"
    assert parse_checker("float:1e-6").name == "float:1e-06"
    assert parse_checker(None, float_tolerance=1e-6).name == "float:1e-06"  # the old field, an alias
    assert parse_checker("yesno").name == "yesno"
    combined = parse_checker({"type": "tokens", "case_insensitive": True, "float": 1e-6})
    assert combined.name == "tokens,case_insensitive,float:1e-06"
    assert combined.accepts("YES 0.5000001", "yes 0.5")
    program = parse_checker(
        {"type": "program", "language": "cpp", "code": "int main(){}", "protocol": "kattis"}
    )
    assert isinstance(program, ProgramChecker) and program.name == "program:kattis"


@pytest.mark.parametrize(
    ("spec", "tolerance", "message"),
    [
        ("tokens", 1e-6, "give one"),
        ("nope", None, "unknown checker"),
        ("float:abc", None, "not a number"),
        ("float:2", None, "must be in (0, 1)"),
        ({"type": "words"}, None, "checker.type"),
        ({"type": "tokens", "float": 1e-6, "float_abs": 1e-6}, None, "give one of"),
        ({"type": "unordered_tokens", "float": 1e-6}, None, "needs an order"),
        ({"type": "tokens", "caseinsensitive": True}, None, "unknown field"),
        ({"type": "program", "language": "cobol", "code": "x"}, None, "checker.language"),
        ({"type": "program", "code": "x", "protocol": "hackerrank"}, None, "checker.protocol"),
        ({"type": "program", "code": ""}, None, "checker.code"),
        (["tokens"], None, "a name or an object"),
    ],
)
def test_a_checker_that_cannot_be_applied_is_refused(
    spec: object, tolerance: float | None, message: str
) -> None:
    with pytest.raises(CheckerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_checker(spec, tolerance)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"code": "x", "checker": "tokens"}, "interactor: unknown field 'checker'"),
        ({"code": "x", "language": "java"}, "interactor.language: 'java' is not one of python, cpp"),
        ({"code": "x", "protocol": "openr1"}, "interactor.protocol: 'openr1' is not one of testlib"),
        ({"code": " "}, "interactor.code: the interactor's source is required"),
        ({"code": "x" * ((1 << 20) + 1)}, "interactor.code: longer than"),
    ],
)
def test_an_interactor_that_cannot_be_run_is_refused(spec: dict[str, object], message: str) -> None:
    with pytest.raises(InteractorError, match=message):
        parse_interactor(spec)
    assert parse_interactor({"code": "int main(){}"}).language == "cpp"  # the default


@pytest.mark.parametrize(
    ("statement", "chosen"),
    [
        (
            "Your answer is correct if its absolute or relative error does not exceed $10^{-6}$.",
            "auto:float:1e-06",
        ),
        ("The answer is accepted if the relative or absolute error is at most 1e-9.", "auto:float:1e-09"),
        ("Print the area; an absolute error not exceeding 10^{-4} is allowed.", "auto:float_abs:0.0001"),
        ("The relative error must be less than 10^-5.", "auto:float_rel:1e-05"),
        ("You may print every letter in any case (upper or lower).", "auto:yesno"),
        ("If there are multiple answers, print any of them.", "auto:needs_checker"),
        ("Print the sum of the numbers.", "auto:tokens"),
    ],
)
def test_auto_reads_the_statement(statement: str, chosen: str) -> None:
    checker = parse_checker("auto", statement=statement)
    assert checker.name == chosen
    assert isinstance(checker, NeedsChecker) == (chosen == "auto:needs_checker")


def test_auto_with_a_tolerance_judges_reals_by_it() -> None:
    checker = infer_checker("absolute or relative error does not exceed 10^{-6}")
    assert isinstance(checker, Comparison) and checker.accepts("0.3333333", "0.333333")
