"""The jobs tests' world: a fabric simulated by ibsim and routed by opensm, its sweep (with the forwarding tables)
ingested, and a real Slurm whose nodes are the simulated hosts."""

from __future__ import annotations

import pytest

from collectors.sim import Fabric, SwitchOptions
from fabricweb.fabric.ingest import ingest_fabric
from tests.ibsim_support import Ibsim
from tests.jobs.jobs_support import HOSTS
from tests.slurm_support import Slurm


@pytest.fixture
def fabric(tmp_path, request, each_db) -> Ibsim:
    options = SwitchOptions(switch_ports=12, leaves=3, spines=2)
    sim = Ibsim(Fabric.create(str(tmp_path / "sim"), len(HOSTS), seed=5, switches=options), request)
    sim.snap = sim.snapshot()
    ingest_fabric(sim.snap)
    return sim


@pytest.fixture
def slurm(tmp_path, request) -> Slurm:
    return Slurm(tmp_path / "slurm", HOSTS, request)
