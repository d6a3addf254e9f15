# env: codecontests
# problem: add
# expect: wrong_answer
import os
os.close(1)
os._exit(0)
