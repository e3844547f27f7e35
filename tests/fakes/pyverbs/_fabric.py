"""The controls of the fake pyverbs: which devices exist, what their ports say, their event queues.

Not part of the real pyverbs. Tests reach it through the `fake_pyverbs` fixture
(tests/collectors/conftest.py) and change it while the code under test runs; the fake
`pyverbs.device` reads it on every call, like libibverbs asks the kernel.
"""

from __future__ import annotations

import errno
import sys
import threading
from dataclasses import dataclass, field


class UseAfterClose(AssertionError):
    """The real pyverbs would hand libibverbs a NULL context here and crash the process."""


@dataclass
class FakePort:
    """ibv_port_attr as libibverbs fills it (pyverbs encodings, docs/infiniband.md §2)."""

    state: int = 4  # ACTIVE
    phys_state: int = 5  # LinkUp
    active_speed: int = 32  # EDR
    active_speed_ex: int = 0  # only visible when Fabric.speed_ex (rdma-core v49+)
    active_width: int = 2  # 4X
    active_mtu: int = 5  # 4096
    max_mtu: int = 5
    link_layer: int = 1  # InfiniBand
    lid: int = 1
    sm_lid: int = 1
    lmc: int = 0
    query_errno: int | None = None  # ibv_query_port fails with this errno


@dataclass
class FakeDevice:
    name: str
    ports: dict[int, FakePort] = field(default_factory=dict)
    fw_ver: str = "20.31.1014"
    node_guid: str = "0002:c903:00a1:b2c0"
    sys_image_guid: str = "0002:c903:00a1:b2c0"
    vendor_id: int = 0x02C9
    vendor_part_id: int = 4123
    hw_ver: int = 0
    node_type: int = 1
    transport_type: int = 0
    open_errno: int | None = None  # ibv_open_device fails with this errno
    query_device_errno: int | None = None


def guid_as_pyverbs_gives_it(guid: str) -> int:
    """The GUID's network-order bytes read as a host integer, which is what pyverbs returns."""
    return int.from_bytes(bytes.fromhex(guid.replace(":", "")), sys.byteorder)


class Fabric:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.rdma_available = True  # False: get_device_list raises, like a host without RDMA support
        self.speed_ex = False  # True: PortAttr has active_speed_ex (rdma-core v49+)
        self.devices: dict[str, FakeDevice] = {}
        self.contexts: list = []  # open fake Contexts
        self.opened = 0
        self.delivered = 0
        self.acked = 0
        self.blocking_gets = 0  # get_async_event calls made with no event queued

    def add_device(self, name: str, ports: int = 1, **attrs) -> FakeDevice:
        dev = FakeDevice(name, {n: FakePort() for n in range(1, ports + 1)}, **attrs)
        with self.lock:
            self.devices[name] = dev
        return dev

    def port(self, device: str, number: int) -> FakePort:
        return self.devices[device].ports[number]

    def set_port(self, device: str, number: int, **values) -> None:
        """Change a port's attributes at once (a query never sees half a change)."""
        with self.lock:
            port = self.port(device, number)
            for name, value in values.items():
                if not hasattr(port, name):
                    raise AttributeError(f"FakePort has no {name!r}")
                setattr(port, name, value)

    def open_contexts(self, device: str | None = None) -> list:
        with self.lock:
            return [c for c in self.contexts if device is None or c.name == device]

    def push_event(self, device: str, event_type: int) -> int:
        """Queue an async event on every open context of `device`, as the kernel does; returns how many."""
        with self.lock:
            targets = self.open_contexts(device)
            for ctx in targets:
                ctx._deliver(int(event_type))
            self.delivered += len(targets)
        return len(targets)

    def break_events(self, device: str, error_code: int = errno.EIO) -> None:
        """The device went away (hot unplug, driver reset): reading its event queue fails."""
        with self.lock:
            for ctx in self.open_contexts(device):
                ctx._deliver(_Broken(error_code))

    def close_all(self) -> int:
        """Close contexts the code under test left open; returns how many there were."""
        leaked = self.open_contexts()
        for ctx in leaked:
            ctx.close()
        return len(leaked)


@dataclass(frozen=True)
class _Broken:
    error_code: int


FABRIC = Fabric()


def reset() -> Fabric:
    """A fresh, empty fabric for the next test."""
    global FABRIC
    FABRIC.close_all()
    FABRIC = Fabric()
    return FABRIC
