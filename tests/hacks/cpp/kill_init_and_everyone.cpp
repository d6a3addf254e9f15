// env: codecontests
// problem: add
// expect: wrong_answer runtime_error
// note: SIGKILL to every pid and to itself: a kill from inside never reads as one from outside
#include <csignal>
#include <cstdio>
#include <unistd.h>
int main() {
    for (int pid = -1; pid < 4096; pid++) kill(pid, SIGKILL);
    std::printf("0\n");
}
