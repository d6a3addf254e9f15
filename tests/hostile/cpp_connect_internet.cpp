// expect: ok
// check: all_blocked
#include <arpa/inet.h>
#include <cstdio>
#include <sys/socket.h>
#include <unistd.h>
int main() {
    const char* hosts[] = {"1.1.1.1", "8.8.8.8", "10.0.0.1"};
    for (const char* host : hosts) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(80);
        inet_pton(AF_INET, host, &address.sin_addr);
        if (fd >= 0 && connect(fd, (sockaddr*)&address, sizeof address) == 0) std::printf("CONNECTED %s\n", host);
        else std::printf("blocked %s\n", host);
        int udp = socket(AF_INET, SOCK_DGRAM, 0);
        if (udp >= 0 && sendto(udp, "x", 1, 0, (sockaddr*)&address, sizeof address) == 1) std::printf("CONNECTED udp %s\n", host);
        else std::printf("blocked udp %s\n", host);
    }
}
