// env: codecontests
// problem: add
// expect: timeout runtime_error
// note: setrlimit(RLIMIT_CPU) lowered to one second, then a spin: must not become infra_error
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
int main() {
    struct rlimit limit = {1, 1};
    setrlimit(RLIMIT_CPU, &limit);
    syscall(SYS_prlimit64, 0, RLIMIT_CPU, &limit, nullptr);
    for (volatile unsigned long i = 0;; i++) {}
}
