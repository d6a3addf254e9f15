"""What every dataset reader builds a problem from: tests, solutions, sections, and why a row is
skipped."""

from __future__ import annotations

from typing import Any

# A solution's language as the datasets spell it -> the farm's (a Java version: `java`).
LANGUAGES = {
    "python": "python", "python3": "python", "py3": "python", "py": "python", "pypy3": "python",
    "cpp": "cpp", "c++": "cpp", "cpp17": "cpp", "c++17": "cpp", "gnu c++17": "cpp",
    "java": "java",
}  # fmt: skip


class Skipped(Exception):
    """A row that makes no problem, and why (`prepare` counts the reasons)."""


def language_of(name: Any) -> str | None:
    """The farm's language of a dataset's language name (`Java 8`, `java11`: java), or None."""
    spelled = str(name or "").strip().lower()
    if spelled.startswith("java") and not spelled.startswith("javascript"):
        return "java"
    return LANGUAGES.get(spelled)


def solutions(items: Any, limit: int) -> list[dict[str, str]]:
    """Up to `limit` {language, code} in languages the farm runs, from [{code, language}, ...]."""
    kept = []
    for item in items or ():
        if not isinstance(item, dict):
            continue
        language = language_of(item.get("language"))
        code = item.get("code") or item.get("solution")
        if language and isinstance(code, str) and code.strip():
            kept.append({"language": language, "code": code})
        if len(kept) >= limit:
            break
    return kept


def missing(reason: str) -> dict[str, str]:
    """The checker of a problem the dataset cannot judge: each of its tests is `judge_error`."""
    return {"type": "missing", "reason": reason}


def section(title: str, text: Any) -> str | None:
    """A titled part of a statement, when there is text for it."""
    return f"{title}\n\n{text}" if text else None


def pairs_of_list(tests: Any) -> list[dict[str, str]]:
    """[{input, output}, ...] with text on both sides."""
    return [
        {"input": test["input"], "output": test["output"]}
        for test in tests or ()
        if isinstance(test, dict) and all(isinstance(test.get(part), str) for part in ("input", "output"))
    ]
