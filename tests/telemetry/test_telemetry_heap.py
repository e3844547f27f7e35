"""Covers fabricweb/heap.py.

The ingest process's garbage collector (fabricweb/heap.py): set for a large long-lived heap, still on."""

from __future__ import annotations

import json
import subprocess
import sys

# In a process of its own: freezing this test process's heap would outlive the test.
PROBE = """
import gc, json, weakref
from fabricweb import heap

heap.settle()

class Node:
    pass

a, b = Node(), Node()
a.other, b.other = b, a  # a reference cycle: only the cyclic collector frees it
probe = weakref.ref(a)
del a, b
gc.collect()
print(json.dumps({"thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count(),
                  "enabled": gc.isenabled(), "cycle_freed": probe() is None}))
"""


def test_the_ingest_process_freezes_its_start_up_heap_and_still_frees_cycles():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    state = json.loads(done.stdout)
    assert state["thresholds"] == [50_000, 50, 100]
    assert state["frozen"] > 1_000  # the interpreter's and the module's objects, out of every collection
    assert state["enabled"] and state["cycle_freed"]
