// A testlib partial-credit checker: a diagnostic on stderr of its own, then quitp.
#include "testlib.h"
#include <iostream>

int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int right = 0, total = 0, mismatch = -1;
    while (!ans.seekEof()) {
        std::string expected = ans.readToken();
        std::string got = ouf.seekEof() ? "" : ouf.readToken();
        if (got == expected) right++;
        else if (mismatch < 0) mismatch = total;
        total++;
    }
    if (mismatch >= 0) std::cerr << "first mismatch at token " << mismatch << std::endl;
    quitp(double(right) / total, "%d of %d tokens", right, total);
}
