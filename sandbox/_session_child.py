"""Inside a session: one sandboxed Python interpreter that runs cells, keeping its globals, its
imports and its /tmp between them, as a notebook's kernel does.

The process is forked by a fork server and walls itself in like any run (`sandbox._child`), then
serves cells on its control channel (descriptor 3) until the channel closes. Each cell arrives with
descriptors of its own: its code and stdin (memfds), its stdout and stderr (pipes the session's
manager drains) and a report pipe. The cell runs as a notebook runs one: statements executed in the
session's `__main__`, the last one, when it is an expression, evaluated and its repr kept as the
cell's value (unless None, or the cell ends with `;`). Then the report goes on the report pipe and
the pipe is closed: a report for a later cell needs that cell's pipe, which no code holds before
the cell starts.

Figures are shown as a notebook's inline backend shows them: matplotlib, when a cell imports it,
draws with a backend of this module's (`plt.show()` puts each open figure in the cell's display, as
`image/png` beside its `text/plain`), and what a cell leaves open is shown at its end and closed.
The display (a list of MIME bundles, as Jupyter's `display_data`) goes in a memfd the manager reads.
Between cells the process also reads, writes and unpacks the session's files for its manager
(`sandbox._session_files`).

Nothing here is a verdict: whether a cell ran out of time or memory, or killed its interpreter, is
the manager's to see from outside (`sandbox.session_interpreter`). The report says only what the cell did in
the process it owns: its value, or the exception it raised.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import signal
import socket
import sys
import types
from typing import Any, NoReturn

from evalfarm.sandbox import _payload, _protocol, _session_files

CONTROL_FD = 3
MAX_VALUE_CHARS = 64 << 10  # a value's repr past this is cut (the manager caps the report too)
# A report's line is cut to fit this, well under what the manager keeps (sandbox.session_interpreter'
# MAX_REPORT_BYTES): a repr of 64 Ki characters escaped as JSON may be six or twelve times longer.
MAX_REPORT_BYTES = 128 << 10
MAX_DISPLAY_BYTES = 8 << 20  # a cell's figures, in all (the manager reads no more)
# matplotlib's backend in a session (MPLBACKEND=module://...): the figures a cell shows are its display.
BACKEND = "evalfarm_inline_backend"
_BACKEND_SOURCE = """
from matplotlib.backend_bases import FigureManagerBase as FigureManager
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas


def show(*args, **kwargs):
    import sys

    sys.modules["evalfarm.sandbox._session_child"].show_figures()
"""
_display: list[dict[str, str]] = []  # the running cell's display so far
_display_bytes = 0


def serve() -> NoReturn:
    """Say the walls are up, then run each cell the channel brings; exit when it closes."""
    channel = socket.socket(fileno=CONTROL_FD)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv = [""]
    quiet = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)  # stdio between cells
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["MPLBACKEND"] = f"module://{BACKEND}"
    sys.meta_path.insert(0, _Backend)
    os.chdir(_session_files.home())
    _protocol.send(channel, {"ready": True})
    count = 0
    while True:
        try:
            header, fds = _protocol.recv(channel)
        except (_protocol.ProtocolError, OSError):
            os._exit(0)
        if header.get("kind") == "file":
            _write_report(fds[-1], _session_files.handle(header, fds))
            for fd in fds:
                os.close(fd)
            continue
        count += 1
        code_fd, stdin_fd, stdout_fd, stderr_fd, report_fd, *display_fd = fds
        code = _payload.read_fd(code_fd)
        os.close(code_fd)
        _attach_stdio(stdin_fd, stdout_fd, stderr_fd)
        for fd in {stdin_fd, stdout_fd, stderr_fd} - {0, 1, 2}:
            os.close(fd)
        report = run_cell(code, main.__dict__, f"<cell {count}>")
        _flush()
        _attach_stdio(quiet, quiet, quiet)
        for fd in display_fd:
            _write_display(fd)
            os.close(fd)
        _write_report(report_fd, report)


def run_cell(code: bytes, namespace: dict[str, Any], name: str) -> dict[str, Any]:
    """Run one cell in `namespace`; its report: `value` (the repr of its last expression, or None)
    or `error` ({ename, evalue, traceback}, the traceback printed on stderr too), or `interrupted`.
    The figures it leaves open are shown (its display) and closed."""
    global _display_bytes
    _display.clear()
    _display_bytes = 0
    report = _run(code, namespace, name)
    try:
        show_figures()
    except BaseException:  # a figure the cell broke: its own, and nothing to show
        pass
    return report


def _run(code: bytes, namespace: dict[str, Any], name: str) -> dict[str, Any]:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the manager's interrupt, at a timeout
    try:
        body, last = _split(code, name)
        exec(body, namespace)
        value = eval(last, namespace) if last is not None else None
        shown = None if value is None else _repr(value)
        if shown is not None:
            _show_rich(value, shown)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _print_exception(sys.exc_info()[1])
        return {"interrupted": True}
    except BaseException as error:  # the cell's own failure, SystemExit included (a kernel keeps going)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        lines = _print_exception(error)
        return {"error": {"ename": type(error).__name__, "evalue": _text(error), "traceback": lines}}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return {"value": shown}


def show_figures() -> None:
    """Each figure matplotlib has open, into the cell's display (a PNG, and its repr), then closed:
    what a notebook's inline backend does at `plt.show()` and at a cell's end."""
    global _display_bytes
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    import base64

    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        image = io.BytesIO()
        figure.savefig(image, format="png", bbox_inches="tight")
        encoded = base64.b64encode(image.getvalue()).decode()
        if _display_bytes + len(encoded) <= MAX_DISPLAY_BYTES:
            _display.append({"image/png": encoded, "text/plain": _repr(figure)})
            _display_bytes += len(encoded)
    pyplot.close("all")


# What a value may show beyond its repr, as IPython's display formatter asks it (the `_repr_*_` methods).
RICH_REPRS = (
    ("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"), ("text/latex", "_repr_latex_"),
    ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"),
    ("application/json", "_repr_json_"),
)  # fmt: skip


def _show_rich(value: Any, shown: str) -> None:
    """The last expression's value as a notebook shows it, where it has more than its repr (a
    DataFrame's HTML, an image): one MIME bundle in the cell's display, its repr as `text/plain`."""
    global _display_bytes
    bundle: dict[str, str] = {}
    for mime, method in RICH_REPRS:
        shower = getattr(type(value), method, None)
        if shower is None:
            continue
        try:
            data = shower(value)
        except Exception:  # a formatter that fails shows nothing, as IPython's do
            continue
        if isinstance(data, bytes):
            import base64

            data = base64.b64encode(data).decode()
        elif mime == "application/json" and data is not None:
            data = json.dumps(data)
        if isinstance(data, str):
            bundle[mime] = data
    size = sum(len(data) for data in bundle.values())
    if bundle and _display_bytes + size <= MAX_DISPLAY_BYTES:
        _display.append({**bundle, "text/plain": shown})
        _display_bytes += size


class _Backend:
    """Finds the session's matplotlib backend (a module made here from its source: no file of the
    farm's is in the session's view)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != BACKEND:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(name, _Backend)  # type: ignore[arg-type]

    @staticmethod
    def create_module(spec: Any) -> None:
        return None

    @staticmethod
    def exec_module(module: types.ModuleType) -> None:
        exec(compile(_BACKEND_SOURCE, BACKEND, "exec"), module.__dict__)


def _write_display(fd: int) -> None:
    """The cell's display, as JSON, into the manager's memfd (the manager reads what fits its cap)."""
    if not _display:
        return
    try:
        data = memoryview(json.dumps(_display).encode())
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def _split(code: bytes, name: str) -> tuple[types.CodeType, types.CodeType | None]:
    """The cell compiled: its statements, and its last expression apart (as a notebook shows it)."""
    tree = ast.parse(code, name, "exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr) and not code.rstrip().endswith(b";"):
        tree.body.pop()
        last = compile(ast.Expression(final.value), name, "eval")
    return compile(tree, name, "exec"), last


def _repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "..."


def _text(error: BaseException) -> str:
    try:
        return str(error)[:MAX_VALUE_CHARS]
    except BaseException:
        return "(unprintable)"


def _attach_stdio(stdin_fd: int, stdout_fd: int, stderr_fd: int) -> None:
    """The cell's descriptors on 0, 1 and 2, with fresh text streams over them (no buffered input
    or output of an earlier cell carries over)."""
    for target, fd in ((0, stdin_fd), (1, stdout_fd), (2, stderr_fd)):
        if fd != target:
            os.dup2(fd, target)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8", line_buffering=False
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # a cell may have closed or replaced them
            pass


def _write_report(fd: int, report: dict[str, Any]) -> None:
    try:
        data = memoryview(_encoded(report))
        while data:
            data = data[os.write(fd, data) :]
        os.close(fd)
    except OSError:  # the manager gave up on the cell, or the cell closed the pipe itself
        pass


def _encoded(report: dict[str, Any]) -> bytes:
    """The report as one JSON line of at most MAX_REPORT_BYTES: its longest texts (the value, the
    exception's message and traceback) halved until it fits, each cut marked with "..."."""
    while True:
        data = json.dumps(report).encode() + b"\n"
        shorter = _halved(report)
        if len(data) <= MAX_REPORT_BYTES or shorter == report:
            return data
        report = shorter


def _halved(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= 64 else value[: len(value) // 2] + "..."
    if isinstance(value, list):  # a traceback: its last lines are the ones that say what happened
        return [_halved(item) for item in value[len(value) // 2 :]]
    if isinstance(value, dict):
        return {key: _halved(item) for key, item in value.items()}
    return value


def _print_exception(error: BaseException | None) -> list[str]:
    """Print the traceback as a notebook shows it (the cell's frames, not this module's) on stderr;
    its lines."""
    import traceback

    if error is None:
        return []
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        lines = traceback.format_exception(type(error), error, tb)
        sys.stderr.write("".join(lines))
        return [line[:MAX_VALUE_CHARS] for line in lines[:64]]
    except BaseException:
        return []
