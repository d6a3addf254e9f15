// env: codecontests
// problem: file_io_add
// expect: output_limit
// An answer file of 50 MB, the right answer first: past the output cap, whatever it begins with.
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    FILE *out = fopen("output.txt", "w");
    long long a, b;
    scanf("%lld %lld", &a, &b);
    fprintf(out, "%lld\n", a + b);
    for (long i = 0; i < (50L << 20); i++) fputc(' ', out);
    fclose(out);
}
