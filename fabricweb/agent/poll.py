"""One node's snapshot, as the agent reads it: a deadline on every poll, hw_counters every Nth poll.

The deadline replaces the prefork pool's time limit, which needs a second process (double
the memory) to kill. It is checked before each file, so it holds in the event thread too;
a file read that never returns (a driver stuck in the kernel) could not be killed by the
prefork pool either, since a process does not die inside such a read.

hw_counters/ (mlx5's driver counters) are the larger half of a port's files; the driver
answers them from a cache (`lifespan`), and nothing central reads most of them every poll. So they
are read every Nth poll of a node, and the values last read fill the snapshot in between: every
snapshot keeps the same shape, and the wire form leaves out a port's hw_counters as last sent
(collectors/wire.py). A RoCE port's lossless counters (collectors/roce.py: a few
hw_counters files and its netdev's ethtool statistics), which the lossless rules judge per poll,
are read at every poll and sent over the values remembered.

What of a device does not change while the kernel keeps it registered (its GUIDs, model, PCI address, ports,
counter files' names) is read once a registration (collectors/keptdevices.py); the rest at every poll.

SR-IOV virtual functions are left out unless FABRIC_INCLUDE_VIRTUAL_FUNCTIONS asks for them
(docs/agent.md): they come and go with the VMs using them, and are not the host's own ports.
"""

from __future__ import annotations

import threading
import time

from collectors import read_host, to_dict
from collectors.keptdevices import KeptDevices
from fabricweb.agent.config import AgentConfig


class Poller:
    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        # pyverbs describes this machine's devices: merged only into a reading of its real /sys.
        self._use_verbs = config.reads_this_machine()
        self._polls: dict[str, int] = {}
        self._hw: dict[str, dict] = {}  # node -> {device: hw_counters, (device, port): hw_counters}
        # What of each device does not change while it stays registered: read once a registration.
        self.kept = KeptDevices()
        # The task (main thread) and an event-triggered snapshot (watcher thread) may overlap.
        self._lock = threading.Lock()
        # ... but read one at a time: `kept` holds files open, and closes them when a device changes
        # (collectors/heldfiles.py): none may be closed while the other thread reads it.
        self._reading = threading.Lock()

    def snapshot(self, node: str) -> dict:
        """Read `node` and return its JSON snapshot; NotServed, or DeadlinePassed when too slow."""
        root = self.config.root_of(node)
        with self._lock:
            polls = self._polls.get(node, 0)
            self._polls[node] = polls + 1
        fresh = polls % self.config.hw_counters_every == 0
        with self._reading:
            read = read_host(
                root,
                host=node,
                use_verbs=self._use_verbs,
                hw_counters=fresh,
                virtual_functions=self.config.include_virtual_functions,
                deadline=time.monotonic() + self.config.poll_deadline_s,
                kept=self.kept,
            )
        snap = to_dict(read)
        if fresh:
            self._remember(node, snap)
        else:
            self._fill(node, snap)
        return snap

    def _remember(self, node: str, snap: dict) -> None:
        hw: dict = {}
        for dev in snap["devices"]:
            hw[dev["name"]] = dev["hw_counters"]
            for port in dev["ports"]:
                hw[dev["name"], port["port"]] = port["hw_counters"]
        with self._lock:
            self._hw[node] = hw

    def _fill(self, node: str, snap: dict) -> None:
        with self._lock:
            hw = self._hw.get(node, {})
        for dev in snap["devices"]:
            dev["hw_counters"] = hw.get(dev["name"], {})
            for port in dev["ports"]:  # what was read this poll (a RoCE port's lossless counters) over the rest
                port["hw_counters"] = {**hw.get((dev["name"], port["port"]), {}), **port["hw_counters"]}
