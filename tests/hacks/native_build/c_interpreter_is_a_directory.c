// env: codecontests
// problem: add
// expect: runtime_error
// note: an interpreter that is a directory, which nothing executes (EACCES)
#include <stdio.h>
__attribute__((used, section(".interp"))) const char interpreter[] = "/tmp";
int main(void) {
    puts("0");
    return 0;
}
