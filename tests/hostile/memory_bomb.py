# expect: memory_limit
# limits: {"memory_mb": 128}
x = bytearray(8 * 1024 ** 3)
