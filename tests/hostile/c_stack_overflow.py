# expect: runtime_error timeout
# (a crash of the interpreter's C stack; on a machine short of CPU the wall clock may come first)
import sys
sys.setrecursionlimit(10 ** 8)
nested = []
for _ in range(10 ** 6):
    nested = [nested]
print(len(repr(nested)))
