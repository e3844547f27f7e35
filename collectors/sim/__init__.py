"""The fabric simulator behind `python -m collectors simulate` and `fault` (standard library only).

`Fabric` is the API; the modules: hardware (HCA models, counter files), layout
(which node has what), faults (spec grammar, faults.json), traffic (counter
model), tree (writing the sysfs-shaped trees), fabric (state and steps).
"""

from .fabric import Fabric, SimError
from .faults import FaultError, parse

__all__ = ["Fabric", "FaultError", "SimError", "parse"]
