"""Node-side reader of InfiniBand ports: sysfs and pyverbs into typed values.

Standard library only (pyverbs optional); knows nothing of Django, Celery or
Prometheus. `read_host()` returns a Snapshot; `snapshot.to_dict()` is the JSON
contract a node worker sends.
"""

from .link import Rate, judge_link, parse_rate
from .model import Device, Port, Snapshot
from .snapshot import read_host, to_dict

__all__ = ["Device", "Port", "Rate", "Snapshot", "judge_link", "parse_rate", "read_host", "to_dict"]
