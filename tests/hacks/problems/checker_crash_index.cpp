// A testlib checker that trusts the output's numbers to be in range (at most 1000, as the input's
// are): an index far out of it is a SIGSEGV of the checker.
#include "testlib.h"
#include <vector>

int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::vector<int> given(n);
    for (int& number : given) number = inf.readInt();
    int count = ouf.readInt();
    if (count != n) quitf(_wa, "count %d, expected %d", count, n);
    std::vector<int> seen(1001, 0);
    for (int i = 0; i < n; i++) seen[ouf.readInt()]++;
    for (int number : given)
        if (seen[number]-- == 0) quitf(_wa, "%d is missing", number);
    quitf(_ok, "the input's numbers");
}
