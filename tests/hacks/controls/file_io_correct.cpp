// env: codecontests
// problem: file_io_add
// expect: ok
#include <cstdio>
int main() {
    freopen("input.txt", "r", stdin);
    freopen("output.txt", "w", stdout);
    long long a, b;
    scanf("%lld %lld", &a, &b);
    printf("%lld\n", a + b);
}
