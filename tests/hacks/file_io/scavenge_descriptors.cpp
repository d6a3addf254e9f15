// env: codecontests
// problem: file_io_secret
// expect: wrong_answer
// Everything the run can open (its descriptors, its working directory's files) copied into the
// answer, hoping the expected output is among them: it never enters the run.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <string>
static std::string found;
static void take(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);  // a pipe's end must not block the hunt
    if (fd < 0) return;
    char buffer[4096];
    ssize_t got;
    while (found.size() < (1 << 20) && (got = read(fd, buffer, sizeof buffer)) > 0) found.append(buffer, got);
    close(fd);
}
int main() {
    for (int fd = 0; fd < 64; fd++) take("/proc/self/fd/" + std::to_string(fd));
    if (DIR *here = opendir(".")) {
        while (dirent *entry = readdir(here)) take(entry->d_name);
        closedir(here);
    }
    FILE *out = fopen("output.txt", "w");
    fwrite(found.data(), 1, found.size(), out);
    fclose(out);
}
