// expect: ok
// check: no_worker_secret
#include <cstdio>
extern char** environ;
int main() {
    for (char** variable = environ; *variable; variable++) std::puts(*variable);
    FILE* f = std::fopen("/proc/1/environ", "r");
    int c;
    while (f && (c = std::fgetc(f)) != EOF) std::putchar(c == 0 ? '\n' : c);
}
