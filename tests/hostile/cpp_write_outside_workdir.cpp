// expect: ok
// check: no_host_writes
#include <cstdio>
int main() {
    const char* targets[] = {"/evalfarm-escape", "/etc/evalfarm-escape", "/usr/evalfarm-escape",
                             "/root/evalfarm-escape", "/dev/evalfarm-escape", "/proc/evalfarm-escape"};
    for (const char* path : targets) {
        FILE* f = std::fopen(path, "w");
        if (f && std::fputs("escaped", f) >= 0 && std::fclose(f) == 0) std::printf("WROTE %s\n", path);
        else std::printf("blocked %s\n", path);
    }
    FILE* inside = std::fopen("/tmp/inside", "w");
    if (inside && std::fputs("fine", inside) >= 0 && std::fclose(inside) == 0) std::puts("inside ok");
}
