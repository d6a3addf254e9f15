# expect: runtime_error
import os
os.setuid(0)
print("ROOT")
