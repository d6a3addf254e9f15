// expect: ok
// check: project_hidden
#include <cstdio>
#include <dirent.h>
#include <iostream>
#include <string>
int main() {
    std::string project_file;
    std::getline(std::cin, project_file);
    const std::string paths[] = {"/etc/shadow", "/etc/passwd", "/root/.bash_history", "/var/log/syslog",
                                 "/proc/1/environ", project_file};
    for (const std::string& path : paths) {
        FILE* f = std::fopen(path.c_str(), "r");
        if (f && std::fgetc(f) != EOF && path != "/proc/1/environ") std::printf("READ %s\n", path.c_str());
        else std::printf("blocked %s\n", path.c_str());
    }
    for (const char* path : {"/home", "/var", "/run", "/srv", "/mnt"}) {
        DIR* dir = opendir(path);
        int entries = 0;
        while (dir && readdir(dir)) entries++;
        std::printf("%s %s\n", entries > 2 ? "LISTED" : "blocked", path);
    }
}
