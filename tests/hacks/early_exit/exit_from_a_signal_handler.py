# env: humaneval
# problem: HumanEval/0
# expect: runtime_error wrong_answer timeout
    import os, signal
    signal.signal(signal.SIGALRM, lambda *a: os._exit(0))
    signal.setitimer(signal.ITIMER_REAL, 0.001)
    import time
    time.sleep(1)
    return None
