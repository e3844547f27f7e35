"""`infiniband_link_jobs`: how many running jobs cross each unhealthy link (the default set, health).

One series per link with an open warning or critical problem on either end (fabricweb.jobs.report:
link_troubles), labelled by its first end's node so ?shard and ?node split them as they split ports;
0 when no running job crosses it. Healthy links have none: a few series at most, within the budget.
"""

from __future__ import annotations

from fabricweb.jobs.impact import jobs_by_link
from fabricweb.jobs.report import link_troubles

from .names import PREFIX
from .selection import Selection
from .series import Families

HELP = (
    "Running jobs whose routed paths (the switches' forwarding tables) cross this unhealthy link; "
    "one series per link with an open warning or critical problem"
)


def link_jobs(out: Families, selection: Selection) -> None:
    troubles = link_troubles()
    if not troubles:
        return
    family = out.family(PREFIX + "link_jobs", HELP)
    jobs = jobs_by_link(list(troubles))
    for link_id, trouble in sorted(troubles.items()):
        link = trouble.link
        node = (link.a_label or "").split(" ", 1)[0]
        if not selection.wants(node):
            continue
        labels = {"node": node, "end": link.a_label, "peer": link.b_label, "severity": trouble.severity}
        family.add(labels, float(len(jobs.get(link_id, ()))))
