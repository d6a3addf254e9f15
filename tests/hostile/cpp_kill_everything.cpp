// expect: ok runtime_error
#include <csignal>
#include <cstdio>
#include <unistd.h>
int main() {
    std::printf("kill -1: %d\n", kill(-1, SIGKILL));
    std::printf("kill 0: %d\n", kill(0, SIGTERM));
    std::printf("kill parent: %d\n", kill(getppid(), SIGKILL));
    std::printf("kill 1: %d\n", kill(1, SIGKILL));
    std::puts("still here");
}
