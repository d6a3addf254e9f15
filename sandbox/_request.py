"""One run as the client sees it: the request it sends a fork server, and the result it makes of the reply.

The request's bytes (code, input, a judge's tests) become memfds sent with a small header; the reply is
the server's observations and the run's output memfds. The status is decided here, by the rules of
`sandbox.verdict`, from those observations: the server only watches, and no program speaks for itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from evalfarm.sandbox import _payload, languages, values, verdict
from evalfarm.sandbox.limits import Limits
from evalfarm.sandbox.result import RunResult
from evalfarm.sandbox.status import Status

MAX_REPORT_BYTES = 64 << 10  # a report is a few short JSON lines written by the sandbox's own code
_FILES_SLACK = 64 << 10  # beyond the fetched files' cap, for the payload's header


@dataclasses.dataclass(frozen=True)
class CallSpec:
    """Call `func_name(*args, **kwargs)` after the program ran; its value comes back as data
    (`RunResult.reply`, read with `sandbox.bridge.parse_reply`)."""

    func_name: str
    args: list[Any] = dataclasses.field(default_factory=list)
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    max_value_bytes: int = 1 << 20


@dataclasses.dataclass(frozen=True)
class JudgeSpec:
    """A judge for a candidate that serves calls: trusted `code`, run in a process of its own, with
    `JUDGE_DATA` (`data`), `candidate` (a proxy whose `function(name)` calls into the program) and
    `report({"status", "error"})` in its namespace. The candidate never sees `data` nor `code`."""

    code: str
    data: bytes = b""
    max_reply_bytes: int = 1 << 20
    max_request_bytes: int = 1 << 20


@dataclasses.dataclass
class Request:
    """A run's request header, the bytes of each memfd that goes with it, and how to read the reply."""

    header: dict[str, Any]
    blobs: dict[str, bytes]
    limits: Limits
    judged: bool = False
    native: bool = False
    fetch: tuple[str, ...] = ()

    def result(self, reply: dict[str, Any], outputs: dict[str, bytes]) -> RunResult:
        """The run's result, from the server's observations and the run's outputs."""
        if "unavailable" in reply:
            why = f"{verdict.SETUP_FAILED}: {reply['unavailable']}"
            return RunResult(status=Status.INFRA_ERROR, error=why, infra_reason="run_setup_failed")
        if reply.get("compile_failed"):
            return _compile_failed(reply, outputs, self.header["native"]["compile"]["limits"])
        members = reply["members"]
        limits = self.limits.to_dict()
        error: str | None
        stdout, stderr = outputs.get("stdout", b""), outputs.get("stderr", b"")
        candidate = verdict.Observed.from_header(
            members["candidate"], read_report(outputs.get("report", b""))
        )
        if self.judged:
            judge = verdict.Observed.from_header(
                members["judge"], read_report(outputs.get("judge_report", b""))
            )
            judge_report = _last_verdict(outputs.get("judge_report", b""))
            status, error = verdict.classify_judged(candidate, judge, limits, judge_report, stderr)
        elif "input_error" in candidate.report:
            status, error = Status.INVALID_JOB, str(candidate.report["input_error"])
        else:
            status, error = verdict.classify(candidate, limits, stderr)
        facts = members["candidate"]
        ended_by_farm = facts.get("ended_by") == "done"
        return RunResult(
            status=status,
            stdout=stdout,
            stderr=stderr,
            exit_code=None if ended_by_farm else facts["exit_code"],
            signal=None if ended_by_farm else facts["signal"],
            stdout_truncated=reply["truncated"].get("stdout", False),
            stderr_truncated=reply["truncated"].get("stderr", False),
            wall_s=facts["wall_s"],
            cpu_s=facts["cpu_s"],
            max_rss_mb=facts["max_rss_mb"],
            reply=outputs.get("reply") if "reply" in outputs else None,
            error=error,
            infra_reason=verdict.infra_reason(status, error),
            exception=verdict.exception_name(stderr) if status is not Status.OK else None,
            files=_fetched(outputs["files"], self.fetch) if "files" in outputs else None,
            compile=reply.get("compile"),
            judge=judge_report if self.judged else None,
        )


def program(
    code: bytes,
    stdin: bytes,
    limits: Limits,
    call: CallSpec | None = None,
    files: dict[str, str] | None = None,
    fetch: list[str] | None = None,
) -> Request:
    """A Python program's run; with `call`, its function called afterwards."""
    header: dict[str, Any] = {}
    blobs = [code]
    request: dict[str, Any] = {"kind": "run", "limits": limits.to_dict(), "mode": "program"}
    if call is not None:
        request.update(mode="call", reply_bytes=call.max_value_bytes + 64)
        blobs.append(values.encode(["call", call.func_name, list(call.args), dict(call.kwargs)]))
    if files:
        header["files"] = True
        blobs.append(json.dumps(files).encode())
    if fetch:
        header["fetch"] = list(fetch)
        request["fetch"] = True
    blobs_by_name = _with_stdin({"payload": _payload.pack(header, *blobs)}, stdin)
    return Request(request, blobs_by_name, limits, fetch=tuple(fetch or ()))


def native(language: languages.Language, source: bytes, stdin: bytes, limits: Limits) -> Request:
    """A compiled program's run: its source compiled (unless the server holds its binary), then run."""
    spec = languages.native_request(language, source, limits)
    payload = _payload.pack({"compile": spec["compile"]}, source)
    request = {"kind": "run", "limits": limits.to_dict(), "native": spec}
    return Request(request, _with_stdin({"payload": payload}, stdin), limits, native=True)


def judged(code: bytes, judge: JudgeSpec, limits: Limits) -> Request:
    """A Python candidate serving calls, judged by `judge` in a process of its own."""
    blobs = {
        "payload": _payload.pack({"max_request_bytes": judge.max_request_bytes}, code),
        "judge_payload": _payload.pack(
            {"max_reply_bytes": judge.max_reply_bytes}, judge.code.encode(), judge.data
        ),
    }
    # The problem's key: consecutive jobs of one problem share a judge (sandbox._judge_host).
    key = hashlib.sha256(blobs["judge_payload"]).hexdigest()
    request = {"kind": "judged", "limits": limits.to_dict(), "judge": {"key": key}}
    return Request(request, blobs, limits, judged=True)


def _with_stdin(blobs: dict[str, bytes], stdin: bytes) -> dict[str, bytes]:
    if stdin:
        blobs["stdin"] = stdin
    return blobs


def read_report(data: bytes) -> dict[str, Any]:
    """A report's records merged in order (JSON lines from the sandbox's own code)."""
    report: dict[str, Any] = {}
    if len(data) > MAX_REPORT_BYTES:
        return {"setup_error": f"a report of {len(data)} bytes (the sandbox writes a few lines)"}
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            return {"setup_error": "an unreadable report"}
        if isinstance(record, dict):
            report.update(record)
    return report


def _last_verdict(data: bytes) -> dict[str, Any] | None:
    """The last record of a judge's report that carries a status."""
    found = None
    for line in data[:MAX_REPORT_BYTES].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "status" in record:
            found = record
    return found


def _fetched(data: bytes, requested: tuple[str, ...]) -> dict[str, str]:
    """The files a run fetched, as {path: base64}: only paths the job asked for, and none when what
    was written is not a payload (the program may write there itself: it is its output, not a report)."""
    import base64

    if len(data) > verdict_files_cap():
        return {}
    try:
        header, blobs = _payload.unpack(data)
        paths = header["paths"]
        if type(paths) is not list or len(paths) != len(blobs) or any(type(p) is not str for p in paths):
            return {}
    except (_payload.PayloadError, KeyError):
        return {}
    wanted = set(requested)
    return {
        path: base64.b64encode(blob).decode()
        for path, blob in zip(paths, blobs, strict=True)
        if path in wanted
    }


def verdict_files_cap() -> int:
    """The most bytes of fetched files a result carries (with the payload's header)."""
    from evalfarm.sandbox._runner import FETCH_MAX_BYTES

    return FETCH_MAX_BYTES + _FILES_SLACK


def _compile_failed(
    reply: dict[str, Any], outputs: dict[str, bytes], compile_limits: dict[str, Any]
) -> RunResult:
    facts = reply["members"]["compile"]
    report = read_report(outputs.get("report", b""))
    stdout, stderr = outputs.get("stdout", b""), outputs.get("stderr", b"")
    run = verdict.Observed.from_header(facts, report)
    status, error = verdict.compile_verdict(run, compile_limits, stderr or stdout)
    if status is Status.OK:  # the server kept no binary: it was empty or too large
        status, error = Status.SYNTAX_ERROR, "compile error: the compiler's binary is empty or too large"
    return RunResult(
        status=status,
        stdout=stdout,
        stderr=stderr[: verdict.COMPILER_MESSAGE_BYTES],
        wall_s=facts["wall_s"],
        cpu_s=facts["cpu_s"],
        max_rss_mb=None,
        error=error,
        infra_reason=verdict.infra_reason(status, error),
        compile={"status": status.value, "cached": False, "wall_s": facts["wall_s"]},
    )
