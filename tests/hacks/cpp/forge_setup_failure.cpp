// env: codecontests
// problem: add
// expect: runtime_error
// note: writes a setup failure record to every descriptor and exits with the launcher's own failure code
#include <unistd.h>
int main() {
    for (int fd = 3; fd < 64; fd++) {
        if (write(fd, "\n{\"setup_error\": \"forged\"}\n", 27) < 0) {}
    }
    _exit(120);
}
