// expect: ok
// check: only_own_processes
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <set>
int main() {
    std::set<int> pids;
    DIR* proc = opendir("/proc");
    while (proc) {
        dirent* entry = readdir(proc);
        if (!entry) break;
        if (std::isdigit((unsigned char)entry->d_name[0])) pids.insert(std::atoi(entry->d_name));
    }
    std::printf("PIDS [");
    const char* comma = "";
    for (int pid : pids) { std::printf("%s%d", comma, pid); comma = ", "; }
    std::puts("]");
}
