"""Fake pyverbs.device: get_device_list, Context, DeviceAttr, PortAttr, AsyncEvent.

Behaves as rdma-core 44's does where fabricweb can tell: Device.name is bytes,
Context(name=str) is a context manager, DeviceAttr.fw_version is str and the GUIDs
are raw integers, PortAttr has no active_speed_ex unless the fabric says v49+, and
failures raise the same PyverbsError subclasses with the same messages.

Opening a Context opens two descriptors, like ibv_open_device (the command fd, then
the async event fd); the event fd is an eventfd that is readable exactly when an
event is queued, and get_async_event blocks on it like read(2) on the real one.
"""

from __future__ import annotations

import os
from collections import deque

from . import _fabric
from .pyverbs_error import PyverbsError, PyverbsRDMAError, PyverbsUserError

__all__ = [
    "AsyncEvent",
    "Context",
    "Device",
    "DeviceAttr",
    "PortAttr",
    "PyverbsError",
    "PyverbsRDMAError",
    "PyverbsUserError",
    "get_device_list",
]


class Device:
    """One entry of get_device_list(); the name is bytes, as the C string comes back."""

    def __init__(self, name, guid, node_type, transport_type, index):
        self._name = name
        self._guid = guid
        self._node_type = node_type
        self._transport_type = transport_type
        self._index = index

    name = property(lambda self: self._name)
    guid = property(lambda self: self._guid)
    node_type = property(lambda self: self._node_type)
    transport_type = property(lambda self: self._transport_type)
    index = property(lambda self: self._index)


def get_device_list():
    fabric = _fabric.FABRIC
    if not fabric.rdma_available:
        raise PyverbsRDMAError("Failed to get devices list")
    with fabric.lock:
        devices = list(fabric.devices.values())
    return [
        Device(d.name.encode(), _fabric.guid_as_pyverbs_gives_it(d.node_guid), d.node_type, d.transport_type, i)
        for i, d in enumerate(devices)
    ]


def _read_only(name):
    return property(lambda self: self._values[name])


class DeviceAttr:
    __slots__ = ("_values",)

    def __init__(self, values):
        self._values = values

    fw_version = _read_only("fw_version")
    node_guid = _read_only("node_guid")
    sys_image_guid = _read_only("sys_image_guid")
    vendor_id = _read_only("vendor_id")
    vendor_part_id = _read_only("vendor_part_id")
    hw_ver = _read_only("hw_ver")
    phys_port_cnt = _read_only("phys_port_cnt")


class PortAttr:
    __slots__ = ("_values",)

    def __init__(self, values):
        self._values = values

    state = _read_only("state")
    phys_state = _read_only("phys_state")
    active_speed = _read_only("active_speed")
    active_width = _read_only("active_width")
    active_mtu = _read_only("active_mtu")
    max_mtu = _read_only("max_mtu")
    link_layer = _read_only("link_layer")
    lid = _read_only("lid")
    sm_lid = _read_only("sm_lid")
    lmc = _read_only("lmc")


class _PortAttrV49(PortAttr):
    """PortAttr of an rdma-core that has ibv_port_attr.active_speed_ex."""

    __slots__ = ()
    active_speed_ex = _read_only("active_speed_ex")


class AsyncEvent:
    def __init__(self, event_type=0, _fabric_ref=None):
        self._event_type = int(event_type)
        self._fabric = _fabric_ref

    @property
    def event_type(self):
        return self._event_type  # a plain int, as the C enum comes back

    def ack(self):
        if self._fabric is not None:
            with self._fabric.lock:
                self._fabric.acked += 1


class Context:
    def __init__(self, **kwargs):
        self.name = kwargs.get("name")
        self._fds = None
        if self.name is None:
            raise PyverbsUserError("Device name must be provided")
        fabric = _fabric.FABRIC
        if not fabric.rdma_available:
            raise PyverbsRDMAError("Failed to get devices list")
        dev = fabric.devices.get(self.name)
        if dev is None:
            raise PyverbsRDMAError(f"Failed to find device {self.name}")
        if dev.open_errno is not None:
            raise PyverbsRDMAError(f"Failed to open device {self.name}", dev.open_errno)
        self._fabric = fabric
        self._device = dev
        self._events = deque()
        cmd_fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        event_fd = os.eventfd(0, os.EFD_SEMAPHORE | os.EFD_CLOEXEC)
        self._fds = (cmd_fd, event_fd)
        with fabric.lock:
            fabric.contexts.append(self)
            fabric.opened += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if self._fds is not None:
            self.close()

    def close(self):
        if self._fds is None:
            return
        fds, self._fds = self._fds, None
        with self._fabric.lock:
            self._fabric.contexts.remove(self)
        for fd in fds:
            os.close(fd)

    def _open_fds(self):
        if self._fds is None:
            raise _fabric.UseAfterClose(f"{self.name}: context used after close")
        return self._fds

    @property
    def cmd_fd(self):
        return self._open_fds()[0]

    def query_device(self):
        self._open_fds()
        dev = self._device
        if dev.query_device_errno is not None:
            raise PyverbsRDMAError(f"Failed to query device {self.name}", dev.query_device_errno)
        with self._fabric.lock:
            return DeviceAttr(
                {
                    "fw_version": dev.fw_ver,
                    "node_guid": _fabric.guid_as_pyverbs_gives_it(dev.node_guid),
                    "sys_image_guid": _fabric.guid_as_pyverbs_gives_it(dev.sys_image_guid),
                    "vendor_id": dev.vendor_id,
                    "vendor_part_id": dev.vendor_part_id,
                    "hw_ver": dev.hw_ver,
                    "phys_port_cnt": max(dev.ports, default=0),
                }
            )

    def query_port(self, port_num):
        self._open_fds()
        with self._fabric.lock:
            port = self._device.ports.get(port_num)
            if port is None:
                raise PyverbsRDMAError(f"Failed to query port {port_num}", 22)  # EINVAL, as the kernel says
            if port.query_errno is not None:
                raise PyverbsRDMAError(f"Failed to query port {port_num}", port.query_errno)
            values = vars(port).copy()
            kind = _PortAttrV49 if self._fabric.speed_ex else PortAttr
        return kind(values)

    def get_async_event(self):
        _, event_fd = self._open_fds()
        with self._fabric.lock:
            if not self._events:
                # With the real pyverbs this call would now block holding the GIL.
                self._fabric.blocking_gets += 1
        os.eventfd_read(event_fd)  # blocks until an event is queued, like read(2) on the real fd
        with self._fabric.lock:
            item = self._events.popleft()
        if isinstance(item, _fabric._Broken):
            raise PyverbsRDMAError("Failed to get async event", item.error_code)
        return AsyncEvent(item, self._fabric)

    def _deliver(self, item):
        if self._fds is None:
            return
        self._events.append(item)
        os.eventfd_write(self._fds[1], 1)
