// env: codecontests
// problem: add
// expect: runtime_error timeout
// note: raises the CPU-limit signal itself (PID 1 ignores a signal from inside with no handler)
#include <csignal>
#include <cstdio>
int main() { raise(SIGXCPU); raise(SIGKILL); std::printf("0\n"); return 1; }
