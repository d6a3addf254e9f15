// expect: ok
// check: all_blocked
#include <cstdio>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <unistd.h>
int main() {
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == 0) std::puts("ALLOWED traceme");
    else std::puts("blocked traceme");
    if (ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr) == 0) std::puts("ALLOWED attach parent");
    else std::puts("blocked attach parent");
    pid_t child = fork();
    if (child == 0) { pause(); _exit(0); }
    if (ptrace(PTRACE_ATTACH, child, nullptr, nullptr) == 0) std::puts("ALLOWED attach child");
    else std::puts("blocked attach child");
}
