// env: codecontests
// problem: add
// expect: wrong_answer runtime_error
// note: tries to rewrite the binary it was started from, so that a later (cached) run prints the answer
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
int main() {
    const char* paths[] = {"/proc/self/exe", "/proc/self/fd/4", "/proc/1/exe"};
    for (const char* path : paths) {
        int fd = open(path, O_WRONLY);
        if (fd >= 0) { if (write(fd, "x", 1) < 0) {} close(fd); }
    }
    std::printf("0\n");
}
