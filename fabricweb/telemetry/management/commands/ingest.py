"""manage.py ingest [--batch N] [--max-wait S] [--redeliver-after S] [--shards K] [--lease S]: store node
snapshots from the `snapshots` queue (or, with K > 1, the snapshots.<k> queues leased to it) in batches."""

from __future__ import annotations

import argparse
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from fabricweb import heap
from fabricweb.telemetry.intake.consumer import LEASE_S, REDELIVER_AFTER_S, BatchConsumer
from fabricweb.telemetry.intake.shards import ShardCountMismatch


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


class Command(BaseCommand):
    help = (
        "Read node snapshots from the `snapshots` queue and store up to --batch messages in one "
        "transaction, waiting at most --max-wait seconds for a batch to fill. Messages are acked "
        "after the commit. SIGTERM or Ctrl-C: finish the batch in hand and exit."
    )
    # As the Celery workers (fabricweb/celery.py, CELERY_SKIP_CHECKS): the checks run where a configuration is
    # deployed, and the URL checks would import every page's view into a process that serves none.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=_positive_int, default=100, metavar="N", help="messages per batch (100)")
        parser.add_argument(
            "--max-wait",
            type=_seconds,
            default=0.2,
            metavar="S",
            help="the longest a message waits for its batch (0.2)",
        )
        parser.add_argument(
            "--redeliver-after",
            type=_seconds,
            default=REDELIVER_AFTER_S,
            metavar="S",
            help=f"take back messages a killed consumer left unacked after S seconds ({REDELIVER_AFTER_S:g})",
        )

        parser.add_argument(
            "--shards",
            type=_positive_int,
            default=None,
            metavar="K",
            help="snapshot queues shared by the consumers (FABRIC_INGEST_SHARDS, as the agents have it)",
        )
        parser.add_argument(
            "--lease",
            type=_seconds,
            default=LEASE_S,
            metavar="S",
            help=f"with several shards: a consumer silent S seconds has its queues taken over ({LEASE_S:g})",
        )

    def handle(self, *args, batch, max_wait, redeliver_after, shards, lease, **options):
        shards = shards or settings.FABRIC_INGEST_SHARDS
        try:
            consumer = BatchConsumer(batch, max_wait, redeliver_after=redeliver_after, shards=shards, lease_s=lease)
        except ValueError as e:
            raise CommandError(str(e)) from None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, consumer.stop)
        heap.settle()
        try:
            consumer.run()
        except ShardCountMismatch as e:
            raise CommandError(str(e)) from None
