"""rdma-core's libibumad through ctypes: open a port's management datagram device, send, receive.

libibumad is the library under ibnetdiscover, iblinkinfo, perfquery and opensm; it talks to the
kernel's ib_umad (/dev/infiniband/umad*). Its functions (umad_open_port, umad_register,
umad_send, umad_recv) have been a stable ABI (libibumad.so.3) for over a decade, and the
collector uses only them and the opaque buffer umad_size() describes, never a C struct's layout.
Under `ibsim-run` the same calls reach the ibsim simulator (umad2sim is preloaded).

Why this and not the tools: one process sends every query of a sweep and keeps many in flight
(collectors/mads/engine.py), where parsing perfquery would start a process per port.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

from .mad import MAD_SIZE

LIBRARY = "libibumad.so.3"


class UmadError(OSError):
    """The management datagram device could not be opened or used; the message says what to check."""


def _load() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("ibumad") or LIBRARY, use_errno=True)
    except OSError as e:
        raise UmadError(
            f"cannot load {LIBRARY} ({e}): install rdma-core's libibumad (Debian: libibumad3, RHEL: libibumad)"
        ) from None
    c_int, c_void_p, c_char_p = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
    signatures = {
        "umad_init": ([], c_int),
        "umad_open_port": ([c_char_p, c_int], c_int),
        "umad_close_port": ([c_int], c_int),
        "umad_register": ([c_int, c_int, c_int, ctypes.c_uint8, c_void_p], c_int),
        "umad_size": ([], ctypes.c_size_t),
        "umad_set_addr": ([c_void_p, c_int, c_int, c_int, c_int], c_int),
        "umad_send": ([c_int, c_int, c_void_p, c_int, c_int, c_int], c_int),
        "umad_recv": ([c_int, c_void_p, ctypes.POINTER(c_int), c_int], c_int),
        "umad_status": ([c_void_p], c_int),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


class UmadPort:
    """One open port of a local channel adapter, with an agent per management class it queries.

    `ca` None and `port` 0 take the first active port, as the diagnostic tools do.
    """

    def __init__(self, ca: str | None = None, port: int = 0, classes: tuple[tuple[int, int], ...] = ()) -> None:
        self.lib = lib = _load()
        if lib.umad_init() < 0:
            raise UmadError("umad_init failed: is the ib_umad kernel module loaded (modprobe ib_umad)?")
        fd = lib.umad_open_port(ca.encode() if ca else None, port)
        if fd < 0:
            raise UmadError(_open_error(-fd, ca, port))
        self.fd = fd
        self.agents: dict[int, int] = {}
        for mgmt_class, version in classes:
            agent = lib.umad_register(fd, mgmt_class, version, 0, None)
            if agent < 0:
                self.close()
                raise UmadError(f"cannot register for management class {mgmt_class:#04x}: {os.strerror(-agent)}")
            self.agents[mgmt_class] = agent
        self.header = lib.umad_size()
        self._send_buf = ctypes.create_string_buffer(self.header + MAD_SIZE)
        self._recv_buf = ctypes.create_string_buffer(self.header + MAD_SIZE)
        self._length = ctypes.c_int()

    def send(self, mgmt_class: int, mad: bytes, lid: int, qp: int, qkey: int, timeout_ms: int) -> None:
        """Queue `mad` to `lid` (0xffff for a directed route); the kernel matches its reply by TID."""
        buf = self._send_buf
        ctypes.memset(buf, 0, self.header)
        ctypes.memmove(ctypes.addressof(buf) + self.header, mad, MAD_SIZE)
        self.lib.umad_set_addr(buf, lid, qp, 0, qkey)
        # No retries here: the engine retries with a new TID and counts the tries itself.
        if self.lib.umad_send(self.fd, self.agents[mgmt_class], buf, MAD_SIZE, timeout_ms, 0) < 0:
            err = ctypes.get_errno()
            raise UmadError(f"umad_send failed: {os.strerror(err) if err else 'unknown error'}")

    def recv(self, timeout_ms: int) -> tuple[bytes, int] | None:
        """The next MAD received and its status (0, or ETIMEDOUT for a request the kernel gave up on);
        None when nothing came within `timeout_ms`."""
        buf, length = self._recv_buf, self._length
        length.value = MAD_SIZE
        rc = self.lib.umad_recv(self.fd, buf, ctypes.byref(length), timeout_ms)
        if rc < 0:
            if -rc in (errno.ETIMEDOUT, errno.EWOULDBLOCK, errno.EINTR):
                return None
            raise UmadError(f"umad_recv failed: {os.strerror(-rc)}")
        status = self.lib.umad_status(buf)
        return ctypes.string_at(ctypes.addressof(buf) + self.header, MAD_SIZE), status

    def close(self) -> None:
        if getattr(self, "fd", -1) >= 0:
            self.lib.umad_close_port(self.fd)
            self.fd = -1

    def __enter__(self) -> UmadPort:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_error(err: int, ca: str | None, port: int) -> str:
    where = f"{ca or 'the first channel adapter'}, port {port or 'first active'}"
    if err in (errno.EACCES, errno.EPERM):
        return (
            f"cannot open the management datagram device of {where}: permission denied. "
            "Give the collector's user read-write access to /dev/infiniband/umad* (docs/fabric.md: a udev rule)"
        )
    if err in (errno.ENODEV, errno.ENOENT, errno.EINVAL, errno.EOPNOTSUPP):
        return (
            f"cannot open the management datagram device of {where}: none here "
            f"({os.strerror(err)}): is the ib_umad module loaded, and is there an InfiniBand device?"
        )
    return f"cannot open the management datagram device of {where}: {os.strerror(err)}"
