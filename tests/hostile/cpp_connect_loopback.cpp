// expect: ok
// check: no_loopback_connection
#include <arpa/inet.h>
#include <cstdio>
#include <iostream>
#include <sys/socket.h>
#include <unistd.h>
int main() {
    int port = 0;
    std::cin >> port;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (fd >= 0 && connect(fd, (sockaddr*)&address, sizeof address) == 0) std::puts("CONNECTED");
    else std::perror("blocked");
}
