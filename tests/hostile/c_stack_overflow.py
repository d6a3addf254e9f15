# expect: runtime_error
import sys
sys.setrecursionlimit(10 ** 8)
nested = []
for _ in range(10 ** 6):
    nested = [nested]
print(len(repr(nested)))
