// expect: runtime_error
#include <unistd.h>
int main() {
    for (int fd = 3; fd < 64; fd++) {
        if (write(fd, "\n{\"setup_error\": \"forged\"}\n", 27) < 0) {}
    }
    _exit(120);  // the launcher's own exit code for a failed setup
}
