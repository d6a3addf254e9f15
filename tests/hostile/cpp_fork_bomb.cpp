// expect: ok timeout runtime_error
// check: no_leftover_processes
#include <unistd.h>
#include <cstdio>
int main() {
    for (int i = 0; i < 100000; i++) {
        if (fork() < 0) break;
    }
    std::puts("done");
}
