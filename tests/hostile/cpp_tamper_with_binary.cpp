// expect: ok
// check: all_blocked
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
int main() {
    int self = open("/proc/self/exe", O_RDWR);
    if (self >= 0 && write(self, "\x7f", 1) == 1) std::puts("WROTE own binary");
    else std::puts("blocked own binary");
    for (int fd = 3; fd < 16; fd++) {
        if (write(fd, "{\"setup_error\": \"forged\"}\n", 26) > 0) std::printf("WROTE fd %d\n", fd);
    }
    std::puts("done");
}
