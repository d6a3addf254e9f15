// env: codecontests
// problem: add
// expect: runtime_error
// note: the same in C++, where a const at namespace scope needs extern to be kept
#include <cstdio>
extern const char interpreter[];
__attribute__((used, section(".interp"))) const char interpreter[] = "/lib64/no-such-loader.so.2";
int main() { std::puts("0"); }
