"""The documentation site: it builds with MkDocs in strict mode (a broken link, a missing anchor or a
page left out of the navigation fails), it documents every command and HTTP route the farm has, and
every command and route it documents is exercised by a test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
# Not --quiet: it hides the warnings that strict mode counts.
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]
# A documented route: its method and path, as the pages write them (`POST /v1/sessions/{id}/run`).
ROUTE = re.compile(r"\b(GET|POST|PUT|DELETE) (/[A-Za-z0-9_/{}.-]+)")
COMMAND = re.compile(
    r"\bevalfarm (datasets (?:prepare|lint|load|list)|run|score|verify|up|worker|gateway|demo)\b"
)


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*MKDOCS, "--site-dir", str(site)], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def docs_text() -> str:
    return "\n".join(path.read_text() for path in sorted(DOCS.rglob("*.md")))


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "verdicts" / "index.html").is_file()


@pytest.mark.parametrize(
    ("breakage", "said"),
    [
        ("a link to a page that does not exist: [x](no-such-page.md)", "no-such-page.md"),
        ("an anchor that does not exist: [x](verdicts.md#no-such-heading)", "no-such-heading"),
        (None, "orphan.md"),  # a page outside the navigation
    ],
)
def test_a_broken_link_or_a_page_outside_the_nav_fails_the_build(
    tmp_path: Path, breakage: str | None, said: str
) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    if breakage is None:
        (tmp_path / "docs" / "orphan.md").write_text("# An orphan\n")
    else:
        with open(tmp_path / "docs" / "tour.md", "a") as page:
            page.write(f"\n{breakage}\n")
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and said in done.stderr, done.stderr[-2000:]


def test_every_command_and_route_is_documented() -> None:
    from evalfarm.broker.settings import GatewaySettings
    from evalfarm.gateway.app import create_app
    from evalfarm.workers.cli import COMMANDS

    text = docs_text()
    documented_commands = {match.split()[0] for match in COMMAND.findall(text)}
    assert set(COMMANDS) <= documented_commands
    documented = {(method, _shape(path)) for method, path in ROUTE.findall(text)}
    app = create_app(GatewaySettings(broker_url="redis://127.0.0.1:1/0"))
    served = {
        (method, _shape(route.path))
        for route in app.routes
        for method in getattr(route, "methods", None) or ()
        if method != "HEAD"
    }
    assert served - documented == set()


def test_every_documented_command_is_exercised_by_a_test() -> None:
    sources = [path.read_text() for path in TESTS.glob("*.py") if path.name != "test_docs.py"]
    invoking = [s for s in sources if re.search(r"evalfarm\.workers\.cli|cli import main|def _?evalfarm", s)]
    missing = []
    for command in sorted(set(COMMAND.findall(docs_text()))):
        words = command.split()
        pattern = (
            r"[\[(,]\s*" + r"\s*,\s*".join(f"[\"']{re.escape(word)}[\"']" for word in words) + r"\s*[,)\]]"
        )
        if not any(re.search(pattern, source) for source in invoking):
            missing.append(command)
    assert missing == []


def test_every_documented_route_is_exercised_by_a_test() -> None:
    sources = [path.read_text() for path in TESTS.glob("*.py") if path.name != "test_docs.py"]
    missing = []
    for method, path in sorted(set(ROUTE.findall(docs_text()))):
        # `{id}` in the pages is whatever a test puts there (an f-string's `{sid}`, a literal id).
        pattern = re.sub(r"\\\{[a-z_]+\\\}", r"[^\"'/\\s]+", re.escape(path)) + r"(?![A-Za-z0-9_/])"
        verb = {"GET": r"\.get\(|\"GET\"", "POST": r"\.post\(|\"POST\"", "PUT": r"\.put\(|\"PUT\"",
                "DELETE": r"\.delete\(|\"DELETE\""}[method]  # fmt: skip
        literal = any(re.search(pattern, source) and re.search(verb, source) for source in sources)
        if not (literal or _exercised_by_parts(path, verb, sources) or _exercised_by_swerex(path, sources)):
            missing.append(f"{method} {path}")
    assert missing == []


def _exercised_by_parts(path: str, verb: str, sources: list[str]) -> bool:
    """A route a test reaches from a base it built first (`f"{base}/files?path=..."` after
    `base = f"{url}/v1/sessions/{sid}"`): its prefix and its last part in one test file."""
    prefix, _, rest = path.partition("{")
    last = "/" + rest.rpartition("}")[2].strip("/")
    if not rest or last == "/":
        return False
    return any(
        prefix in source
        and re.search(re.escape(last) + r"(?![A-Za-z0-9_/])", source)
        and re.search(verb, source)
        for source in sources
    )


def _exercised_by_swerex(path: str, sources: list[str]) -> bool:
    """A route of a SWE-ReX sandbox, which tests reach through SWE-ReX's own client: its method named
    for the route (`runtime.run_in_session(...)`), or the client itself for the sandbox's root."""
    if not path.startswith("/v1/sandboxes/{"):
        return False
    last = path.rstrip("/").rpartition("/")[2]
    client = [source for source in sources if "RemoteRuntime(" in source]
    return bool(client) and (last.startswith("{") or any(f".{last}(" in source for source in client))


def _shape(path: str) -> str:
    """A route's path with its parameters' names dropped: `/v1/sessions/{}/run`."""
    return re.sub(r"\{[^}]*\}", "{}", path)
