"""One run as the client sees it: the request it sends a fork server, and the result it makes of the reply.

The request's bytes (code, input, a judge's tests) become memfds sent with a small header; the reply is
the server's observations and the run's output memfds. The status is decided here, by the rules of
`sandbox.verdict`, from those observations: the server only watches, and no program speaks for itself.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from evalfarm.limits import Limits
from evalfarm.sandbox import _payload, _protocol, bridge, languages, values, verdict
from evalfarm.sandbox._child import ATTACHED_FD
from evalfarm.sandbox._protocol import Kind
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

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

    header: _protocol.RequestHeader
    blobs: dict[str, bytes]
    limits: Limits
    judged: bool = False
    # How long its compiles may take before it runs, one after another (a program's, an interactor's,
    # each within its own `compile_wall_s`): the client waits that much longer for the reply.
    compile_wall_s: float = 0.0
    fetch: tuple[str, ...] = ()
    interactive: bool = False
    own_builds: tuple[str, ...] = ()  # roles whose process executes their own build (no runtime)

    def _interactor(self, reply: dict[str, Any], outputs: dict[str, bytes]) -> dict[str, Any] | None:
        if not self.interactive:
            return None
        own_build = "interactor" in self.own_builds
        return _interactor_facts(reply, outputs, self.header["interactor"]["limits"], own_build)

    def _files(self, outputs: dict[str, bytes]) -> dict[str, str] | None:
        """The fetched files: a Python run's payload, or a native run's files one by one."""
        if "files" in outputs:
            return _fetched(outputs["files"], self.fetch)
        if "native" in self.header and self.fetch:
            return {
                path: base64.b64encode(outputs[f"file:{path}"]).decode()
                for path in self.fetch
                if f"file:{path}" in outputs
            }
        return None

    def result(self, reply: dict[str, Any], outputs: dict[str, bytes]) -> RunResult:
        """The run's result, from the server's observations and the run's outputs."""
        if "unavailable" in reply:
            why = f"{verdict.SETUP_FAILED}: {reply['unavailable']}"
            return RunResult(status=Status.INFRA_ERROR, error=why, infra_reason="run_setup_failed")
        if reply.get("compile_failed"):
            role = reply.get("compile_failed_role", "candidate")
            if role == "interactor":  # the judge's program does not compile: no verdict on the program
                why = "the interactor does not compile: " + outputs.get("stderr", b"").decode(
                    "utf-8", "replace"
                )
                return RunResult(status=Status.OK, judge={"status": "compile_error", "error": why[-2000:]})
            native = self.header["candidate" if self.interactive else "native"]
            if self.interactive:
                native = native["native"]
            return _compile_failed(reply, outputs, native["compile"]["limits"])
        members = reply["members"]
        limits = self.limits.to_dict()
        error: str | None
        stdout, stderr = outputs.get("stdout", b""), outputs.get("stderr", b"")
        candidate = verdict.Observed.from_header(
            members["candidate"], read_report(outputs.get("report", b"")), "candidate" in self.own_builds
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
        interactor = self._interactor(reply, outputs)
        if interactor is not None and interactor["status"] == Status.INFRA_ERROR.value:
            status, error = Status.INFRA_ERROR, f"the interactor's run: {interactor['error']}"
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
            files=self._files(outputs),
            compile=reply.get("compile"),
            judge=judge_report if self.judged else interactor,
            trace=_trace(reply, candidate.report, outputs) if "trace" in reply else None,
        )


@dataclasses.dataclass(frozen=True)
class JudgeRun:
    """What a judge program (a checker) gets beyond a program's run: its argv after its own name,
    read-only attachments at descriptors 10, 11, ... (`/proc/self/fd/N` in its argv), and, for a
    Python judge, the exit code of an uncaught exception (its protocol's failure, not a verdict)."""

    argv: tuple[str, ...] = ()
    attachments: tuple[bytes, ...] = ()
    crash_exit: int | None = None

    def with_attachments(self, blobs: dict[str, bytes]) -> dict[str, bytes]:
        """`blobs` with the attachments added under the names the server maps to descriptors."""
        return {**blobs, **{f"attach{index}": data for index, data in enumerate(self.attachments)}}


def attachment_path(index: int) -> str:
    """Where a judge program opens its attachment `index`."""
    return f"/proc/self/fd/{ATTACHED_FD + index}"


def _interactor_facts(
    reply: dict[str, Any], outputs: dict[str, bytes], limits: dict[str, Any], own_build: bool
) -> dict[str, Any]:
    """What an interactor did, for its protocol to read (the env's): its status as a program, its
    exit, what it wrote on stderr (testlib's verdict message), and whether it ended first. A build
    the kernel would not execute is `build_error`: the interactor never ran, as one that does not
    compile."""
    facts = reply["members"]["interactor"]
    report = read_report(outputs.get("interactor_report", b""))
    observed = verdict.Observed.from_header(facts, report, own_build)
    stderr = outputs.get("interactor_stderr", b"")
    status, error = verdict.classify(observed, limits, stderr)
    if "exec_error" in report and status is Status.RUNTIME_ERROR:
        why = f"the interactor's build cannot be executed: {verdict.refusal(report)}"
        return {"status": "build_error", "error": why}
    return {
        "status": status.value,
        "error": error,
        "exit_code": facts["exit_code"],
        "signal": facts["signal"],
        "ended_by": facts.get("ended_by"),
        "wall_s": facts["wall_s"],
        "stderr": stderr.decode("utf-8", "replace")[-4000:],
        "first_to_end": reply.get("first_to_end"),
        "compile": reply.get("interactor_compile"),  # a compiled interactor's: whether it was held
    }


def program(
    code: bytes,
    stdin: bytes,
    limits: Limits,
    call: CallSpec | None = None,
    files: dict[str, str] | None = None,
    fetch: list[str] | None = None,
    judge: JudgeRun | None = None,
) -> Request:
    """A Python program's run; with `call`, its function called afterwards; with `judge`, run as a
    judge program (argv, attachments, its crash's exit code)."""
    header: dict[str, Any] = {}
    if judge is not None:
        header["argv"] = ["main.py", *judge.argv]
        if judge.crash_exit is not None:
            header["crash_exit"] = judge.crash_exit
    blobs = [code]
    request: _protocol.RequestHeader = {"kind": Kind.RUN, "limits": limits.to_dict(), "mode": "program"}
    if call is not None:
        request["mode"], request["reply_bytes"] = "call", call.max_value_bytes + 64
        frame = ["call", call.func_name, list(call.args), dict(call.kwargs)]
        blobs.append(values.encode(frame, max_depth=bridge.REQUEST_DEPTH))
    if files:
        header["files"] = True
        blobs.append(json.dumps(files).encode())
    if fetch:
        header["fetch"] = list(fetch)
        request["fetch"] = True
    blobs_by_name = _with_stdin({"payload": _payload.pack(header, *blobs)}, stdin)
    if judge is not None:
        blobs_by_name = judge.with_attachments(blobs_by_name)
    return Request(request, blobs_by_name, limits, fetch=tuple(fetch or ()))


def native(
    language: languages.Language,
    source: bytes,
    stdin: bytes,
    limits: Limits,
    headers: dict[str, bytes] | None = None,
    argv: tuple[str, ...] = (),
) -> Request:
    """A compiled program's run: its source compiled (unless the server holds its binary), then run;
    `headers` are written beside the source for its compile, `argv` follows the binary's name."""
    headers = headers or {}
    spec = languages.native_request(language, source, limits, headers)
    spec["argv"] = [*spec["argv"], *argv]
    request: _protocol.RequestHeader = {"kind": Kind.RUN, "limits": limits.to_dict(), "native": spec}
    own = ("candidate",) if spec["runtime"] is None else ()
    if spec["compile"] is None:  # the source itself runs (a runtime's script)
        return Request(request, _with_stdin({"source": source}, stdin), limits, own_builds=own)
    payload = _payload.pack({"compile": spec["compile"], "headers": list(headers)}, source, *headers.values())
    blobs = _with_stdin({"payload": payload}, stdin)
    return Request(request, blobs, limits, compile_wall_s=limits.compile_wall_s, own_builds=own)


def with_files(
    request: Request, files: dict[str, str] | None, fetch: list[str] | None, stage: str | None
) -> Request:
    """A native run's `request` with a Python run's `files` ({name: base64 content}, written in its
    /tmp before it starts) and `fetch` (names whose content comes back): each a memfd named in the
    run's /tmp (`sandbox._server_run.Run.native`). A name the run cannot have (a path, the staged program's
    own `stage`) is a ValueError."""
    names = list(dict.fromkeys([*(files or {}), *(fetch or ())]))
    blobs = dict(request.blobs)
    spec = []
    for index, name in enumerate(names):
        _check_file_name(name, stage)
        content = base64.b64decode((files or {}).get(name) or "")
        if content:
            blobs[f"file{index}"] = content
        blob = f"file{index}" if content else None
        spec.append({"name": name, "blob": blob, "fetch": name in (fetch or ())})
    header: _protocol.RequestHeader = {**request.header, "files": spec}
    return dataclasses.replace(request, header=header, blobs=blobs, fetch=tuple(fetch or ()))


def _check_file_name(name: str, stage: str | None) -> None:
    """A native run's file is a name in its working directory, not its staged program's."""
    if not name or name in (".", "..") or any(char in name for char in "/:\0") or len(name.encode()) > 255:
        raise ValueError(f"{name!r}: a compiled program's file is a name in its working directory")
    if stage is not None and name == stage.rsplit("/", 1)[-1]:
        raise ValueError(f"{name!r}: the name of the program's own build")


@dataclasses.dataclass(frozen=True)
class InteractorSpec:
    """An interactor: a judge program the candidate talks to over its stdin and stdout (the
    interactor's stdout and stdin). `judge` gives its argv and attachments (the test's input and
    answer, which the candidate never sees); `headers` go beside its source when it is compiled."""

    code: bytes
    language: str
    judge: JudgeRun
    limits: Limits
    headers: dict[str, bytes] | None = None


def interactive(code: bytes, language: str, interactor: InteractorSpec, limits: Limits) -> Request:
    """A program and its interactor, each the other's stdin and stdout."""
    candidate_part, candidate_payload = _member(code, language, limits, None, (), None)
    judge = interactor.judge
    interactor_part, interactor_payload = _member(
        interactor.code,
        interactor.language,
        interactor.limits,
        interactor.headers,
        judge.argv,
        judge.crash_exit,
    )
    interactor_part["limits"] = interactor.limits.to_dict()
    request: _protocol.RequestHeader = {
        "kind": Kind.INTERACTIVE,
        "limits": limits.to_dict(),
        "candidate": candidate_part,
        "interactor": interactor_part,
    }
    blobs = judge.with_attachments({"payload": candidate_payload, "interactor_payload": interactor_payload})
    members = (("candidate", candidate_part, limits), ("interactor", interactor_part, interactor.limits))
    own = tuple(role for role, part, _ in members if "native" in part and part["native"]["runtime"] is None)
    # Either side may compile first (an interactor in C++ for a Python program, too): both count.
    compile_s = sum(
        caps.compile_wall_s for _, part, caps in members if "native" in part and part["native"]["compile"]
    )
    return Request(request, blobs, limits, compile_wall_s=compile_s, interactive=True, own_builds=own)


def _member(
    code: bytes,
    language: str,
    limits: Limits,
    headers: dict[str, bytes] | None,
    argv: tuple[str, ...],
    crash_exit: int | None,
) -> tuple[dict[str, Any], bytes]:
    """One side of an interactive run: its part of the request and its payload."""
    if language == "python":
        header: dict[str, Any] = {"argv": ["main.py", *argv]}
        if crash_exit is not None:
            header["crash_exit"] = crash_exit
        return {}, _payload.pack(header, code)
    headers = headers or {}
    spec = languages.native_request(languages.LANGUAGES[language], code, limits, headers)
    spec["argv"] = [*spec["argv"], *argv]
    payload = _payload.pack({"compile": spec["compile"], "headers": list(headers)}, code, *headers.values())
    return {"native": spec}, payload


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
    request: _protocol.RequestHeader = {
        "kind": Kind.JUDGED, "limits": limits.to_dict(), "judge": {"key": key}
    }  # fmt: skip
    return Request(request, blobs, limits, judged=True)


def _with_stdin(blobs: dict[str, bytes], stdin: bytes) -> dict[str, bytes]:
    if stdin:
        blobs["stdin"] = stdin
    return blobs


def _trace(reply: dict[str, Any], report: Mapping[str, Any], outputs: dict[str, bytes]) -> dict[str, float]:
    """A traced run's stamps: the client's and the server's, the run's child's (from its report,
    written before its program ran) and the judge's (from the judge's report)."""
    stamps = dict(reply["trace"])
    for record in (report, read_report(outputs.get("judge_report", b""))):
        if isinstance(record.get("trace"), dict):
            stamps.update(record["trace"])
    return stamps


def read_report(data: bytes) -> dict[str, Any]:
    """A report's records merged in order (JSON lines from the sandbox's own code; blank lines
    between them are nothing).

    A report that cannot be read is the sandbox's failure (`setup_error`) only while its own code
    had the process: after the record that says the program started, the process was the
    program's, so what cannot be read from then on is marked `unreadable`, the program's doing.
    """
    report: dict[str, Any] = {}
    whole_lines = data if len(data) <= MAX_REPORT_BYTES else data[:MAX_REPORT_BYTES].rpartition(b"\n")[0]
    for line in whole_lines.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return _unreadable(report, "an unreadable report")
        if isinstance(record, dict):
            report.update(record)
    if len(data) > MAX_REPORT_BYTES:
        return _unreadable(report, f"a report of {len(data)} bytes (the sandbox writes a few lines)")
    return report


def _unreadable(report: dict[str, Any], why: str) -> dict[str, Any]:
    if report.get("started") is True:
        return {**report, "unreadable": why}
    return {"setup_error": why}


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
    from evalfarm.sandbox._child import FETCH_MAX_BYTES

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
