// env: codecontests
// problem: add
// expect: runtime_error
// note: the interpreter section written by the assembler, no attribute at all
#include <cstdio>
__asm__(".section .interp,\"a\"\n.string \"/lib64/no-such-loader.so.2\"\n.previous");
int main() { std::puts("0"); }
