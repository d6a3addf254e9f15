"""extract_code, output comparison and feedback formatting of the codecontests env: no sandbox needed."""

from __future__ import annotations

import pytest

from evalfarm.envs.codecontests import extract_code, format_feedback, normalize_output, outputs_match
from evalfarm.envs.codecontests.feedback import CLIP_CHARS, PublicOutcome, clip
from evalfarm.status import Status


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Here:\n```python\nprint(1)\n```\nDone.", "print(1)\n"),
        ("```py\nx = 1\nprint(x)\n```", "x = 1\nprint(x)\n"),
        ("```\nprint(2)\n```", "print(2)\n"),
        ("```Python3\nprint(3)\n```", "print(3)\n"),
        ("```cpp\nint main(){}\n```\n```python\nprint(4)\n```", "print(4)\n"),
        ("```python\nprint(5)\n```\n```python\nprint(6)\n```", "print(5)\n"),
        ("  ```python title=sol.py\nprint(7)\n  ```", "print(7)\n"),
        ("```python\nprint(8)\n", "print(8)\n"),  # cut off at a token limit
    ],
)
def test_extract_code_takes_the_first_python_block(text: str, expected: str) -> None:
    assert extract_code(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "print(1)",
        "",
        "```cpp\nint main(){}\n```",
        "```js\nx\n```\n```rust\nfn main(){}\n```",
        "```python\n```",
    ],
)
def test_extract_code_none_without_a_python_block(text: str) -> None:
    assert extract_code(text) is None


def test_extract_code_skips_a_whole_foreign_block_even_if_it_contains_fences() -> None:
    text = "```bash\necho hi\n```\ntext\n```python\nprint('ok')\n```"
    assert extract_code(text) == "print('ok')\n"


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("3\n", "3"),
        ("3", "3\n\n\n"),
        ("1 2 3   \n4\t\n", "1 2 3\n4\n"),
        ("a\r\nb\r\n", "a\nb\n"),
        ("a\rb", "a\nb"),
        (b"caf\xc3\xa9\n", "café"),
    ],
)
def test_outputs_match_after_normalisation(got: str | bytes, expected: str) -> None:
    assert outputs_match(got, expected)


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("1  2", "1 2"),  # whitespace between tokens is significant
        (" 1", "1"),  # so is leading whitespace
        ("\n1", "1"),  # and a leading blank line
        ("1\n\n2", "1\n2"),  # and blank lines between lines
        ("YES", "yes"),
        ("3.0", "3"),
    ],
)
def test_outputs_differ(got: str, expected: str) -> None:
    assert not outputs_match(got, expected)


def test_normalize_output_exact_rule() -> None:
    assert normalize_output(b"x \t\r\ny\f\v\r\n\n \n") == "x\ny"


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ("0.3333333", "0.333333333", True),
        ("1000000.5", "1000000.0", True),  # relative above 1
        ("0.0000010", "0.0000015", True),  # absolute below 1
        ("0.01", "0.02", False),
        ("1.0 2.0\n", "1 2", True),  # tokens, so spacing does not matter here
        ("1.0", "1 2", False),
        ("nan", "nan", True),  # equal strings
        ("nan", "1.0", False),
        ("inf", "1e308", False),
        ("YES 0.5", "YES 0.5000001", True),
        ("NO 0.5", "YES 0.5", False),
    ],
)
def test_float_tolerance(got: str, expected: str, ok: bool) -> None:
    assert outputs_match(got, expected, float_tolerance=1e-6) is ok


def _outcome(passed: bool, **kwargs: object) -> PublicOutcome:
    fields: dict = {"status": Status.OK if passed else Status.WRONG_ANSWER, "wall_s": 0.0123}
    fields |= {"input": "1 2", "expected": "3", "got": "3" if passed else "4"} | kwargs
    return PublicOutcome(passed=passed, **fields)


def test_feedback_format() -> None:
    text = format_feedback([_outcome(True), _outcome(False, stderr="oops")])
    assert text == (
        "=== public test 1/2 [PASS | ok | 12 ms]\ninput:\n1 2\nexpected:\n3\ngot:\n3\n"
        "=== public test 2/2 [FAIL | wrong_answer | 12 ms]\ninput:\n1 2\nexpected:\n3\ngot:\n4\n"
        "stderr:\noops\n"
        "(public: 1/2 passed)\n"
    )


def test_feedback_counts_tests_not_run() -> None:
    outcome = _outcome(False, status=Status.SYNTAX_ERROR, got="")
    assert format_feedback([outcome], total=3).endswith("(public: 0/3 passed)\n")


def test_feedback_clips_every_field() -> None:
    big = "x" * 10_000
    text = format_feedback([_outcome(False, input=big, expected=big, got=big, stderr=big)])
    assert len(text) < 5 * (CLIP_CHARS + 100)
    assert text.count("9488 more characters clipped") == 4
    assert clip("abc", 2) == "ab... [1 more characters clipped]"
