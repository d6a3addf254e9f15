// expect: syntax_error
// check: compiler_saw_no_host_file
#include "/etc/shadow"
#include "/root/.bash_history"
int main() {}
