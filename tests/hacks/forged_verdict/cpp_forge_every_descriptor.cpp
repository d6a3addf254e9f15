// env: codecontests
// problem: add
// expect: wrong_answer runtime_error
// note: a C++ program that writes success records everywhere and exits 0 with a wrong answer
#include <cstdio>
#include <unistd.h>
int main() {
    for (int fd = 3; fd < 256; fd++) {
        if (write(fd, "\n{\"started\": true}\n{\"status\": \"ok\"}\n", 35) < 0) {}
    }
    std::printf("0\n");
    return 0;
}
