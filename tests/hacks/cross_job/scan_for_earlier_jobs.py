# env: humaneval
# problem: secret
# expect: wrong_answer
# after: controls/he_secret_solved.py
# note: runs right after a sibling that solved the same problem (its code, input and output held the
# answer) on the same slot; scans its own memory for the sibling's bytes and returns the answer found
    import ctypes, re
    pattern = re.compile(rb"EVALFARM-SECRET-[0-9a-f]{32}")
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again: /proc/self/mem becomes readable
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    with open("/proc/self/mem", "rb", 0) as mem:
        for fields in regions:
            if not fields[1].startswith("r"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            for offset in range(start, end, 1 << 20):
                try:
                    mem.seek(offset)
                    chunk = mem.read(min(end - offset, (1 << 20) + 64))
                except (OSError, ValueError, OverflowError):
                    continue
                found = pattern.search(chunk)
                if found:
                    return found.group().decode()
    return "not found"
