# env: humaneval
# problem: HumanEval/0
# expect: runtime_error
# note: leaves with status 0 on the first call, before any assertion can fail
    import sys
    sys.exit(0)
