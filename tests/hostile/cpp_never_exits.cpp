// expect: timeout
int main() {
    volatile unsigned long spins = 0;
    for (;;) spins++;
}
