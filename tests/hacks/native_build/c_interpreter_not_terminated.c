// env: codecontests
// problem: add
// expect: runtime_error
// note: an interpreter path without its terminating NUL: a format the kernel will not run (ENOEXEC)
#include <stdio.h>
__attribute__((used, section(".interp"))) const char interpreter[4] = {'/', 'b', 'i', 'n'};
int main(void) {
    puts("0");
    return 0;
}
