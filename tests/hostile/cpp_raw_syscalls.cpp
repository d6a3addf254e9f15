// expect: ok
// check: all_blocked
#include <cstdio>
#include <csignal>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
static void report(const char* name, long result) { std::printf("%s %s\n", result < 0 ? "blocked" : "ALLOWED", name); }
int main() {
    report("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr));
    report("umount2", syscall(SYS_umount2, "/proc", MNT_DETACH));
    report("unshare user", syscall(SYS_unshare, CLONE_NEWUSER));
    report("unshare net", syscall(SYS_unshare, CLONE_NEWNET));
    report("setns", syscall(SYS_setns, 0, 0));
    report("chroot", syscall(SYS_chroot, "/tmp"));
    report("bpf", syscall(SYS_bpf, 0, nullptr, 0));
    report("keyctl", syscall(SYS_keyctl, 0, 0, 0, 0, 0));
    report("io_uring_setup", syscall(425, 1, nullptr));
    report("perf_event_open", syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0));
    report("userfaultfd", syscall(SYS_userfaultfd, 0));
    report("clone newns", syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, nullptr, nullptr, nullptr, 0));
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, nullptr, 0));
    report("reboot", syscall(SYS_reboot, 0, 0, 0, nullptr));
}
