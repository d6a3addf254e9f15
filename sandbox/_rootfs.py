"""The fork server's private view of the filesystem: a read-only skeleton root with only what a
Python program needs (system libraries, the interpreter, the allowed packages), built once per slot.

Each run then mounts its own /proc and a size-capped tmpfs on /tmp in a copy of this view, so the
host's /tmp, /home, /root, the project (tests and their expected outputs) and other runs' files
are not there at all.
"""

from __future__ import annotations

import os
import sys

from evalfarm.sandbox import _linux

STAGING = "/sys"  # exists on every Linux; only this server's private mount namespace is changed
HOST_PROC = "/.hostproc"  # user-namespace mode only: see `build`
# Every run mounts its own /proc and /tmp, hiding whatever the skeleton has there: Python directories
# below them (a virtualenv in /tmp, say) are bound under this directory instead.
COVERED = ("/proc", "/tmp")
RELOCATED = "/.python"
# SandboxFusion's programs may write /mnt/<file> and ask for it back: /mnt is a link into the run's
# own /tmp (a Python run asked to fetch a /mnt file creates the directory), private like /tmp.
MNT = "/mnt"
MNT_TARGET = "/tmp/.mnt"
# A session's workspace (sandbox._child), and where its tmpfs is put up before it is split into
# /tmp and /workspace's upper layer.
WORKSPACE = "/workspace"
STAGING_RUN = "/.staging"

_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/nsswitch.conf")
_DEVICES = ("null", "zero", "full", "random", "urandom")

# statvfs flag -> mount flag, for the flags a remount must keep (the kernel refuses to clear
# flags locked by a more privileged namespace).
_KEEP_FLAGS = {
    os.ST_NOEXEC: _linux.MS_NOEXEC,
    os.ST_NOATIME: 1024,
    os.ST_NODIRATIME: 2048,
    os.ST_RELATIME: 1 << 21,
}


def build(
    python_dirs: list[str],
    keep_host_proc: bool,
    files: dict[str, str] | None = None,
    site_dirs: dict[str, list[str]] | None = None,
) -> dict[str, str]:
    """Pivot this process's (already private) mount namespace into a fresh skeleton root; return
    the Python directories runs find elsewhere than at the path given (a directory below COVERED,
    or one given through a symlink), as given -> where.

    `files`: host files bound read-only into the skeleton too, as path in the skeleton -> host path.
    `site_dirs`: installed-package directories (site-packages) -> the entries runs may see there;
    each is covered, and only those entries bound back: a package that ships data (a dataset with
    its solutions, a benchmark's tests) is not a program's to read.
    `keep_host_proc`: in a user namespace the kernel lets a run mount a new /proc only while a
    fully visible proc is mounted in its namespace, so the host's is kept at HOST_PROC and each run
    detaches it right after mounting its own.
    """
    _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE)
    _linux.mount("tmpfs", STAGING, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, "mode=0755,size=1m")
    root = STAGING
    for path in _SYSTEM_DIRS:
        _bind_or_link(root, path)
    for path in _ETC_FILES:
        if os.path.exists(path):
            _bind(root, os.path.realpath(path), target=path)
    placed: dict[str, str] = {}  # real path -> where the skeleton has it
    for path in _outermost(python_dirs):
        placed[path] = f"{RELOCATED}/{len(placed)}" if _below(path, COVERED) else path
        _bind(root, path, target=placed[path])
    moved: dict[str, str] = {}  # a directory as the caller spells it -> where runs find it
    for path in python_dirs:
        real = os.path.realpath(path)
        for top, where in placed.items():
            if _below(real, (top,)) and where + real[len(top) :] != path:
                moved[path] = where + real[len(top) :]
    for site, entries in (site_dirs or {}).items():
        site_in_root = _placed(os.path.realpath(site), placed)
        if site_in_root is not None and os.path.isdir(root + site_in_root):
            _cover(root, os.path.realpath(site), site_in_root, entries)
    for target, source in (files or {}).items():
        _bind(root, source, target=target)
    _make_dev(root)
    _make_run_dirs(root)
    if keep_host_proc:
        os.makedirs(root + HOST_PROC)
        _linux.mount("/proc", root + HOST_PROC, None, _linux.MS_BIND | _linux.MS_REC)
    os.chdir(root)
    _linux.pivot_root(".", ".")
    _linux.umount2(".", _linux.MNT_DETACH)
    os.chdir("/")
    _linux.mount("none", "/", None, _linux.MS_REMOUNT | _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV)
    return moved


def _placed(real: str, placed: dict[str, str]) -> str | None:
    """Where the skeleton has the real directory `real`, if under one it binds."""
    for top, where in placed.items():
        if _below(real, (top,)):
            return where + real[len(top) :]
    if _below(real, tuple(d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d))):
        return real
    return None


def _cover(root: str, real: str, where: str, entries: list[str]) -> None:
    """Hide a directory's entries behind an empty read-only tmpfs, but for `entries`, bound back."""
    target = root + where
    _linux.mount("tmpfs", target, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, "mode=0755,size=64k")
    for name in entries:
        if os.path.lexists(os.path.join(real, name)):
            _bind(root, os.path.join(real, name), target=os.path.join(where, name))
    flags = _linux.MS_REMOUNT | _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV
    _linux.mount("none", target, None, flags)


def follow(moved_dirs: dict[str, str]) -> None:
    """Point the import system where `build` put the Python directories: `sys.path` and the search
    path of every package already imported (numpy imports some submodules only when first used)."""
    if not moved_dirs:
        return
    longest_first = sorted(moved_dirs.items(), key=lambda item: -len(item[0]))

    def moved(path: str) -> str:
        for old, new in longest_first:
            if _below(path, (old,)):
                return new + path[len(old) :]
        return path

    sys.path[:] = [moved(path) for path in sys.path]
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [moved(path) for path in search]
    sys.path_importer_cache.clear()


def _below(path: str, tops: tuple[str, ...]) -> bool:
    """Whether `path` is one of `tops` or inside one."""
    return any(path == top or path.startswith(top + "/") for top in tops)


def _outermost(paths: list[str]) -> list[str]:
    """`paths` that exist, minus those inside another one or inside a system dir."""
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    covered = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    result: list[str] = []
    for path in real:
        if not any(path == c or path.startswith(c + "/") for c in covered + result):
            result.append(path)
    return result


def _bind_or_link(root: str, path: str) -> None:
    if os.path.islink(path):
        os.symlink(os.readlink(path), root + path)
    elif os.path.isdir(path):
        _bind(root, path)


def _bind(root: str, source: str, target: str | None = None) -> None:
    """Bind `source` read-only at `target` (default: the same path) under `root`."""
    destination = root + (target or source)
    if os.path.isdir(source):
        os.makedirs(destination, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(destination), mode=0o755, exist_ok=True)
        open(destination, "w").close()
    _linux.mount(source, destination, None, _linux.MS_BIND | _linux.MS_REC)
    kept = os.statvfs(destination).f_flag
    flags = _linux.MS_REMOUNT | _linux.MS_BIND | _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV
    for statvfs_flag, mount_flag in _KEEP_FLAGS.items():
        if kept & statvfs_flag:
            flags |= mount_flag
    _linux.mount("none", destination, None, flags)


def _make_run_dirs(root: str) -> None:
    """Where each run mounts its /proc and /tmp, and /mnt, a link into the run's /tmp."""
    for directory in ("proc", "tmp", WORKSPACE[1:], STAGING_RUN[1:]):
        os.makedirs(f"{root}/{directory}", mode=0o755, exist_ok=True)
    if not os.path.lexists(f"{root}{MNT}"):
        os.symlink(MNT_TARGET, f"{root}{MNT}")


def _make_dev(root: str) -> None:
    dev = f"{root}/dev"
    os.makedirs(dev, mode=0o755)
    _linux.mount("tmpfs", dev, "tmpfs", _linux.MS_NOSUID | _linux.MS_NOEXEC, "mode=0755,size=64k")
    for name in _DEVICES:
        open(f"{dev}/{name}", "w").close()
        _linux.mount(f"/dev/{name}", f"{dev}/{name}", None, _linux.MS_BIND)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("shm", "/tmp"),
    ):
        os.symlink(target, f"{dev}/{name}")
    _linux.mount(
        "none", dev, None, _linux.MS_REMOUNT | _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NOEXEC
    )
