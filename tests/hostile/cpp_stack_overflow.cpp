// expect: runtime_error memory_limit
#include <cstdio>
int depth(int n) {
    volatile char frame[4096];
    frame[0] = (char)n;
    return depth(n + 1) + frame[0];
}
int main() { std::printf("%d\n", depth(0)); }
