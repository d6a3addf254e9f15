# expect: memory_limit
# limits: {"memory_mb": 128, "wall_s": 10}
chunks = []
while True:
    chunks.append(b"x" * (1 << 20))
