# env: humaneval
# problem: HumanEval/38
# expect: ok
# note: the canonical solution calls the prompt's encode_cyclic, which the test calls too
    return encode_cyclic(encode_cyclic(s))
