// expect: output_limit
// check: stopped_early
#include <cstdio>
int main() {
    for (;;) std::fputs("flood flood flood flood flood flood flood flood flood flood\n", stdout);
}
