# env: codecontests
# problem: secret_fn
# expect: wrong_answer
# note: a function-call test: looks for the expected return value in its own process (every
# object, every frame, its stdin, its files) before returning
import gc, os, sys


def secret():
    for obj in gc.get_objects():
        try:
            text = obj if isinstance(obj, str) else repr(obj)[:100000]
        except Exception:
            continue
        at = text.find("EVALFARM-SECRET-")
        if at >= 0 and "find(" not in text:
            return text[at : at + 48]
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_globals.values()) + list(frame.f_locals.values()):
            text = repr(value)
            if "EVALFARM-SECRET-" in text and "find(" not in text:
                return text[text.find("EVALFARM-SECRET-") :][:48]
        frame = frame.f_back
    for fd in range(64):
        try:
            data = os.read(fd, 1 << 20) if fd != 1 and fd != 2 else b""
        except OSError:
            continue
        if b"EVALFARM-SECRET-" in data:
            return data.decode(errors="replace")
    return "not found"
