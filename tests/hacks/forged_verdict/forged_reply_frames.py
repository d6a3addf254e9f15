# env: humaneval
# problem: HumanEval/0
# expect: runtime_error wrong_answer
# note: answers each call with a hand-made reply frame, then a judge-looking report, on every descriptor
    import os, struct
    for body in (b'["return", true]', b'{"status": "ok"}', b'[' * 20000):
        frame = struct.pack(">I", len(body)) + body
        for fd in range(3, 64):
            try:
                os.write(fd, frame)
            except OSError:
                pass
    os._exit(0)
