# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: tries to signal every process it can name, the judge included, with every signal
    import os, signal
    for pid in list(range(1, 4096)) + [-1]:
        for sig in (signal.SIGKILL, signal.SIGSEGV, signal.SIGXCPU, signal.SIGTERM):
            try:
                os.kill(pid, sig)
            except (OSError, ValueError):
                pass
    return None
