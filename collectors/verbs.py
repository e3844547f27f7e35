"""Port attributes through pyverbs (libibverbs' ibv_query_port), when it is installed.

pyverbs comes from the distribution's rdma-core (python3-pyverbs), matched to its
libibverbs; PyPI's build does not load against it (shared/docs/infiniband.md §6).
No pyverbs, or no RDMA devices (get_device_list raises PyverbsRDMAError), is not an
error: the snapshot is then sysfs alone and says why in `source.pyverbs`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from .link import SPEED_BY_VERBS_ID, WIDTH_BY_VERBS_BIT
from .model import VerbsPort

MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
LINK_LAYERS = {0: None, 1: "InfiniBand", 2: "Ethernet"}


@dataclass(slots=True)
class VerbsReading:
    status: str  # "used", "not installed", "no devices", or "failed: <why>"
    ports: dict[tuple[str, int], VerbsPort] = field(default_factory=dict)
    devices: dict[str, dict] = field(default_factory=dict)


def load_pyverbs():
    """The pyverbs modules (device, enums, pyverbs_error), or None when it does not import."""
    try:
        device = importlib.import_module("pyverbs.device")
        error = importlib.import_module("pyverbs.pyverbs_error")
    except ImportError:
        return None
    return device, error


def _name(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def port_from_attr(attr) -> VerbsPort:
    """Translate an ibv_port_attr (pyverbs PortAttr) into a VerbsPort."""
    speed_id = getattr(attr, "active_speed_ex", 0) or attr.active_speed  # _ex: rdma-core v49+, XDR
    speed = SPEED_BY_VERBS_ID.get(speed_id)
    return VerbsPort(
        state=int(attr.state),
        phys_state=int(attr.phys_state),
        speed=speed.name if speed else None,
        lanes=WIDTH_BY_VERBS_BIT.get(int(attr.active_width)),
        active_mtu=MTU_BYTES.get(int(attr.active_mtu)),
        max_mtu=MTU_BYTES.get(int(attr.max_mtu)),
        link_layer=LINK_LAYERS.get(int(attr.link_layer)),
        lid=int(attr.lid),
    )


def read_verbs() -> VerbsReading:
    mods = load_pyverbs()
    if mods is None:
        return VerbsReading("not installed")
    device_mod, error_mod = mods
    try:
        dev_list = device_mod.get_device_list()
    except error_mod.PyverbsRDMAError:
        return VerbsReading("no devices")
    except error_mod.PyverbsError as e:
        return VerbsReading(f"failed: {e}")
    reading = VerbsReading("used")
    for dev in dev_list:
        name = _name(dev.name)
        try:
            with device_mod.Context(name=name) as ctx:
                dattr = ctx.query_device()
                reading.devices[name] = {
                    "fw_ver": _name(dattr.fw_ver),
                    "phys_port_cnt": int(dattr.phys_port_cnt),
                    "vendor_part_id": int(dattr.vendor_part_id),
                    "hw_ver": int(dattr.hw_ver),
                }
                for number in range(1, int(dattr.phys_port_cnt) + 1):
                    reading.ports[(name, number)] = port_from_attr(ctx.query_port(number))
        except error_mod.PyverbsError as e:
            # One device that will not open costs that device's verbs view only.
            reading.status = f"used; {name}: {e}"
    return reading
