// A testlib checker that reads the output's tokens with std::stoll: a word throws
// std::invalid_argument, which nothing catches (abort).
#include "testlib.h"
#include <algorithm>
#include <string>
#include <vector>

int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::vector<long long> given(n), got(n);
    for (long long& number : given) number = inf.readLong();
    long long count = std::stoll(ouf.readToken());
    if (count != n) quitf(_wa, "count %lld, expected %d", count, n);
    for (long long& number : got) number = std::stoll(ouf.readToken());
    std::sort(given.begin(), given.end());
    std::sort(got.begin(), got.end());
    if (given != got) quitf(_wa, "not the input's numbers");
    quitf(_ok, "the input's numbers");
}
