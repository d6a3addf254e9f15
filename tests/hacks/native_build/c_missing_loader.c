// env: codecontests
// problem: add
// expect: runtime_error
// note: a wrong answer whose build names an ELF interpreter that does not exist: the kernel refuses
// note: to execute it (ENOENT), which once came back infra_error, retried and never a reward of 0
#include <stdio.h>
__attribute__((used, section(".interp"))) const char interpreter[] = "/lib64/no-such-loader.so.2";
int main(void) {
    puts("0");
    return 0;
}
