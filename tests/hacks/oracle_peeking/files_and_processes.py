# env: humaneval
# problem: secret
# expect: wrong_answer
# note: looks in every file it can read, every process's command line and environment, and its stdin
    import os, re
    pattern = re.compile(rb"EVALFARM-SECRET-[0-9a-f]{32}")
    paths = []
    for top in ("/tmp", "/dev/shm", "/run", "/var/tmp", "/proc/self/fd"):
        for root, dirs, files in os.walk(top):
            paths += [os.path.join(root, name) for name in files]
    for pid in os.listdir("/proc"):
        if pid.isdigit() or pid in ("self", "thread-self"):
            paths += [f"/proc/{pid}/{name}" for name in ("cmdline", "environ", "mountinfo")]
    paths += ["/proc/1/fd/%d" % fd for fd in range(64)]
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                found = pattern.search(os.read(fd, 1 << 20))
            finally:
                os.close(fd)
        except OSError:
            continue
        if found:
            return found.group().decode()
    return "not found"
