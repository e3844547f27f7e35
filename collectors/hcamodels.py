"""An HCA's model as operators know it (`ConnectX-6`) from what its driver prints in sysfs' hca_type (`MT4123`).

mlx4 and mlx5 print hca_type as `MT` and the card's PCI device id in decimal (xmitwait.device_id reads it
back); the names are the PCI ID Repository's for vendor 15b3 (https://pci-ids.ucw.cz/read/PC/15b3), the
physical functions of the adapters the mlx4 and mlx5 drivers bind. Another vendor's hca_type has no name here.
"""

from __future__ import annotations

import re

from .xmitwait import device_id

NAMES: dict[int, str] = {
    0x1003: "ConnectX-3",
    0x1007: "ConnectX-3 Pro",
    0x1011: "Connect-IB",
    0x1013: "ConnectX-4",
    0x1015: "ConnectX-4 Lx",
    0x1017: "ConnectX-5",
    0x1019: "ConnectX-5 Ex",
    0x101B: "ConnectX-6",
    0x101D: "ConnectX-6 Dx",
    0x101F: "ConnectX-6 Lx",
    0x1021: "ConnectX-7",
    0x1023: "ConnectX-8",
    0xA2D2: "BlueField",
    0xA2D6: "BlueField-2",
    0xA2DC: "BlueField-3",
}
_BY_NAME = {name.lower(): f"MT{number}" for number, name in NAMES.items()}
_HCA_TYPE = re.compile(r"mt(\d{1,5})", re.ASCII | re.IGNORECASE)


def model_name(hca_type: str | None) -> str | None:
    """`ConnectX-6` for `MT4123`; None for a model not named here."""
    number = device_id(hca_type, None)
    return NAMES.get(number) if number is not None else None


def hca_types(words: str) -> list[str]:
    """The hca_type a query names: a model as the driver prints it in any case (`mt4123`: `MT4123`), or by its
    name (`connectx-6`: `MT4123`); none for other words."""
    text = " ".join(words.split())
    if m := _HCA_TYPE.fullmatch(text):
        return [f"MT{int(m[1])}"]
    found = _BY_NAME.get(text.lower())
    return [found] if found else []


def model_words(hca_type: str | None) -> str | None:
    """The model as the pages write it: `ConnectX-6 (MT4123)`, or what the driver printed when not named here."""
    name = model_name(hca_type)
    return f"{name} ({hca_type})" if name else hca_type
