# env: humaneval
# problem: HumanEval/0
# expect: runtime_error wrong_answer
# note: a thread waits for the first call, then ends the process with status 0 mid-test
    import os, threading
    threading.Timer(0.001, lambda: os._exit(0)).start()
    return None
