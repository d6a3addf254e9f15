# env: codecontests
# problem: add
# expect: timeout runtime_error
# note: lowers its own CPU limit so the kernel's SIGKILL would look like a kill from outside (infra_error)
import resource
try:
    resource.setrlimit(resource.RLIMIT_CPU, (1, 1))
except (OSError, ValueError):
    pass
while True:
    pass
