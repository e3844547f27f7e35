"""What the tests of a kept device's reads share (test_keptdevices.py, test_heldfiles.py): a poll of a tree as the
agent reads it, and the files a read opens."""

from __future__ import annotations

from pathlib import Path

from collectors import read_host, to_dict
from collectors.keptdevices import KeptDevices
from collectors.sysfs import SysfsReader


def poll(tree: Path, kept: KeptDevices | None, **options) -> dict:
    return to_dict(read_host(str(tree), host="cn001", use_verbs=False, now=0.0, kept=kept, **options))


def files_opened(monkeypatch) -> list[str]:
    """The names of the files every read opens from now on (SysfsReader._read), in order; clear it to start again."""
    opened: list[str] = []
    real = SysfsReader._read

    def counting(self, name, *args, **kwargs):
        opened.append(name)
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(SysfsReader, "_read", counting)
    return opened
