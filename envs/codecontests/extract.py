"""The program inside a model's answer: the first fenced code block in the job's language."""

from __future__ import annotations

from evalfarm.sandbox.languages import LANGUAGES

# Info strings that mark a Python block; an untagged fence counts too (models often omit the tag).
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
# Every other language's block must say so (sandbox.languages: its `fences`): an untagged block in
# a C++ answer is as often a sample input or output. PyPy reads Python's blocks.
TAGS = {
    "python": PYTHON_TAGS,
    **{name: frozenset(language.fences) for name, language in LANGUAGES.items()},
    "pypy3": PYTHON_TAGS | frozenset(LANGUAGES["pypy3"].fences),
}
CPP_TAGS = TAGS["cpp"]
LANGUAGE_NAMES = {"python": "Python", **{name: language.title for name, language in LANGUAGES.items()}}
FENCE = "```"


def extract_code(text: str, language: str = "python") -> str | None:
    """The body of the first fenced block of `language`; None when there is none.

    Python (and PyPy): a block tagged python/py (or untagged). Another language: a block tagged with
    one of its fence tags (C++: cpp, c++, cc or cxx; C: c; JavaScript: javascript or js; ...).

    A fence is a line whose first non-blank characters are three backticks; the rest of that line is
    its tag (case-insensitive; only its first word counts, so "python title=x" is Python). Blocks in
    other languages are skipped whole. A block left open runs to the end of the text, since answers cut
    off at a token limit are common and the sandbox will judge what is there.
    """
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        tag = _fence_tag(lines[index])
        if tag is None:
            index += 1
            continue
        end = _closing_fence(lines, index + 1)
        if tag in TAGS[language]:
            body = "\n".join(lines[index + 1 : end])
            return body + "\n" if body else None
        index = end + 1
    return None


def _fence_tag(line: str) -> str | None:
    """The lower-cased tag of an opening fence line, or None when `line` is not a fence."""
    stripped = line.strip()
    if not stripped.startswith(FENCE):
        return None
    words = stripped[len(FENCE) :].strip().split()
    return words[0].lower() if words else ""


def _closing_fence(lines: list[str], start: int) -> int:
    """Index of the fence closing a block whose body starts at `start` (len(lines) when unclosed)."""
    for index in range(start, len(lines)):
        if lines[index].strip() == FENCE:
            return index
    return len(lines)
