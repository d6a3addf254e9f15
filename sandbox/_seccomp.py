"""A seccomp-bpf filter denying what a judged program never needs.

The filter is assembled here by hand (classic BPF) so it can be loaded from a `python -I -S`
process with no third-party bindings. Denied calls fail with EPERM, so a program sees an ordinary
error rather than dying mysteriously; a call from a foreign architecture (x32, i386 on x86_64) kills
the process, since the numbers below would not mean what they say there.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from evalfarm.sandbox import _linux

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000
AF_VSOCK = 40

# Per architecture: name -> number. The names are the policy; the numbers are the ABI.
_SYSCALLS = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321,
        "perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
        "open_tree": 428, "mount_setattr": 442, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
        "swapoff": 168, "acct": 163, "userfaultfd": 323, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "pidfd_getfd": 438, "syslog": 103, "personality": 135,
        "quotactl": 179, "iopl": 172, "ioperm": 173, "uselib": 134, "vhangup": 153,
        "clone": 56, "clone3": 435, "socket": 41, "prlimit64": 302, "setrlimit": 160,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280,
        "perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
        "open_tree": 428, "mount_setattr": 442, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224,
        "swapoff": 225, "acct": 89, "userfaultfd": 282, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "pidfd_getfd": 438, "syslog": 116, "personality": 92,
        "quotactl": 60, "clone": 220, "clone3": 435, "socket": 198, "prlimit64": 261, "setrlimit": 164,
    },
}  # fmt: skip

# Denied outright: debugging other processes, kernel attack surface (bpf, io_uring, keyrings,
# perf), and anything that changes the sandbox's own walls (mounts, namespaces, root, limits).
_FILTERED = {"clone", "clone3", "socket", "prlimit64"}
DENIED = tuple(name for name in _SYSCALLS["x86_64"] if name not in _FILTERED)
RLIMIT_AS = 9  # the same number on every architecture Linux has

_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0 = 16  # low 32 bits of args[0] on little-endian machines
_OFF_ARG1 = 24
_OFF_ARG2 = 32
_OFF_ARG2_HIGH = 36


def _ret_errno(code: int) -> tuple[str, int]:
    return ("ret", _RET_ERRNO | code)


def _program(machine: str) -> list[tuple]:
    """The filter as a list of (op, k, jump_true_label, jump_false_label) / ("label", name) items.

    The system call number is looked up in a binary tree of comparisons, not a chain: a call
    passes about six tests instead of fifty, and the kernel, which evaluates the filter for every
    call number when it is loaded (to cache the calls it always allows), does the same for each
    run in a fifth of the time.
    """
    table = _SYSCALLS[machine]
    prog: list[tuple] = [
        ("ld", _OFF_ARCH),
        ("jeq", _AUDIT_ARCH[machine], None, "kill"),
        ("ld", _OFF_NR),
    ]
    if machine == "x86_64":
        prog.append(("jge", _X32_SYSCALL_BIT, "kill", None))
    targets = {table[name]: "eperm" for name in DENIED if name in table}
    targets[table["clone3"]] = "enosys"  # its flags sit behind a pointer: make libc use clone
    targets[table["clone"]] = "clone"
    targets[table["socket"]] = "socket"
    targets[table["prlimit64"]] = "prlimit"
    _lookup(sorted(targets.items()), prog, "n")
    prog += [
        # A run's limits are the sandbox's: reading them is fine, changing them is not (a program
        # that lowered its own RLIMIT_CPU would die of a SIGKILL that looks like one from outside,
        # turning its failure into the farm's). RLIMIT_AS stays settable, as the run itself sets
        # it last (and only down: the hard limit holds), which can only make the program fail.
        ("label", "prlimit"),
        ("ld", _OFF_ARG2),
        ("jeq", 0, None, "prlimit_resource"),
        ("ld", _OFF_ARG2_HIGH),
        ("jeq", 0, "allow", None),
        ("label", "prlimit_resource"),
        ("ld", _OFF_ARG1),
        ("jeq", RLIMIT_AS, "allow", "eperm"),
        ("label", "allow"),
        ("ret", _RET_ALLOW),
        ("label", "clone"),
        ("ld", _OFF_ARG0),
        ("jset", _linux.NAMESPACE_FLAGS, "eperm", None),
        ("ret", _RET_ALLOW),
        ("label", "socket"),
        ("ld", _OFF_ARG0),
        ("jeq", AF_VSOCK, "eafnosupport", None),
        ("ret", _RET_ALLOW),
        ("label", "kill"),
        ("ret", _RET_KILL_PROCESS),
        ("label", "eperm"),
        _ret_errno(errno.EPERM),
        ("label", "enosys"),
        _ret_errno(errno.ENOSYS),
        ("label", "eafnosupport"),
        _ret_errno(errno.EAFNOSUPPORT),
    ]
    return prog


def _lookup(entries: list[tuple[int, str]], prog: list[tuple], name: str) -> None:
    """Emit a search of the loaded call number among `entries` (sorted (number, label) pairs):
    a jump to its label when found, ALLOW otherwise."""
    if len(entries) <= 4:
        prog.extend(("jeq", number, label, None) for number, label in entries)
        prog.append(("ret", _RET_ALLOW))
        return
    middle = len(entries) // 2
    prog.append(("jge", entries[middle][0], f"{name}1", None))
    _lookup(entries[:middle], prog, f"{name}0")
    prog.append(("label", f"{name}1"))
    _lookup(entries[middle:], prog, f"{name}1")


def assemble(machine: str) -> bytes:
    """The filter as packed `struct sock_filter` entries."""
    items = _program(machine)
    labels: dict[str, int] = {}
    position = 0
    for item in items:
        if item[0] == "label":
            labels[item[1]] = position
        else:
            position += 1
    code = []
    position = 0
    for item in items:
        if item[0] == "label":
            continue
        op, k = item[0], item[1]
        if op == "ld":
            code.append(struct.pack("HBBI", _LD_W_ABS, 0, 0, k))
        elif op == "ret":
            code.append(struct.pack("HBBI", _RET, 0, 0, k))
        else:
            jt, jf = (0 if label is None else labels[label] - position - 1 for label in item[2:4])
            assert 0 <= jt <= 255 and 0 <= jf <= 255, "classic BPF jumps forward by at most 255"
            opcode = {"jeq": _JEQ, "jge": _JGE, "jset": _JSET}[op]
            code.append(struct.pack("HBBI", opcode, jt, jf, k))
        position += 1
    return b"".join(code)


def supported() -> bool:
    """Whether this architecture has a filter."""
    return _linux.MACHINE in _SYSCALLS


class Loadable:
    """An assembled filter in a buffer of this process and the `struct sock_fprog` pointing at it.

    Built once by the fork server; a forked run has both at the same addresses and only makes the
    system call (building them per run cost the run about 40 copy-on-write page faults).
    """

    def __init__(self, filter_code: bytes) -> None:
        self._buffer = ctypes.create_string_buffer(filter_code, len(filter_code))
        self.prog = struct.pack("HxxxxxxQ", len(filter_code) // 8, ctypes.addressof(self._buffer))


def install(loadable: Loadable) -> None:
    """Load a filter on the calling thread (needs no_new_privs or CAP_SYS_ADMIN)."""
    _linux.syscall("seccomp", 1, 0, loadable.prog)  # SECCOMP_SET_MODE_FILTER, no flags
