"""Covers fabricweb/fabric/ingest.py, fabricweb/jobs/drain.py, fabricweb/jobs/sources/slurm.py,
fabricweb/dashboard/views/actions.py, fabricweb/dashboard/views/node.py; through them fabricweb/jobs/report.py,
fabricweb/jobs/sources/hostlist.py.

Draining in a real Slurm, safely: host links pulled and an uplink pulled in ibsim's fabric (its console),
the sweeps ingested and judged, then fabricweb.jobs.drain run against the Slurm whose nodes are the hosts."""

from __future__ import annotations

import contextlib
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone

from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Link
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from fabricweb.jobs import drain
from fabricweb.jobs.models import Drain, DrainAction
from fabricweb.jobs.sources.slurm import SlurmSource
from tests.dashboard.dashboard_support import Browser, create_roles, make_user
from tests.ibsim_support import needs_ibsim
from tests.slurm_support import needs_slurm

pytestmark = [needs_ibsim, needs_slurm]


def pull(fabric, *ends: tuple[str, int]) -> None:
    """Pull these cables (switch, port) and let the next sweep see it."""
    for switch, port in ends:
        os.write(fabric.holder, f'Unlink "{switch}"[{port}]\n'.encode())
    fabric.sweep()
    ingest_fabric(fabric.snapshot())


def host_link(host: str) -> tuple[str, int]:
    """The leaf end (switch, port) of one of the host's own links."""
    link = (
        Link.objects.filter(a_label__startswith=f"{host} ").order_by("a_label").first()
        or Link.objects.filter(b_label__startswith=f"{host} ").order_by("b_label").first()
    )
    switch_label = link.b_label if link.a_label.startswith(host) else link.a_label
    switch, _, port = switch_label.partition(" port ")
    return switch, int(port)


def drain_event(node: str) -> Event | None:
    """The node's drain event: on the node, or (a host seen only by the fabric) on its leaf's port."""
    return Event.objects.filter(kind="drain", key=f"drain:{node}", resolved_at__isnull=True).first()


@override_settings(FABRIC_DRAIN_MAX=4)
def test_a_host_link_down_drains_that_host_and_an_uplink_down_drains_nothing(fabric, slurm):
    uplink = Link.objects.filter(inter_switch=True).order_by("a_label").first()
    switch, _, port = uplink.a_label.partition(" port ")
    pull(fabric, (switch, int(port)), host_link("cn004"))
    report = drain.run(SlurmSource(environ=slurm.env), mode="on")
    assert report.drained == ["cn004"] and report.candidates == ["cn004"]
    state, reason = slurm.node_state("cn004")
    assert state in ("drained", "draining") and reason.startswith("fabricweb: ")
    assert "down" in reason.lower()
    assert [slurm.node_state(h)[0] for h in ("cn001", "cn002", "cn003")] == ["idle"] * 3
    event = drain_event("cn004")
    assert event.severity == "info" and "drained in the scheduler by fabricweb" in event.message
    assert DrainAction.objects.filter(node="cn004", action="drain", by="fabricweb").count() == 1
    # The next run changes nothing: still one drain, no second scontrol.
    assert drain.run(SlurmSource(environ=slurm.env), mode="on").drained == []
    assert DrainAction.objects.filter(node="cn004", action="drain").count() == 1


def test_dry_run_drains_nothing_and_says_what_it_would_do(fabric, slurm, client):
    pull(fabric, host_link("cn005"))
    report = drain.run(SlurmSource(environ=slurm.env), mode="dry-run")
    assert report.would == ["cn005"] and report.drained == []
    assert slurm.node_state("cn005") == ("idle", "")
    event = drain_event("cn005")
    assert event.message.startswith("cn005: would drain (dry run): ")
    assert DrainAction.objects.get(node="cn005").action == "would-drain"
    # Turned off: the dry run's record and its event go.
    drain.run(SlurmSource(environ=slurm.env), mode="off")
    assert drain_event("cn005") is None and not Drain.objects.exists()


@override_settings(FABRIC_DRAIN_MAX=2)
def test_past_the_drain_limit_a_leaf_going_down_pages_instead_of_draining(fabric, slurm):
    hosts = ["cn007", "cn008", "cn009"]  # every host of leaf03: all its host cables pulled
    leaf03 = Link.objects.filter(b_label__startswith="leaf03 ", inter_switch=False).values_list("b_label", flat=True)
    pull(fabric, *(("leaf03", int(label.split()[-1])) for label in leaf03))
    report = drain.run(SlurmSource(environ=slurm.env), mode="on")
    assert report.drained == [] and sorted(report.limited) == hosts
    assert all(slurm.node_state(h) == ("idle", "") for h in hosts)
    for host in hosts:
        event = drain_event(host)
        assert event.severity == "critical" and "more nodes at once than FABRIC_DRAIN_MAX (2)" in event.message


def test_an_operators_drain_is_left_alone(fabric, slurm):
    slurm.drain("cn002", "bad DIMM")
    pull(fabric, host_link("cn002"))
    report = drain.run(SlurmSource(environ=slurm.env), mode="on")
    assert report.left == ["cn002"] and report.drained == []
    assert slurm.node_state("cn002")[1] == "bad DIMM"
    assert Drain.objects.get(node="cn002").state == "operator"
    with pytest.raises(drain.SchedulerError, match="drained outside fabricweb"):
        drain.operator_undo(SlurmSource(environ=slurm.env), "cn002", "alice")
    assert slurm.node_state("cn002")[1] == "bad DIMM"


def test_a_failing_scontrol_is_shown_and_retried(fabric, slurm, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("squeue", "sinfo"):
        (bin_dir / tool).symlink_to(Path(shutil.which(tool)))
    scontrol = bin_dir / "scontrol"
    scontrol.write_text("#!/bin/sh\necho 'slurm_update error: Access/permission denied' >&2\nexit 1\n")
    scontrol.chmod(0o755)
    pull(fabric, host_link("cn003"))
    broken = SlurmSource(bin_dir=str(bin_dir), environ=slurm.env)
    report = drain.run(broken, mode="on")
    assert report.failed == ["cn003"] and slurm.node_state("cn003") == ("idle", "")
    event = drain_event("cn003")
    assert event.severity == "warning" and "Access/permission denied" in event.message
    assert drain.run(broken, mode="on").failed == ["cn003"]
    assert Drain.objects.get(node="cn003").attempts == 2
    fixed = drain.run(SlurmSource(environ=slurm.env), mode="on")
    assert fixed.drained == ["cn003"] and slurm.node_state("cn003")[0] in ("drained", "draining")
    assert drain_event("cn003").severity == "info"
    assert [a.action for a in DrainAction.objects.filter(node="cn003").order_by("at", "id")] == [
        "failed",
        "failed",
        "drain",
    ]


def test_an_operator_drains_and_undoes_from_the_node_page_and_a_viewer_or_a_forged_post_cannot(fabric, slurm):
    create_roles()
    Node.objects.create(name="cn001", kind=Node.Kind.HOST, first_seen_at=timezone.now())
    viewer = Browser(make_user("victor", "viewer"))
    viewer.post("/nodes/cn001/drain", {"reason": "reseat HCA"}, status=403)
    forged = Browser(make_user("olga", "operator"), enforce_csrf_checks=True)
    forged.post("/nodes/cn001/drain", {"reason": "reseat HCA"}, status=403)
    assert slurm.node_state("cn001") == ("idle", "")
    operator = Browser(forged.user)
    with override_settings(FABRIC_JOBS="slurm", FABRIC_SLURM_BIN=None), _slurm_env(slurm):
        operator.post("/nodes/cn001/drain", {"reason": "reseat HCA"})
        state, reason = slurm.node_state("cn001")
        assert state == "drained" and reason == "fabricweb: drained by olga from the node page: reseat HCA"
        page = operator.text("/nodes/cn001/")
        assert "drained by fabricweb since" in page and "reseat HCA" in page and "olga" in page
        operator.post("/nodes/cn001/drain/undo")
        # Resumed: no DRAIN flag and no reason (the node reads "idle*" until slurmctld pings it again).
        assert slurm.node_state("cn001") in (("idle", ""), ("idle*", ""))
    assert [(a.action, a.by) for a in DrainAction.objects.filter(node="cn001").order_by("at", "id")] == [
        ("drain", "olga"),
        ("resume", "olga"),
    ]


@contextlib.contextmanager
def _slurm_env(slurm):
    """The web process's environment names the Slurm under test (SLURM_CONF), as a site's would."""
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = slurm.env["SLURM_CONF"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SLURM_CONF")
        else:
            os.environ["SLURM_CONF"] = before


def test_a_node_fabricweb_drained_is_resumed_only_when_asked_and_only_after_its_finding_cleared_so_long(fabric, slurm):
    switch, port = host_link("cn004")
    pull(fabric, (switch, port))
    source = SlurmSource(environ=slurm.env)
    assert drain.run(source, mode="on").drained == ["cn004"]
    os.write(fabric.holder, f'ReLink "{switch}"[{port}]\n'.encode())
    fabric.sweep()
    for _ in range(3):  # the down event resolves after the usual clean polls
        ingest_fabric(fabric.snapshot())
    assert not Event.objects.filter(kind="down", resolved_at__isnull=True).exists()
    cleared = timezone.now()
    # Without FABRIC_DRAIN_RESUME_AFTER (the default), never resumed, however long ago the finding cleared.
    drain.run(source, mode="on", now=cleared)
    assert drain.run(source, mode="on", now=cleared + timedelta(days=30)).resumed == []
    assert slurm.node_state("cn004")[0] in ("drained", "draining")
    with override_settings(FABRIC_DRAIN_RESUME_AFTER=600.0):
        assert drain.run(source, mode="on", now=cleared + timedelta(seconds=599)).resumed == []
        assert drain.run(source, mode="on", now=cleared + timedelta(seconds=601)).resumed == ["cn004"]
    assert slurm.node_state("cn004") in (("idle", ""), ("idle*", ""))
    assert not Drain.objects.filter(node="cn004").exists() and drain_event("cn004") is None
    assert DrainAction.objects.filter(node="cn004", action="resume", by="fabricweb").count() == 1
