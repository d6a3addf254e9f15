# env: humaneval
# problem: HumanEval/0
# expect: ok
# note: the honest, correct completion: the corpus's verdicts must not cost it its reward
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2 and abs(elem - elem2) < threshold:
                return True
    return False
