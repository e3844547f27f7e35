"""The scheduler's running jobs, the links their traffic crosses, and how fresh that knowledge is.

A job's links are the links on the routed paths between its nodes (fabricweb.fabric.paths), stored
as JobLink rows so "which jobs cross this link" is one indexed query. A job that leaves the
scheduler's list is ended: its links are dropped at once (it crosses nothing any more), its row is
kept a while for the pages and events that named it (FABRIC_JOBS_KEEP_ENDED).
"""

from __future__ import annotations

from django.db import models

from fabricweb.fabric.models import Link
from fabricweb.inventory.models import NAME_MAX, TEXT_MAX, Port

JOB_ID_MAX = 64


class Job(models.Model):
    source = models.CharField(max_length=16, help_text="The scheduler it came from: slurm.")
    job_id = models.CharField(max_length=JOB_ID_MAX, help_text="As the scheduler prints it: 4242, 4242_7.")
    name = models.CharField(max_length=TEXT_MAX, blank=True, default="", help_text="Untrusted: the user's text.")
    user = models.CharField(max_length=NAME_MAX, blank=True, default="")
    partition = models.CharField(max_length=NAME_MAX, blank=True, default="")
    nodes = models.JSONField(default=list, help_text="The scheduler's node names.")
    hosts = models.JSONField(default=list, help_text="The fabricweb nodes they map to, in the same order.")
    started_at = models.DateTimeField(null=True, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True, db_index=True)
    routes_key = models.CharField(max_length=64, blank=True, default="", help_text="What its links were walked on.")
    findings = models.JSONField(default=list, help_text="Routing findings on its paths: loops, no route.")
    unmapped = models.JSONField(default=list, help_text="Its nodes with no port on the fabric.")

    class Meta:
        ordering = ["job_id"]
        constraints = [models.UniqueConstraint(fields=["source", "job_id"], name="jobs_job_unique_id")]

    def __str__(self) -> str:
        return f"job {self.job_id} ({self.name})"

    @property
    def node_count(self) -> int:
        return len(self.nodes)


class JobLink(models.Model):
    """A link a running job's traffic crosses (routed, either way) or that joins one of its nodes to its leaf."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="job_links")
    link = models.ForeignKey(Link, on_delete=models.CASCADE, related_name="job_links")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "link"], name="jobs_joblink_unique")]
        indexes = [models.Index(fields=["link"], name="jobs_joblink_link")]


class SchedulerStatus(models.Model):
    """The last read of a scheduler's job list: when it last answered, and why it did not since."""

    source = models.CharField(max_length=16, unique=True)
    last_ok_at = models.DateTimeField(null=True, blank=True)
    last_tried_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="", help_text="Why the last read failed; empty when it worked.")
    running = models.IntegerField(default=0)
    seconds = models.FloatField(default=0.0, help_text="How long the last read and its paths took.")

    def __str__(self) -> str:
        return self.source


class Drain(models.Model):
    """A node fabricweb holds out of the scheduler, or would (dry run), or could not: one row per node.

    Kept while its finding stands; once the finding has been resolved for FABRIC_DRAIN_RESUME_AFTER (when
    set) a node fabricweb drained is resumed and the row deleted (fabricweb.jobs.drain).
    """

    class State(models.TextChoices):
        WOULD = "would-drain"  # dry run: recorded and shown, nothing done
        DRAINED = "drained"  # scontrol update ... State=DRAIN done by fabricweb
        FAILED = "failed"  # the scheduler refused or did not answer: retried at the next run
        LIMITED = "limited"  # past FABRIC_DRAIN_MAX: paged instead
        OPERATOR = "operator"  # drained by an operator already: left alone
        UNDONE = "undone"  # an operator undid fabricweb's drain: not drained again while the finding stands

    node = models.CharField(max_length=NAME_MAX, unique=True, help_text="The fabricweb node.")
    scheduler_node = models.CharField(max_length=NAME_MAX, help_text="The scheduler's name for it.")
    state = models.CharField(max_length=16, choices=State.choices)
    reason = models.CharField(max_length=TEXT_MAX, help_text="The finding, in words.")
    finding_key = models.CharField(max_length=255, blank=True, default="")
    port = models.ForeignKey(
        Port, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The port the finding is on: where the drain event goes for a host with no agent.",
    )  # fmt: skip
    since = models.DateTimeField()
    clear_since = models.DateTimeField(null=True, blank=True, help_text="When its finding was last seen gone.")
    attempts = models.IntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["node"]

    def __str__(self) -> str:
        return f"{self.node}: {self.state}"


class DrainAction(models.Model):
    """Every drain action, who did it, what and when: fabricweb's own and operators' from the node page."""

    at = models.DateTimeField(db_index=True)
    node = models.CharField(max_length=NAME_MAX, db_index=True)
    action = models.CharField(max_length=32, help_text="drain, would-drain, resume, failed, limited, left-alone ...")
    by = models.CharField(max_length=150, help_text="fabricweb, or the operator's user name.")
    reason = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.by} {self.action} {self.node}"
