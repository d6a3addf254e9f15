"""The assembled seccomp filter, run by a small classic-BPF interpreter on every call number: its
decisions are the policy's (the denied calls, namespace clones, AF_VSOCK, foreign architectures)."""

from __future__ import annotations

import errno
import struct

import pytest

from evalfarm.sandbox import _linux, _seccomp

ALLOW = 0x7FFF0000
KILL = 0x80000000


def run(code: bytes, nr: int, arch: int, arg0: int = 0, *more: int) -> tuple[int, int]:
    """What the filter returns for a call, and how many instructions it took: classic BPF over
    `struct seccomp_data` (nr, arch, instruction pointer, six arguments)."""
    args = (arg0, *more, 0, 0, 0, 0, 0, 0)[:6]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args)
    program = [struct.unpack("HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    pc, accumulator, steps = 0, 0, 0
    while True:
        op, jt, jf, k = program[pc]
        steps += 1
        if op == 0x20:  # ld word at k
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif op == 0x06:  # ret k
            return k, steps
        else:
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[op]
            pc += jt if taken else jf
        pc += 1


def evaluate(code: bytes, nr: int, arch: int, arg0: int = 0, *more: int) -> int:
    return run(code, nr, arch, arg0, *more)[0]


def expected(machine: str, nr: int, arg0: int) -> int:
    table = _seccomp._SYSCALLS[machine]
    if nr in {table[name] for name in _seccomp.DENIED if name in table}:
        return 0x00050000 | errno.EPERM
    if nr == table["clone3"]:
        return 0x00050000 | errno.ENOSYS
    if nr == table["clone"] and arg0 & _linux.NAMESPACE_FLAGS:
        return 0x00050000 | errno.EPERM
    if nr == table["socket"] and arg0 == _seccomp.AF_VSOCK:
        return 0x00050000 | errno.EAFNOSUPPORT
    return ALLOW


@pytest.mark.parametrize("machine", sorted(_seccomp._SYSCALLS))
def test_every_call_number_gets_the_policys_decision(machine: str) -> None:
    code = _seccomp.assemble(machine)
    arch = _seccomp._AUDIT_ARCH[machine]
    table = _seccomp._SYSCALLS[machine]
    for nr in range(0, 600):
        for arg0 in (0, _linux.CLONE_NEWUSER, _linux.CLONE_NEWNS | 0x11, _seccomp.AF_VSOCK, 2):
            assert evaluate(code, nr, arch, arg0) == expected(machine, nr, arg0), (nr, arg0)
    assert evaluate(code, table["ptrace"], arch) == 0x00050000 | errno.EPERM
    assert evaluate(code, table["clone"], arch, 0x11) == ALLOW  # fork's flags


@pytest.mark.parametrize("machine", sorted(_seccomp._SYSCALLS))
def test_a_foreign_architecture_or_x32_call_kills(machine: str) -> None:
    code = _seccomp.assemble(machine)
    other = next(a for m, a in _seccomp._AUDIT_ARCH.items() if m != machine)
    assert evaluate(code, 0, other) == KILL
    if machine == "x86_64":
        assert evaluate(code, 0x40000000 | 1, _seccomp._AUDIT_ARCH[machine]) == KILL


def test_a_call_passes_few_comparisons() -> None:
    """The number lookup is a tree: no call walks more than a few instructions to its decision
    (a chain of one comparison per listed call took up to fifty)."""
    code = _seccomp.assemble("x86_64")
    arch = _seccomp._AUDIT_ARCH["x86_64"]
    assert max(run(code, nr, arch)[1] for nr in range(600)) <= 16


RLIMIT_CPU, RLIMIT_AS = 0, 9


@pytest.mark.parametrize("machine", sorted(_seccomp._SYSCALLS))
def test_a_run_reads_its_limits_but_changes_none_but_its_address_space(machine: str) -> None:
    """A program that lowered its own RLIMIT_CPU would die of a kernel SIGKILL that reads as a kill
    from outside: prlimit64 with a new limit is refused for every resource but RLIMIT_AS."""
    code = _seccomp.assemble(machine)
    arch = _seccomp._AUDIT_ARCH[machine]
    prlimit, setrlimit = _seccomp._SYSCALLS[machine]["prlimit64"], _seccomp._SYSCALLS[machine]["setrlimit"]
    eperm = 0x00050000 | errno.EPERM
    for resource in range(16):
        assert evaluate(code, prlimit, arch, 0, resource, 0, 0x7FFF0000) == ALLOW  # read only
        wanted = ALLOW if resource == RLIMIT_AS else eperm
        for pointer in (0x7FFF0000, 0x7FFF_0000_0000, 0x1_0000_0000):  # either half of the pointer set
            for pid in (0, 1, 12345):
                assert evaluate(code, prlimit, arch, pid, resource, pointer, 0) == wanted, (
                    resource,
                    hex(pointer),
                )
    assert evaluate(code, setrlimit, arch, RLIMIT_CPU, 0x7FFF0000) == eperm
    assert evaluate(code, setrlimit, arch, RLIMIT_AS, 0x7FFF0000) == eperm  # glibc uses prlimit64
