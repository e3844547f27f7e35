"""rdma-core's libibmad as the reference MAD codec: fields set by its own mad_set_field, by its own names.

The collector encodes and decodes MADs itself (collectors/mads/mad.py); these tests hold it to
what libibmad (the library under perfquery, smpquery and ibnetdiscover) writes and reads. Field
numbers are looked up by name through mad_field_name, so no enum value is copied here.
"""

from __future__ import annotations

import ctypes

_lib = ctypes.CDLL("libibmad.so.5")
_lib.mad_field_name.restype = ctypes.c_char_p
_lib.mad_field_name.argtypes = [ctypes.c_int]
_lib.mad_set_field.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32]
_lib.mad_set_field64.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
_lib.mad_get_field.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_lib.mad_get_field.restype = ctypes.c_uint32
_lib.mad_get_field64.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_lib.mad_get_field64.restype = ctypes.c_uint64

# The table has no length to ask for: past its end the names turn to stray bytes, so stop at the first
# name that is not a printable ASCII identifier (a few hundred fields in rdma-core 44).
_NAMES: list[str | None] = []
for _i in range(2000):
    _name = _lib.mad_field_name(_i)
    if _name and not (_name.isascii() and _name.decode().replace("_", "").isalnum()):
        break
    _NAMES.append(_name.decode() if _name else None)


def field(name: str, after: str | None = None, occurrence: int = 1) -> int:
    """libibmad's number of field `name`: the `occurrence`th one, counted after field `after` when given
    (several attributes share names: PortSelect is PortCounters' and PortCountersExtended's)."""
    start = _NAMES.index(after) if after else 0
    seen = 0
    for i in range(start, len(_NAMES)):
        if _NAMES[i] == name:
            seen += 1
            if seen == occurrence:
                return i
    raise LookupError(f"libibmad has no field {name!r} after {after!r}")


class Buffer:
    """A zeroed buffer written by libibmad: `set("LinkSpeedActive", 4)`; `data` is the bytes."""

    def __init__(self, size: int = 256) -> None:
        self.raw = ctypes.create_string_buffer(size)

    def set(self, name: str, value: int, *, after: str | None = None, occurrence: int = 1, wide: bool = False):
        f = field(name, after, occurrence)
        (_lib.mad_set_field64 if wide else _lib.mad_set_field)(self.raw, 0, f, value)
        return self

    def get(self, name: str, *, after: str | None = None, occurrence: int = 1, wide: bool = False, base: int = 0):
        f = field(name, after, occurrence)
        return (_lib.mad_get_field64 if wide else _lib.mad_get_field)(self.raw, base, f)

    @property
    def data(self) -> bytes:
        return self.raw.raw

    def load(self, data: bytes) -> Buffer:
        ctypes.memmove(self.raw, data, len(data))
        return self
