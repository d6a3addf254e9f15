// expect: memory_limit
#include <cstring>
#include <vector>
int main() {
    std::vector<char*> blocks;
    for (;;) {
        char* block = new char[64 << 20];
        std::memset(block, 1, 64 << 20);
        blocks.push_back(block);
    }
}
