"""How a test's output is judged: the problem's `checker`, parsed once, applied to every test.

Comparisons (pure functions of the program's output and the expected output, in the worker):

- `exact` (the default): lines after unifying line endings, removing trailing blanks of each line and
  empty lines at the end (`compare.normalize_output`); everything else is significant.
- `tokens`: testlib's wcmp: the outputs' tokens, separated by spaces, tabs, CRs and LFs (testlib's
  four blanks; a form feed is part of a token), equal one for one.
- `lines`: testlib's lcmp: line by line, each line's tokens equal; a missing line reads as empty,
  extra lines must be blank.
- `yesno`: `tokens`, letter case ignored.
- `float:E`, `float_abs:E`, `float_rel:E`: `tokens`, but where the expected token is written as a
  real number (testlib's syntax, with a `.` or an exponent), the output's token must be a real of
  the same syntax within E: absolute or relative error (testlib's doubleCompare), absolute only,
  relative only. An integer-looking expected token compares exactly: a count off by one is wrong.
  testlib's reals: `[+-]?(digits[.digits]|.digits)([eE][+-]?digits)?`, in ASCII digits; `nan`,
  `inf`, `1_000`, `0x1p3`, and fullwidth or other scripts' digits are not reals.
- `unordered_tokens`, `unordered_lines`: the same multisets of tokens, of non-blank lines (as tokens).
- `auto`: chosen from the problem's statement: a tolerance sentence ("absolute or relative error
  ... 10^{-6}") gives `float:E`, "in any case" gives `yesno`, "print any of them" needs a checker
  program (the problem has none: `judge_error`, never a guess), else `tokens`.

An object combines them: `{"type": "tokens"|"lines"|"unordered_tokens"|"unordered_lines",
"case_insensitive": bool, "float": E | "float_abs": E | "float_rel": E}`. A checker program is
`{"type": "program", "language": "python"|"cpp", "code": ..., "protocol": "testlib"|"openr1"|"kattis"}`
(run in the sandbox by `envs.codecontests.judging`). Every judged result names the rule applied
(`checker`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from evalfarm.envs.codecontests.compare import normalize_output

PROTOCOLS = ("testlib", "openr1", "kattis")
CHECKER_LANGUAGES = ("python", "cpp")  # of checker and interactor programs
MAX_CHECKER_CHARS = 1 << 20  # a checker's or an interactor's source
_TYPES = ("tokens", "lines", "unordered_tokens", "unordered_lines")

# testlib's blanks: what separates tokens (a vertical tab or a form feed is part of a token).
_BLANKS = re.compile(r"[ \t\n\r]+")
# testlib's reals (stringToDouble): ASCII digits (Python's \d and float() take any script's, as a
# fullwidth 2.5), at most one point, an optional exponent whose digits may be missing (glibc's scanf
# reads "1e" as 1); no nan, inf, hex or underscores.
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]*)?")
_DANGLING_EXPONENT = re.compile(r"[eE][+-]?$")
_FUDGE = 1e-15  # testlib adds it to every tolerance
_INFINITE = 1e300  # testlib's __testlib_isInfinite


class CheckerError(ValueError):
    """A checker declaration that cannot be applied (an unknown name, a bad tolerance)."""


def real(token: str) -> float | None:
    """The value of `token` when it is a real in testlib's syntax, else None."""
    if _REAL.fullmatch(token) is None:
        return None
    return float(_DANGLING_EXPONENT.sub("", token))


def written_as_real(token: str) -> bool:
    """True when the expected token is a real written with a point or an exponent."""
    return real(token) is not None and any(c in token for c in ".eE")


def double_compare(expected: float, got: float, error: float) -> bool:
    """testlib's doubleCompare: absolute or relative error at most `error` (plus testlib's 1e-15);
    infinities (beyond 1e300) only match infinities of the same sign."""
    error += _FUDGE
    if math.isinf(expected) or abs(expected) > _INFINITE:
        return abs(got) > _INFINITE and (got > 0) == (expected > 0)
    if math.isnan(got) or abs(got) > _INFINITE:
        return False
    if abs(got - expected) <= error:
        return True
    low, high = sorted((expected * (1.0 - error), expected * (1.0 + error)))
    return low <= got <= high


def _absolute(expected: float, got: float, error: float) -> bool:
    """testlib's rncmp: absolute error only, as C compares it (two infinities of one sign differ
    by NaN, which is not more than the error)."""
    return not abs(got - expected) > error + _FUDGE


def _relative(expected: float, got: float, error: float) -> bool:
    if math.isinf(expected) or abs(expected) > _INFINITE:
        return abs(got) > _INFINITE and (got > 0) == (expected > 0)
    if abs(got) > _INFINITE:
        return False
    low, high = sorted((expected * (1.0 - error - _FUDGE), expected * (1.0 + error + _FUDGE)))
    return low <= got <= high


FLOAT_RULES: dict[str, Callable[[float, float, float], bool]] = {
    "float": double_compare,
    "float_abs": _absolute,
    "float_rel": _relative,
}


def tokens_of(text: str) -> list[str]:
    """testlib's tokens of `text`."""
    stripped = text.strip(" \t\n\r")
    return _BLANKS.split(stripped) if stripped else []


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A comparison of outputs, applied in the worker: one of the module's rules."""

    kind: str  # "exact" or one of _TYPES
    case_insensitive: bool = False
    tolerance: tuple[str, float] | None = None  # ("float" | "float_abs" | "float_rel", E)
    label: str | None = None  # the name results carry, when not the canonical one

    @property
    def name(self) -> str:
        """What results say was applied (`checker`)."""
        if self.label is not None:
            return self.label
        if self.kind == "tokens" and self.case_insensitive and self.tolerance is None:
            return "yesno"
        if self.kind == "tokens" and not self.case_insensitive and self.tolerance is not None:
            return f"{self.tolerance[0]}:{self.tolerance[1]:g}"
        parts = [self.kind]
        if self.case_insensitive:
            parts.append("case_insensitive")
        if self.tolerance is not None:
            parts.append(f"{self.tolerance[0]}:{self.tolerance[1]:g}")
        return ",".join(parts)

    def accepts(self, got: str | bytes, expected: str) -> bool:
        """True when the program's output `got` is accepted for the expected output."""
        if isinstance(got, bytes):
            got = got.decode("utf-8", "replace")
        if self.kind == "exact":
            return normalize_output(got) == normalize_output(expected)
        if self.kind == "tokens":
            return self._same_tokens(tokens_of(got), tokens_of(expected))
        if self.kind == "lines":
            return self._same_lines(got, expected)
        if self.kind == "unordered_tokens":
            return Counter(map(self._key, tokens_of(got))) == Counter(map(self._key, tokens_of(expected)))
        return Counter(self._line_keys(got)) == Counter(self._line_keys(expected))

    def _key(self, token: str) -> str:
        return token.casefold() if self.case_insensitive else token

    def _line_keys(self, text: str) -> list[tuple[str, ...]]:
        lines = text.replace("\r\n", "\n").split("\n")
        return [tuple(map(self._key, line.split())) for line in lines if line.split()]

    def _same_tokens(self, got: list[str], expected: list[str]) -> bool:
        if len(got) != len(expected):
            return False
        return all(self._same_token(g, e) for g, e in zip(got, expected, strict=True))

    def _same_token(self, got: str, expected: str) -> bool:
        if self.tolerance is not None and written_as_real(expected):
            value = real(got)
            rule, error = self.tolerance
            return value is not None and FLOAT_RULES[rule](real(expected) or 0.0, value, error)
        return self._key(got) == self._key(expected)

    def _same_lines(self, got: str, expected: str) -> bool:
        """testlib's lcmp: expected lines in order, each against the output's line of that number
        (missing: empty); then whatever the output has left must be blank."""
        wanted = _lines(expected)
        output = _lines(got)
        for number, line in enumerate(wanted):
            theirs = output[number] if number < len(output) else ""
            if not self._same_tokens(theirs.split(), line.split()):
                return False
        return all(not line.split() for line in output[len(wanted) :])


def _lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line
    return lines


@dataclasses.dataclass(frozen=True)
class ProgramChecker:
    """A checker program, run in the sandbox on each test (`envs.codecontests.judging`)."""

    language: str
    code: str
    protocol: str

    @property
    def name(self) -> str:
        """What results say was applied (`checker`)."""
        return f"program:{self.protocol}"


@dataclasses.dataclass(frozen=True)
class NeedsChecker:
    """A problem whose statement accepts any valid answer and which has no checker program: every
    judged test is `judge_error` (a comparison with one reference answer would be a guess)."""

    reason: str
    name: str = "auto:needs_checker"


Checker = Comparison | ProgramChecker | NeedsChecker

EXACT = Comparison("exact")


def parse_checker(spec: Any, float_tolerance: float | None = None, statement: str = "") -> Checker:
    """The checker a problem declares (`spec`: a name, an object, or None for the default);
    CheckerError naming what is wrong."""
    if spec is not None and float_tolerance is not None:
        raise CheckerError("checker and float_tolerance: give one (float_tolerance is float:E)")
    if spec is None:
        return EXACT if float_tolerance is None else _float_rule("float", float_tolerance)
    if isinstance(spec, str):
        return _named(spec, statement)
    if isinstance(spec, Mapping):
        return _from_object(spec)
    raise CheckerError(f"checker: a name or an object, not {type(spec).__name__}")


def _named(name: str, statement: str) -> Checker:
    if name == "exact":
        return EXACT
    if name in ("tokens", "lines", "unordered_tokens", "unordered_lines"):
        return Comparison(name)
    if name == "yesno":
        return Comparison("tokens", case_insensitive=True)
    if name == "auto":
        return infer_checker(statement)
    rule, _, value = name.partition(":")
    if rule in FLOAT_RULES and value:
        try:
            tolerance = float(value)
        except ValueError:
            raise CheckerError(f"checker: {name!r}: the tolerance is not a number") from None
        return _float_rule(rule, tolerance)
    known = "exact, tokens, lines, yesno, float:E, float_abs:E, float_rel:E, unordered_tokens, "
    known += "unordered_lines, auto"
    raise CheckerError(f"checker: unknown checker {name!r} (one of {known}, or an object)")


def _float_rule(rule: str, error: float) -> Comparison:
    if not (math.isfinite(error) and 0 < error < 1):
        raise CheckerError(f"checker: {rule}: the tolerance must be in (0, 1), not {error!r}")
    return Comparison("tokens", tolerance=(rule, error))


def _from_object(spec: Mapping[str, Any]) -> Checker:
    kind = spec.get("type")
    if kind == "program":
        return _program(spec)
    if kind == "missing":  # what a dataset reader writes for a problem its dataset cannot judge
        unknown = sorted(set(spec) - {"type", "reason"})
        if unknown:
            raise CheckerError(f"checker: unknown field {unknown[0]!r}")
        reason = spec.get("reason") or "the problem needs a checker it does not have"
        return NeedsChecker(str(reason)[:500], name="missing")
    if kind not in _TYPES:
        known = ", ".join((*_TYPES, "program", "missing"))
        raise CheckerError(f"checker.type: {kind!r} is not one of {known}")
    unknown = sorted(set(spec) - {"type", "case_insensitive", *FLOAT_RULES})
    if unknown:
        raise CheckerError(f"checker: unknown field {unknown[0]!r}")
    case_insensitive = spec.get("case_insensitive", False)
    if not isinstance(case_insensitive, bool):
        raise CheckerError("checker.case_insensitive: must be true or false")
    rules = [rule for rule in FLOAT_RULES if rule in spec]
    if len(rules) > 1:
        raise CheckerError(f"checker: give one of {', '.join(rules)}")
    tolerance = None
    if rules:
        if kind.startswith("unordered"):
            raise CheckerError(f"checker: {kind} compares no numbers (a tolerance needs an order)")
        value = spec[rules[0]]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CheckerError(f"checker.{rules[0]}: must be a number")
        tolerance = _float_rule(rules[0], float(value)).tolerance
    return Comparison(kind, case_insensitive=case_insensitive, tolerance=tolerance)


def _program(spec: Mapping[str, Any]) -> ProgramChecker:
    fields = {key: value for key, value in spec.items() if key != "type"}
    return ProgramChecker(*judge_program(fields, "checker", "python", PROTOCOLS, CheckerError))


def judge_program(
    spec: Mapping[str, Any],
    role: str,
    default_language: str,
    protocols: tuple[str, ...],
    error: type[ValueError],
) -> tuple[str, str, str]:
    """The language, code and protocol of a judge program a problem declares (its `checker` or
    `interactor`: `role`); `error` naming the field that is wrong."""
    unknown = sorted(set(spec) - {"language", "code", "protocol"})
    if unknown:
        raise error(f"{role}: unknown field {unknown[0]!r}")
    language = spec.get("language", default_language)
    code, protocol = spec.get("code"), spec.get("protocol", "testlib")
    if language not in CHECKER_LANGUAGES:
        raise error(f"{role}.language: {language!r} is not one of {', '.join(CHECKER_LANGUAGES)}")
    if protocol not in protocols:
        raise error(f"{role}.protocol: {protocol!r} is not one of {', '.join(protocols)}")
    if not isinstance(code, str) or not code.strip():
        raise error(f"{role}.code: the {role}'s source is required")
    if len(code) > MAX_CHECKER_CHARS:
        raise error(f"{role}.code: longer than {MAX_CHECKER_CHARS} characters")
    return language, code, protocol


# -- auto: what a statement says about its answers ---------------------------------------------------

_MINUS = r"[-\u2212\u2013]"  # a hyphen, a minus sign, an en dash
_NUMBER = (
    rf"(?:10\s*\^\s*\{{?\s*{_MINUS}\s*\d+\s*\}}?|\d+(?:\.\d+)?\s*[eE]\s*{_MINUS}\s*\d+|0\.\d+"
    rf"|10\s*\*\*\s*{_MINUS}\s*\d+)"
)
_TOLERANCE = re.compile(
    r"(absolute|relative)\s+(?:or\s+(?:absolute|relative)\s+)?error[^.]{0,120}?"
    r"(?:not\s+exceed|does\s+not\s+exceed|at\s+most|less\s+than|no\s+more\s+than|within|≤|<=|\\le(?:q)?)"
    r"[^0-9]{0,12}?(" + _NUMBER + r")",
    re.IGNORECASE | re.DOTALL,
)
_ANY_CASE = re.compile(
    r"in\s+any\s+(?:letter\s+)?case|any\s+case\s*\(|case[-\s]insensitive|upper\s*case\s+or\s+lower\s*case|"
    r"(?:uppercase|lowercase)\s+(?:and|or)\s+(?:lowercase|uppercase)\s+letters?\s+(?:are|is)\s+(?:considered|treated)",
    re.IGNORECASE,
)
_ANY_ANSWER = re.compile(
    r"print\s+any\s+(?:of\s+them|one\s+of\s+them|valid|such|correct)|output\s+any\s+(?:of\s+them|one|valid|such)|"
    r"(?:if\s+there\s+are|there\s+may\s+be)\s+(?:several|multiple|many)\s+(?:possible\s+|correct\s+|valid\s+)?"
    r"(?:answers|solutions)|any\s+(?:valid|correct)\s+(?:answer|solution)\s+(?:is|will\s+be)\s+accepted",
    re.IGNORECASE,
)


def infer_checker(statement: str) -> Checker:
    """The checker a statement asks for (`auto`); its name says it was inferred and what it chose."""
    found = _TOLERANCE.search(statement)
    if found:
        error = _tolerance_value(found.group(2))
        if error is not None and 0 < error < 1:
            rule = _tolerance_rule(found.group(0), found.group(1))
            chosen = _float_rule(rule, error)
            return dataclasses.replace(chosen, label=f"auto:{chosen.name}")
    if _ANY_ANSWER.search(statement):
        return NeedsChecker(
            "the statement accepts any of several answers, and the problem has no checker program"
        )
    if _ANY_CASE.search(statement):
        return Comparison("tokens", case_insensitive=True, label="auto:yesno")
    return Comparison("tokens", label="auto:tokens")


def _tolerance_rule(sentence: str, kind: str) -> str:
    """`float` for "absolute or relative error", else the one error the sentence names."""
    if re.search(r"absolute\s+or\s+relative|relative\s+or\s+absolute", sentence, re.IGNORECASE):
        return "float"
    return "float_abs" if kind.lower().startswith("abs") else "float_rel"


def _tolerance_value(text: str) -> float | None:
    compact = re.sub(r"\s+", "", text).replace("\u2212", "-").replace("\u2013", "-")  # minus signs, dashes
    power = re.fullmatch(r"10(?:\^|\*\*)\{?(-\d+)\}?", compact)
    try:
        return 10.0 ** int(power.group(1)) if power else float(compact)
    except ValueError:
        return None
