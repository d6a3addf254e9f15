// expect: runtime_error
#include <cstdlib>
#include <stdexcept>
int main() { throw std::runtime_error("uncaught"); }
