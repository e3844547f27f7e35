"""The fabric simulator behind `python -m collectors simulate` and `fault` (standard library only).

`Fabric` is the API; the modules: hardware (HCA models, counter files), layout
(which node has what), pcitree (each host's PCIe tree: bridges, switches, GPUs),
faults (spec grammar, faults.json), traffic (counter model), tree (writing the
sysfs-shaped trees), fabric (state and steps), and for
`--fabric` cabling (switches, links, fabric.net) and console (ibsim's commands).
"""

from .faults import FaultError, parse
from .simfabric import Fabric, SimError, SwitchOptions

__all__ = ["Fabric", "FaultError", "SimError", "SwitchOptions", "parse"]
