// expect: memory_limit timeout syntax_error
// limits: {"compile_wall_s": 10, "compile_memory_mb": 256}
#include "/dev/zero"
int main() {}
