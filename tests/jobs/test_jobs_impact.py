"""Covers fabricweb/alerts/payload.py, fabricweb/alerts/transports/alertmanager.py, fabricweb/fabric/ingest.py,
fabricweb/jobs/impact.py, fabricweb/jobs/refresh.py, fabricweb/jobs/sources/slurm.py, fabricweb/api/views/jobs.py,
fabricweb/api/views/events.py, fabricweb/api/views/switches.py, fabricweb/dashboard/views/jobs.py,
fabricweb/dashboard/views/events.py, fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/port.py,
fabricweb/exporter/views.py; through them fabricweb/alerts/transports/base.py, fabricweb/alerts/transports/http.py,
fabricweb/jobs/names.py, fabricweb/jobs/report.py, fabricweb/jobs/sources/hostlist.py.

Which jobs a bad link hurts, on every surface: a real Slurm's jobs on a fabric simulated by ibsim, a fault
put on an inter-switch link through ibsim's console, the sweeps ingested and judged."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model

from collectors.sim import Fabric, SwitchOptions
from fabricweb.alerts import payload
from fabricweb.alerts.transports.alertmanager import alert
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.fabric.models import Link
from fabricweb.health.models import Event
from fabricweb.jobs.impact import jobs_for_events
from fabricweb.jobs.refresh import refresh
from fabricweb.jobs.sources.slurm import SlurmSource
from tests.ibsim_support import Ibsim, needs_ibsim
from tests.jobs.jobs_support import HOSTS, leaves_of
from tests.slurm_support import needs_slurm

pytestmark = [needs_ibsim, needs_slurm]


def test_a_bad_inter_switch_link_names_exactly_the_jobs_crossing_it_everywhere(fabric, slurm, client):
    leaves = leaves_of(fabric.snap)
    single = {h: next(iter(v)) for h, v in leaves.items() if len(v) == 1}
    by_leaf: dict[str, list[str]] = {}
    for host in sorted(single):
        by_leaf.setdefault(single[host], []).append(host)
    first, second, third = sorted(by_leaf)
    wide = slurm.submit([by_leaf[first][0], by_leaf[second][0], by_leaf[third][0]], name="allreduce")
    inside = slurm.submit(by_leaf[first][1:3], name="halo")
    other = slurm.submit([by_leaf[second][1], by_leaf[third][1]], name="stencil")
    refresh(SlurmSource(environ=slurm.env))
    # A cable the wide job crosses; which jobs cross it is what the walk of the tables says, checked below
    # against each job's own links.
    link = Link.objects.filter(job_links__job__job_id=wide, inter_switch=True).order_by("a_label", "a_port").first()
    crossing = set(link.job_links.values_list("job__job_id", flat=True))
    assert wide in crossing and inside not in crossing
    switch, _, number = link.a_label.partition(" port ")
    # Symbol errors on that cable, counted at its first end between two sweeps.
    ingest_fabric(fabric.snapshot())
    os.write(fabric.holder, f'PerformanceSet "{switch}"[{number}] PortCounters.SymbolErrorCounter=5000\n'.encode())
    ingest_fabric(fabric.snapshot())
    event = Event.objects.get(resolved_at__isnull=True, port=link.a, kind="symbol_errors")
    assert {b.id for b in jobs_for_events([event])[event.pk]} == crossing
    # The event keeps whom it hurt when it opened, for after the jobs have ended.
    assert {j["id"] for j in event.details["jobs"]} == crossing

    user = get_user_model().objects.create_user("noc", password="x")
    client.force_login(user)

    def get(path: str):
        response = client.get(path, secure=True)  # production redirects plain HTTP
        assert response.status_code == 200, (path, response.status_code)
        return response

    listed = get("/api/v1/jobs").json()
    first_listed = listed["jobs"][0]
    assert first_listed["id"] in crossing and first_listed["links_unhealthy"][0]["id"] == link.pk
    assert "symbol errors" in first_listed["links_unhealthy"][0]["finding"]
    healthy = {j["id"] for j in listed["jobs"] if not j["links_unhealthy"]}
    assert healthy == {wide, inside, other} - crossing
    assert listed["scheduler"]["source"] == "slurm" and listed["scheduler"]["error"] is None
    assert "adaptive" in listed["note"]
    events = get("/api/v1/events?open=true").json()["events"]
    assert set(next(e for e in events if e["id"] == event.pk)["jobs"]) == crossing
    links = get("/api/v1/links?inter_switch=true").json()["links"]
    assert set(next(row for row in links if row["id"] == link.pk)["jobs"]) == crossing
    one = get(f"/api/v1/jobs/{wide}").json()
    assert one["hosts"] == one["nodes"] and one["links"][0]["id"] == link.pk and one["links"][0]["severity"]

    page = get("/jobs/").content.decode()
    assert page.index(f">{first_listed['id']}<") < page.index(f">{inside}<")
    assert f"{link.a_label} ↔ {link.b_label}" in page
    for listing in ("/events/", "/", "/fabric/"):  # every list of events and problems names the jobs
        text = get(listing).content.decode()
        assert f"running job{'s' if len(crossing) > 1 else ''} cross" in text, listing
        assert f"{wide} allreduce (root, 3 nodes)</a>" in text, listing
    port_page = get(f"/ports/{switch}/switch/{number}/").content.decode()
    assert f"{wide} allreduce (root, 3 nodes)" in port_page

    metrics = b"".join(get("/metrics?set=health").streaming_content).decode()
    series = [line for line in metrics.splitlines() if line.startswith("infiniband_link_jobs{")]
    assert len(series) == 1 and f'end="{link.a_label}"' in series[0], series
    assert series[0].endswith(f" {len(crossing)}.0") or series[0].endswith(f" {len(crossing)}")

    item = payload.event_item(event, jobs_for_events([event])[event.pk])
    assert {j["id"] for j in item["jobs"]} == crossing
    assert item["jobs_summary"].startswith(f"{len(crossing)} job")
    assert alert(item, False, event.opened_at)["annotations"]["jobs"] == item["jobs_summary"]
    assert "jobs crossing it: " in payload.text(payload.build("u", "c", "firing", [item], event.opened_at))


def test_an_uplink_trained_below_what_both_ends_support_names_exactly_the_jobs_crossing_it(
    tmp_path, request, each_db, slurm
):
    # The same fabric with one uplink of leaf02 trained at DDR from the start (ibsim cannot retrain a link while
    # it runs): its degraded event is on that uplink, and it names the jobs whose paths cross it, no others.
    sim = Ibsim(
        Fabric.create(str(tmp_path / "sim"), len(HOSTS), seed=5,
                      switches=SwitchOptions(switch_ports=12, leaves=3, spines=2, faults=("leaf02/7:speed=DDR",))),
        request,
    )  # fmt: skip
    snap = sim.snapshot()
    ingest_fabric(snap)
    by_leaf: dict[str, list[str]] = {}
    for host, leaves in sorted(leaves_of(snap).items()):
        if len(leaves) == 1:
            by_leaf.setdefault(next(iter(leaves)), []).append(host)
    first, second, third = sorted(by_leaf)
    jobs = [
        slurm.submit([by_leaf[first][0], by_leaf[second][0]], name="a"),
        slurm.submit([by_leaf[second][1], by_leaf[third][0]], name="b"),
        slurm.submit([by_leaf[first][1], by_leaf[third][1]], name="c"),
    ]
    refresh(SlurmSource(environ=slurm.env))
    event = Event.objects.get(resolved_at__isnull=True, kind="degraded")
    assert event.message.startswith("leaf02 port 7 ↔ spine") and "DDR where QDR expected" in event.message
    uplink = Link.objects.get(a=event.port) if Link.objects.filter(a=event.port).exists() else None
    uplink = uplink or Link.objects.get(b=event.port)
    crossing = set(uplink.job_links.values_list("job__job_id", flat=True))
    assert crossing and crossing <= set(jobs)
    assert {b.id for b in jobs_for_events([event])[event.pk]} == crossing
    # Whichever jobs the tables route over it, and only those: a job's own links say the same.
    for job in jobs:
        assert (job in crossing) == Link.objects.filter(job_links__job__job_id=job, pk=uplink.pk).exists()
