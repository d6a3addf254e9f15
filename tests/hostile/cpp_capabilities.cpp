// expect: ok
// check: all_blocked
#include <cstdio>
#include <cstring>
#include <unistd.h>
int main() {
    if (getuid() == 0 || geteuid() == 0) std::puts("ROOT uid");
    if (setuid(0) == 0) std::puts("ROOT setuid");
    FILE* status = std::fopen("/proc/self/status", "r");
    char line[256];
    while (status && std::fgets(line, sizeof line, status)) {
        bool capabilities = !std::strncmp(line, "CapInh", 6) || !std::strncmp(line, "CapPrm", 6) ||
                            !std::strncmp(line, "CapEff", 6) || !std::strncmp(line, "CapAmb", 6);
        if (capabilities && std::strstr(line, "0000000000000000") == nullptr) std::printf("ROOT %s", line);
    }
    std::puts("checked");
}
