"""A scheduler's node name -> the fabricweb node it is (docs/jobs.md, "Names").

By default they are the same name: the agent's host name (FABRIC_NODE_NAME, the short host name)
is what Slurm calls the node on most clusters, and a host seen only by the fabric collector is
named by the first word of its node description (rdma-core's default is `<hostname> <device>`,
fabricweb.fabric.linkrows.host_names). A site whose scheduler names nodes otherwise sets
FABRIC_JOBS_NODE_PATTERN and FABRIC_JOBS_NODE_REPLACE (re.sub) to turn one into the other.
"""

from __future__ import annotations

import re

from django.conf import settings


def host_mapper():
    """A function from a scheduler's node name to a fabricweb node name, from the settings."""
    pattern = settings.FABRIC_JOBS_NODE_PATTERN
    if pattern is None:
        return lambda name: name
    compiled, replace = re.compile(pattern), settings.FABRIC_JOBS_NODE_REPLACE
    return lambda name: compiled.sub(replace, name) if compiled.fullmatch(name) else name
