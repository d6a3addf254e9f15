// expect: ok
// check: no_leftover_processes
#include <cstdio>
#include <unistd.h>
int main() {
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            sleep(2);
            FILE* f = std::fopen("/tmp/daemon-was-here", "w");
            if (f) std::fclose(f);
            for (;;) pause();
        }
        _exit(0);
    }
    std::puts("parent leaves");
}
