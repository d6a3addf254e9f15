// env: codecontests
// problem: add
// expect: runtime_error
// note: an interpreter that exists but is a shell script, not a loader (ELIBBAD)
#include <cstdio>
extern const char interpreter[];
__attribute__((used, section(".interp"))) const char interpreter[] = "/usr/bin/ldd";
int main() { std::puts("0"); }
