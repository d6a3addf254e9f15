# expect: output_limit
# limits: {"output_bytes": 65536}
print("z" * (1 << 22))
