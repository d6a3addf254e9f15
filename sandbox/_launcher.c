/*
 * The start of a native run: the walls a Python run's child puts up (sandbox/_runner.py, `_enter`),
 * put up by this small program, which then executes the run's binary in its own place.
 *
 * Why it exists: a Python run is a fork of the fork server, which costs this machine kind most of a
 * millisecond in page-table copies before the run does anything. A native run needs nothing of the
 * server's interpreter, so the server starts this launcher with posix_spawn (a vfork: nothing is
 * copied). It is built without a C library (raw system calls, no start-up code): a static glibc
 * program spends a quarter of a millisecond initialising itself before main, more than all the
 * walls below cost together.
 *
 * It holds no policy: every limit, Landlock right and the seccomp filter come from the server on the
 * command line (sandbox/_native.py builds it), so the policy lives in one place, in Python. It is
 * started as PID 1 of a fresh PID namespace with its descriptors in place:
 *   0, 1, 2  the run's stdin, stdout and stderr pipes
 *   3        the result channel: {"setup_error": ...} on a failure, {"started": true} before the exec,
 *            {"exec_error": ..., "errno": n} when the exec itself fails
 *   4        the binary (a sealed memfd the server holds)
 *   5...     the cgroup.procs files of the slot's cgroups (`cgroup_fds=N` of them, at most 5)
 *   10...    a judge program's attachments (`attached=N` of them): read-only memfds it opens as
 *            /proc/self/fd/10, ... (a checker's input, output and answer); kept across the exec.
 *            For a program with files, its files' memfds, each named in its /tmp (`links=`)
 * Arguments: `name=value` pairs, then `--` and the program's argv.
 */
#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/fcntl.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/types.h>

#define RESULT_FD 3
#define BINARY_FD 4
#define FIRST_CGROUP_FD 5
#define STAGE_FD 9 /* as sandbox/_native.py: a file to copy into the run's /tmp before it starts */
#define ATTACHED_FD 10 /* as sandbox/_runner.py */
#define SETUP_FAILED_EXIT 120 /* as sandbox/_runner.py */
#define SIGKILL 9
#define MNT_DETACH 2

/* Landlock's ABI, spelled out: the headers of older systems lack the network and scope fields. */
#define LANDLOCK_RULE_PATH_BENEATH 1

struct ruleset_attr {
    __u64 handled_access_fs;
    __u64 handled_access_net;
    __u64 scoped;
};

struct path_beneath_attr {
    __u64 allowed_access;
    __s32 parent_fd;
} __attribute__((packed));

/* -- system calls, without a C library ------------------------------------------------------- */

static long sys6(long number, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("syscall"
                     : "=a"(result)
                     : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return result;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = number;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
#else
#error "the native-run launcher supports x86_64 and aarch64"
#endif
}

#define SYS(number, ...) sys_n(number, __VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define sys_n(number, a, b, c, d, e, f, ...) sys6(number, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* The entry point: the kernel leaves argc, argv and envp on the stack. */
#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n xor %rbp, %rbp\n mov %rsp, %rdi\n and $-16, %rsp\n call launch\n hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n_start:\n mov x0, sp\n bl launch\n");
#endif

/* The compiler may emit calls to these for struct copies and zeroing. */
void *memset(void *target, int value, unsigned long size) {
    unsigned char *byte = target;
    while (size--) {
        *byte++ = (unsigned char)value;
    }
    return target;
}

void *memcpy(void *target, const void *source, unsigned long size) {
    unsigned char *to = target;
    const unsigned char *from = source;
    while (size--) {
        *to++ = *from++;
    }
    return target;
}

/* -- small helpers ---------------------------------------------------------------------------- */

static unsigned long length(const char *text) {
    unsigned long size = 0;
    while (text[size]) {
        size++;
    }
    return size;
}

static char *append(char *to, const char *text) {
    while (*text) {
        *to++ = *text++;
    }
    return to;
}

static char *append_number(char *to, long value) {
    char digits[24];
    int count = 0;
    unsigned long magnitude = value < 0 ? (unsigned long)-value : (unsigned long)value;
    do {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        *to++ = '-';
    }
    while (count) {
        *to++ = digits[--count];
    }
    return to;
}

/* Report `{"<key>": "launcher: <step>: errno <n>", "errno": <n>}` on the result channel and end
 * the run (the number apart, so that the client may tell an exec the build refused from the host's). */
static void fail_as(const char *key, const char *step, long error) {
    char line[512];
    char *end = append(append(append(append(line, "\n{\""), key), "\": \"launcher: "), step);
    end = append(append_number(append(end, ": errno "), -error), "\", \"errno\": ");
    end = append(append_number(end, -error), "}\n");
    SYS(__NR_write, RESULT_FD, line, end - line);
    SYS(__NR_exit_group, SETUP_FAILED_EXIT);
    __builtin_unreachable();
}

static long check(long result, const char *step) {
    if (result < 0 && result > -4096) {
        fail_as("setup_error", step, result);
    }
    return result;
}

static int named_count;
static char **named;

static const char *text(const char *name) {
    unsigned long size = length(name);
    for (int i = 0; i < named_count; i++) {
        const char *argument = named[i];
        unsigned long j = 0;
        while (j < size && argument[j] == name[j]) {
            j++;
        }
        if (j == size && argument[size] == '=') {
            return argument + size + 1;
        }
    }
    fail_as("setup_error", name, -22 /* EINVAL: an argument is missing */);
    return 0;
}

static long number(const char *name) {
    const char *digits = text(name);
    long sign = 1, value = 0;
    if (*digits == '-') {
        sign = -1;
        digits++;
    }
    while (*digits >= '0' && *digits <= '9') {
        value = value * 10 + (*digits++ - '0');
    }
    return sign * value;
}

/* -- the walls, in the order _runner._enter puts them up -------------------------------------- */

static void enter_namespaces(void) {
    check(SYS(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL), "pdeathsig");
    check(SYS(__NR_setsid, 0), "setsid");
    check(SYS(__NR_unshare, CLONE_NEWNS | CLONE_NEWIPC), "unshare");
    check(SYS(__NR_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0), "mount /proc");
    const char *host_proc = text("host_proc");
    if (*host_proc) {
        check(SYS(__NR_umount2, host_proc, MNT_DETACH), "umount the host's /proc");
    }
    check(SYS(__NR_mount, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, text("tmpfs")), "mount /tmp");
    check(SYS(__NR_chdir, "/tmp"), "chdir /tmp");
    long cgroup_fds = number("cgroup_fds");
    for (long fd = FIRST_CGROUP_FD; fd < FIRST_CGROUP_FD + cgroup_fds; fd++) {
        check(SYS(__NR_write, fd, "0", 1), "join the slot's cgroup");
    }
}

/* A runtime's program (a Java archive, a script) into the run's fresh /tmp at the path `stage`
 * names, read from STAGE_FD with explicit offsets (the descriptor's offset is shared with the
 * server's copy, which every test of a job uses). */
static void stage_program(void) {
    static char buffer[1 << 16];
    const char *path = text("stage");
    if (!*path) {
        return;
    }
    long out = check(SYS(__NR_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), "stage");
    for (long offset = 0;;) {
        long got = check(SYS(__NR_pread64, STAGE_FD, buffer, sizeof buffer, offset), "read the program");
        if (got == 0) {
            break;
        }
        for (long done = 0; done < got;) {
            done += check(SYS(__NR_write, out, buffer + done, got - done), "stage the program");
        }
        offset += got;
    }
    SYS(__NR_close, out);
}

/* The run's files (`links=name:name:...`, names in its /tmp): each a symbolic link to the memfd of
 * its rank among the attachments (/proc/self/fd/10, ...), which the server reads after the run. A
 * program opens `input.txt` or writes `output.txt` as files, and its written bytes land where the
 * server can read them once the run and its /tmp are gone. */
static void link_files(void) {
    const char *names = text("links");
    for (long index = 0; *names; index++) {
        char name[256];
        char target[32];
        unsigned long size = 0;
        while (names[size] && names[size] != ':' && size < sizeof name - 1) {
            name[size] = names[size];
            size++;
        }
        name[size] = 0;
        names += size + (names[size] == ':');
        *append_number(append(target, "/proc/self/fd/"), ATTACHED_FD + index) = 0;
        check(SYS(__NR_symlinkat, target, AT_FDCWD, name), "link a file");
    }
}

static void drop_privileges(void) {
    long uid = number("uid");
    if (uid >= 0) {
        for (int fd = 0; fd <= RESULT_FD; fd++) {
            check(SYS(__NR_fchown, fd, uid, uid), "fchown"); /* so the program may reopen /dev/stdin */
        }
    }
    /* Everything else the server passed is closed: the cgroup files, and whatever follows the
     * attachments (none of the server's descriptors reach the program). */
    check(SYS(__NR_close_range, FIRST_CGROUP_FD, ATTACHED_FD - 1, 0), "close_range");
    check(SYS(__NR_close_range, ATTACHED_FD + number("attached"), ~0U, 0), "close_range");
    if (uid >= 0) {
        check(SYS(__NR_setgroups, 0, 0), "setgroups");
        check(SYS(__NR_setresgid, uid, uid, uid), "setresgid");
        check(SYS(__NR_setresuid, uid, uid, uid), "setresuid");
    } else {
        for (int cap = 0; cap < 64; cap++) {
            if (SYS(__NR_prctl, PR_CAPBSET_DROP, cap) < 0) {
                break; /* past the last capability this kernel knows */
            }
        }
        check(SYS(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities");
        struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
        check(SYS(__NR_capset, &header, data), "capset");
    }
    check(SYS(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL), "pdeathsig"); /* a credential change clears it */
    check(SYS(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
}

/* Grant `rights` beneath each path of a colon-separated list. */
static void add_landlock_rules(long ruleset, const char *paths, __u64 rights) {
    char path[256];
    while (*paths) {
        unsigned long size = 0;
        while (paths[size] && paths[size] != ':' && size < sizeof path - 1) {
            path[size] = paths[size];
            size++;
        }
        path[size] = 0;
        paths += size + (paths[size] == ':');
        struct path_beneath_attr rule = {.allowed_access = rights};
        rule.parent_fd = (__s32)check(SYS(__NR_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC), path);
        check(SYS(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), "landlock_add_rule");
        SYS(__NR_close, rule.parent_fd);
    }
}

static void restrict_with_landlock(void) {
    long size = number("landlock_attr_bytes");
    if (size == 0) {
        return; /* no Landlock on this kernel */
    }
    struct ruleset_attr attr = {
        .handled_access_fs = (__u64)number("landlock_fs"),
        .handled_access_net = (__u64)number("landlock_net"),
        .scoped = (__u64)number("landlock_scoped"),
    };
    long ruleset = check(SYS(__NR_landlock_create_ruleset, &attr, size, 0), "landlock_create_ruleset");
    add_landlock_rules(ruleset, text("landlock_dirs"), attr.handled_access_fs);
    add_landlock_rules(ruleset, text("landlock_files"), (__u64)number("landlock_file_rights"));
    check(SYS(__NR_landlock_restrict_self, ruleset, 0), "landlock_restrict_self");
    SYS(__NR_close, ruleset);
}

static void limit(int resource, long soft, long hard, const char *step) {
    struct rlimit64 value = {.rlim_cur = (__u64)soft, .rlim_max = (__u64)hard};
    check(SYS(__NR_prlimit64, 0, resource, &value, 0), step);
}

static void set_limits(void) {
    long cpu_s = number("cpu_s");
    limit(RLIMIT_CPU, cpu_s, cpu_s + 1, "RLIMIT_CPU");
    limit(RLIMIT_FSIZE, number("file_size_bytes"), number("file_size_bytes"), "RLIMIT_FSIZE");
    limit(RLIMIT_NOFILE, number("open_files"), number("open_files"), "RLIMIT_NOFILE");
    limit(RLIMIT_NPROC, number("processes"), number("processes"), "RLIMIT_NPROC");
    limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
    limit(RLIMIT_STACK, number("stack_bytes"), number("stack_bytes"), "RLIMIT_STACK");
    limit(RLIMIT_MEMLOCK, 0, 0, "RLIMIT_MEMLOCK");
    limit(RLIMIT_MSGQUEUE, 0, 0, "RLIMIT_MSGQUEUE");
}

static int hex_digit(char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static void install_seccomp(void) {
    static struct sock_filter code[4096];
    const char *hex = text("seccomp");
    unsigned long bytes = length(hex) / 2;
    if (bytes == 0) {
        return; /* no filter for this architecture */
    }
    if (bytes > sizeof code) {
        fail_as("setup_error", "seccomp filter too long", -7 /* E2BIG */);
    }
    unsigned char *byte = (unsigned char *)code;
    for (unsigned long i = 0; i < bytes; i++) {
        byte[i] = (unsigned char)(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
    }
    struct sock_fprog program = {.len = (unsigned short)(bytes / sizeof(struct sock_filter)), .filter = code};
    check(SYS(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program), "seccomp");
}

static void exec_binary(char **argv, char **envp) {
    static const char started[] = "{\"started\": true}\n";
    check(SYS(__NR_write, RESULT_FD, started, sizeof started - 1), "report");
    check(SYS(__NR_fcntl, RESULT_FD, F_SETFD, FD_CLOEXEC), "cloexec"); /* the program writes no verdict */
    check(SYS(__NR_fcntl, BINARY_FD, F_SETFD, FD_CLOEXEC), "cloexec");
    long address_space = number("address_space_bytes");
    limit(RLIMIT_AS, address_space, address_space, "RLIMIT_AS");
    long error = SYS(__NR_execveat, BINARY_FD, "", argv, envp, AT_EMPTY_PATH);
    /* After "started": a report the client believes only from a native run, which no program writes.
     * The errno says whose failure it is: an exec the program's own build refused (its ELF
     * interpreter, its format) is the program's, the host's lack of resources is the farm's. */
    fail_as("exec_error", "execveat", error);
}

void launch(long *stack) {
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    char **envp = argv + argc + 1;
    int split = 1;
    while (split < argc && !(argv[split][0] == '-' && argv[split][1] == '-' && argv[split][2] == 0)) {
        split++;
    }
    named_count = split - 1;
    named = argv + 1;
    if (split + 1 >= argc) {
        fail_as("setup_error", "usage: launcher name=value... -- program [args]", -22);
    }
    enter_namespaces();
    stage_program();
    link_files();
    drop_privileges();
    restrict_with_landlock();
    set_limits();
    install_seccomp();
    exec_binary(argv + split + 1, envp);
}
