"""The directories a poll reads, opened for one read or held open between polls while their device stays registered.

A node's poll reads ~140 small files (2 HCAs of 2 ports). Each cost an open, a read and a close; on sysfs the open
resolves the name and makes the kernel's file anew, and the close frees it: 2.7 µs a file where a read of one held
open (pread at offset 0: sysfs calls the attribute's show() again, so the value is current) takes 0.5 (this
machine, /sys/class/net/lo/statistics, hot). So the directories of a device the agent keeps (keptdevices.py: one
registration) that it reads at every poll stay open with their files: the device's own (fw_ver, node_desc), its
PCI function's (the link's speed and width, numa_node), each port's (state, rate, LIDs...) and its counters/ and
counters_ext/; and the bridges' above them (their link's speed and width: pcipath.py), held by the KeptDevices and
closed when no device's path crosses them. hw_counters/, read every Nth poll and the largest, is read the
ordinary way.

- A directory is held with its times and link count as they were when its files were opened: a file replaced in it
  (a tree on disk rewritten by rename, as the simulator's is) or the directory removed or moved changes them, and
  its files are opened afresh at the next poll. sysfs replaces no file of a registered device; a new registration
  is a new device (keptdevices.identity), whose held files are closed. (On a tree on disk under a kernel before
  6.13, whose directory times tick by the jiffy, a file replaced within the tick of the directory's last change
  is seen at its next change: the simulator's next step.)
- A read that fails on a held file closes it and reads the file the ordinary way, which says why.
- A process holds at most HELD_LIMIT of them, half its RLIMIT_NOFILE soft limit and at most MAX_HELD: past it,
  files are read the ordinary way (an agent serving many simulated trees).
- Held files are read and closed by one thread at a time: the agent's Poller reads a tree under its lock, so a file
  is never closed while another thread reads it (a number closed and reused would read another file).
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable

MAX_READ = 4096
MAX_HELD = 4096
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY


def _held_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_HELD if soft == resource.RLIM_INFINITY else max(0, min(MAX_HELD, soft // 2))


HELD_LIMIT = _held_limit()


def _stamp(fd: int) -> tuple[int, int, int]:
    """What changes when a file of the directory `fd` is replaced or removed, or the directory itself is."""
    st = os.fstat(fd)
    return st.st_mtime_ns, st.st_ctime_ns, st.st_nlink


class HeldDir:
    """One directory held open: its fd, its stamp when its files were opened, and name -> fd of those files."""

    __slots__ = ("fd", "files", "stamp")

    def __init__(self, fd: int, stamp: tuple[int, int, int]) -> None:
        self.fd, self.stamp = fd, stamp
        self.files: dict[str, int] = {}


class HeldFiles:
    """Directory path -> HeldDir. Owner: a keptdevices.Kept entry (one registration of one device), which closes it
    when the entry is dropped, or its KeptDevices (the bridges above the devices, pruned after each read of them);
    `count` is shared by every HeldFiles of a KeptDevices (HELD_LIMIT)."""

    __slots__ = ("count", "dirs", "entered")

    def __init__(self, count: list[int]) -> None:
        self.count = count  # [files and directories held by this KeptDevices]
        self.dirs: dict[str, HeldDir] = {}
        self.entered: set[str] = set()  # since the last prune()

    def enter(self, path: str) -> HeldDir | None:
        """The directory at `path` held for this poll, its files as its stamp says; None: read it the ordinary way
        (it could not be opened, or the process holds its limit)."""
        self.entered.add(path)
        held = self.dirs.get(path)
        if held is not None:
            try:
                if _stamp(held.fd) == held.stamp:
                    return held
            except OSError:
                pass
            self._close(path)
        if self.count[0] >= HELD_LIMIT:
            return None
        try:
            fd = os.open(path, DIR_FLAGS)
        except OSError:
            return None
        try:
            held = self.dirs[path] = HeldDir(fd, _stamp(fd))
        except OSError:
            os.close(fd)
            return None
        self.count[0] += 1
        return held

    def hold(self, held: HeldDir, name: str, fd: int) -> bool:
        """Keep `fd`, the file `name` of `held` just read, open for the next polls; False: close it (the limit)."""
        if self.count[0] >= HELD_LIMIT or name in held.files or "/" in name:  # (a subdirectory's: not stamped)
            return False
        held.files[name] = fd
        self.count[0] += 1
        return True

    def drop(self, held: HeldDir, name: str) -> None:
        """Close a held file whose read failed."""
        fd = held.files.pop(name, None)
        if fd is not None:
            self.count[0] -= 1
            os.close(fd)

    def prune(self) -> None:
        """Close the directories not entered since the last prune (a PCIe bridge no longer on a device's path)."""
        for path in [path for path in self.dirs if path not in self.entered]:
            self._close(path)
        self.entered.clear()

    def close(self) -> None:
        for path in list(self.dirs):
            self._close(path)

    def __del__(self) -> None:  # (a KeptDevices let go of whole, as a test's is: its files closed with it)
        with contextlib.suppress(OSError, TypeError):  # (at the interpreter's exit, `os` may be gone already)
            self.close()

    def _close(self, path: str) -> None:
        held = self.dirs.pop(path)
        for fd in held.files.values():
            os.close(fd)
        os.close(held.fd)
        self.count[0] -= len(held.files) + 1


def read_held(reader, held: HeldDir, name: str, dir_path: str, listed: bool = False) -> bytes | None:
    """`reader._read` of `name` in the held directory: from its held file when there is one, else opened there and
    held (sysfs.SysfsReader owns the rest: the deadline, errors, and what the bytes are)."""
    fd = held.files.get(name)
    if fd is None:
        return reader._read(name, held.fd, dir_path, listed, held)
    reader.due(name, dir_path)
    try:
        return os.pread(fd, MAX_READ, 0)
    except OSError:  # (ENODEV: the device is going; EIO...) read the ordinary way, which says why
        reader.held.drop(held, name)
        return reader._read(name, held.fd, dir_path, listed, held)


class OpenDir:
    """SysfsReader._dir's context, a directory opened for one read (a class: a generator's context manager cost
    ~1.5 µs a directory, 14 a poll)."""

    __slots__ = ("fd", "path", "reader")

    def __init__(self, reader, path: str) -> None:
        self.reader, self.path = reader, path
        try:
            self.fd: int | None = os.open(path, DIR_FLAGS)
        except OSError:
            self.fd = None

    def __enter__(self) -> Callable:
        return self.at

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def at(self, name: str, parse):
        if self.fd is None:  # read by full path instead: each file reports its own failure as it would alone
            return self.reader._value(os.path.join(self.path, name), None, "", parse)
        return self.reader._value(name, self.fd, self.path, parse)


class HeldDirContext:
    """SysfsReader._dir's context for a held directory: the same `at`, its files read in place."""

    __slots__ = ("held", "path", "reader")

    def __init__(self, reader, held: HeldDir, path: str) -> None:
        self.reader, self.held, self.path = reader, held, path

    def __enter__(self) -> Callable:
        return self.at

    def __exit__(self, *exc) -> None:
        return None

    def at(self, name: str, parse):
        data = read_held(self.reader, self.held, name, self.path)
        return None if data is None else self.reader._parse(data, name, self.path, parse)
