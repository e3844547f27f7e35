"""Device and port attributes through pyverbs (libibverbs), when it is installed.

pyverbs comes from the distribution's rdma-core (python3-pyverbs), matched to its
libibverbs; PyPI's build does not load against it (docs/infiniband.md §6).
No pyverbs, or no RDMA devices (get_device_list raises PyverbsRDMAError when
libibverbs finds no RDMA support at all, and returns [] when it finds no device), is
not an error: the snapshot is then sysfs alone and says why in `source.pyverbs`.

Facts of rdma-core 44's pyverbs this module relies on (checked against the installed
package and rdma-core's pyverbs/device.pyx):
- `Device.name` is bytes; `Context(name=...)` wants str.
- `Context` is a context manager (PyverbsCM) whose exit closes the device.
- `DeviceAttr.fw_version` is already str (not `fw_ver`); the GUIDs are the raw
  big-endian 64-bit values read as host integers.
- `PortAttr` has no `active_speed_ex` before rdma-core v49.
- Every failure is a `PyverbsError`: `PyverbsRDMAError` from libibverbs (it carries
  `error_code`, -1 when unknown), `PyverbsUserError` for bad arguments.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import NamedTuple

from .link import SPEED_BY_VERBS_ID, WIDTH_BY_VERBS_BIT
from .model import ReadError, VerbsDevice, VerbsPort

MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
# 0 is IBV_LINK_LAYER_UNSPECIFIED (old kernels; ibv_devinfo prints it as InfiniBand): no claim either way.
LINK_LAYERS = {0: None, 1: "InfiniBand", 2: "Ethernet"}


class Pyverbs(NamedTuple):
    device: ModuleType  # pyverbs.device
    errors: ModuleType  # pyverbs.pyverbs_error


@dataclass(slots=True)
class VerbsReading:
    status: str  # "used", "not installed", "no devices", or "failed: <why>"
    ports: dict[tuple[str, int], VerbsPort] = field(default_factory=dict)
    devices: dict[str, VerbsDevice] = field(default_factory=dict)
    # One entry per device or port that could not be read; the rest is still reported.
    errors: list[ReadError] = field(default_factory=list)


def load_pyverbs() -> Pyverbs | None:
    """The pyverbs modules we use, or None when pyverbs does not import."""
    try:
        device = importlib.import_module("pyverbs.device")
        errors = importlib.import_module("pyverbs.pyverbs_error")
    except ImportError:
        return None
    return Pyverbs(device, errors)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def format_guid(raw: int) -> str:
    """A GUID as sysfs prints it (`0002:c903:00a1:b2c0`).

    ibv_device_attr holds GUIDs in network byte order, and pyverbs hands the eight
    bytes over as a host-order integer: undo that before printing.
    """
    value = int.from_bytes(int(raw).to_bytes(8, sys.byteorder), "big")
    digits = f"{value:016x}"
    return ":".join(digits[i : i + 4] for i in range(0, 16, 4))


def speed_id(attr) -> int:
    """The port's speed id: active_speed, or active_speed_ex where it is set.

    active_speed is 8 bits wide, so XDR and faster read as NDR there; rdma-core v49+
    reports the true value in active_speed_ex and leaves it 0 otherwise.
    """
    extended = getattr(attr, "active_speed_ex", 0) or 0
    return int(extended) if extended else int(attr.active_speed)


def port_from_attr(attr) -> VerbsPort:
    """Translate an ibv_port_attr (pyverbs PortAttr) into a VerbsPort."""
    speed = SPEED_BY_VERBS_ID.get(speed_id(attr))
    return VerbsPort(
        state=int(attr.state),
        phys_state=int(attr.phys_state),
        speed=speed.name if speed else None,
        lanes=WIDTH_BY_VERBS_BIT.get(int(attr.active_width)),
        active_mtu=MTU_BYTES.get(int(attr.active_mtu)),
        max_mtu=MTU_BYTES.get(int(attr.max_mtu)),
        link_layer=LINK_LAYERS.get(int(attr.link_layer)),
        lid=int(attr.lid),
        sm_lid=int(attr.sm_lid),
    )


def device_from_attr(attr) -> VerbsDevice:
    """Translate an ibv_device_attr (pyverbs DeviceAttr) into a VerbsDevice."""
    return VerbsDevice(
        fw_ver=_text(attr.fw_version),
        node_guid=format_guid(attr.node_guid),
        sys_image_guid=format_guid(attr.sys_image_guid),
        vendor_id=int(attr.vendor_id),
        vendor_part_id=int(attr.vendor_part_id),
        hw_ver=int(attr.hw_ver),
        phys_port_cnt=int(attr.phys_port_cnt),
    )


def read_verbs(pyverbs: Pyverbs | None = None) -> VerbsReading:
    """Query every RDMA device libibverbs sees; one that fails costs only itself."""
    mods = pyverbs or load_pyverbs()
    if mods is None:
        return VerbsReading("not installed")
    try:
        return _read_all(mods)
    except Exception as e:
        # An optional extra must never cost the sysfs view (a pyverbs whose API moved,
        # say); the status says what happened.
        return VerbsReading(f"failed: {type(e).__name__}: {e}")


def _read_all(mods: Pyverbs) -> VerbsReading:
    device_mod, errors = mods
    try:
        dev_list = device_mod.get_device_list()
    except errors.PyverbsRDMAError:
        return VerbsReading("no devices")
    except errors.PyverbsError as e:
        return VerbsReading(f"failed: {e}")
    if not dev_list:
        return VerbsReading("no devices")
    reading = VerbsReading("used")
    for dev in dev_list:
        name = _text(dev.name)
        try:
            with device_mod.Context(name=name) as ctx:
                info = device_from_attr(ctx.query_device())
                reading.devices[name] = info
                for number in range(1, (info.phys_port_cnt or 0) + 1):
                    try:
                        reading.ports[(name, number)] = port_from_attr(ctx.query_port(number))
                    except errors.PyverbsError as e:
                        reading.errors.append(ReadError(f"pyverbs:{name}/ports/{number}", str(e)))
        except errors.PyverbsError as e:
            reading.errors.append(ReadError(f"pyverbs:{name}", str(e)))
    if not reading.devices:
        reading.status = f"failed: {reading.errors[0].reason}"
    return reading
