"""Covers fabricweb/telemetry/intake/consumer.py, fabricweb/telemetry/intake/messages.py; through them
fabricweb/telemetry/intake/spend.py.

A host sending more bytes a minute than FABRIC_NODE_MAX_BYTES_PER_MINUTE: its messages past the budget are
dropped by the real consumer before they are stored, counted and named on the node; the others' are stored."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime

import pytest

from fabricweb.inventory.models import Node
from fabricweb.telemetry.intake.consumer import BatchConsumer
from fabricweb.telemetry.intake.messages import ONE
from tests.fixture_trees import later, snapshot
from tests.pipeline.pipeline_support import on_the_wire

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_host_past_its_bytes_a_minute_is_dropped_counted_and_named_while_others_are_stored(
    each_db, broker, settings, caplog
):
    flooder, honest = snapshot(host="cn001"), snapshot(host="cn002")
    size = len(json.dumps(on_the_wire(flooder)))  # (its message's body: this and the task's arguments around it)
    settings.FABRIC_NODE_MAX_BYTES_PER_MINUTE = int(size * 3.5)  # room for 3 of its messages a minute
    for k in range(10):
        broker.send(ONE, later(flooder, 10 * k))
        if k < 3:  # the honest node's polls of the same half minute
            broker.send(ONE, later(honest, 10 * k))

    consumer = BatchConsumer(100, 0.2, broker_url=broker.url)
    deadline = time.monotonic() + 20
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer.run(until=lambda: consumer.totals["snapshots"] >= 6 or time.monotonic() > deadline)

    assert consumer.totals["over budget"] == 7 and consumer.totals["snapshots"] == 6
    honest_row, flooder_row = Node.objects.get(name="cn002"), Node.objects.get(name="cn001")
    assert honest_row.last_collected_at == datetime.fromisoformat(later(honest, 20)["collected_at"])  # all 3
    assert honest_row.refused_snapshots == 0 and honest_row.refused_reason == ""
    # Its first three were stored, the seven after them refused: counted on its row after the batch.
    assert flooder_row.refused_snapshots == 7
    assert flooder_row.refused_reason.startswith(
        f"sent more than its {settings.FABRIC_NODE_MAX_BYTES_PER_MINUTE} bytes a minute "
        "(FABRIC_NODE_MAX_BYTES_PER_MINUTE): messages of "
    )
    assert caplog.text.count("cn001 sent more than its") == 1  # logged once a minute, not per message
    assert broker.left() == (0, 0)
