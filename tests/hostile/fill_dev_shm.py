# expect: ok
# limits: {"workdir_mb": 16}
try:
    with open("/dev/shm/fill", "wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
except OSError as error:
    print("stopped", error)
