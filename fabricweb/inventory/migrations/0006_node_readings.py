"""Per-poll port readings move out of the port rows into one NodeReadings row per node.

The existing values are copied over first, so ingest continues every port's deltas, ring and
state_polls across the upgrade. The layout is fabricweb.inventory.readings' at the time of
writing, spelled out here so that this migration does not change with that module.
"""

import json
from datetime import UTC, datetime, timedelta

import django.db.models.deletion
from django.db import migrations, models

from . import _toast

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)


def copy_out(apps, schema_editor):
    Port, NodeReadings = apps.get_model("inventory", "Port"), apps.get_model("inventory", "NodeReadings")
    db = schema_editor.connection.alias
    by_node = {}
    fields = ("id", "device__node_id", "last_collected_at", "state_polls", "counters", "counters_ext", "hw_counters")
    for pk, node_id, at, polls, counters, ext, hw, recent in Port.objects.using(db).order_by("id").values_list(*fields, "recent"):
        at = None if at is None else (at - EPOCH) // US
        node = by_node.setdefault(node_id, ([], []))
        node[0].append([pk, at, counters, ext, hw])
        node[1].append([pk, polls, recent])
    NodeReadings.objects.using(db).bulk_create(
        NodeReadings(node_id=n, counters=_json(counters), history=_json(history))
        for n, (counters, history) in by_node.items()
    )


def _json(entries):
    # Led by a space: read back with json, exact for counters past 64 bits (see readings.BIG).
    return b" " + json.dumps(entries, separators=(",", ":")).encode()


def compress_with_lz4(apps, schema_editor):
    _toast.compress_with_lz4(schema_editor, "inventory_nodereadings", ("counters", "history"))


def copy_back(apps, schema_editor):
    Port, NodeReadings = apps.get_model("inventory", "Port"), apps.get_model("inventory", "NodeReadings")
    db = schema_editor.connection.alias
    for counters, history in NodeReadings.objects.using(db).values_list("counters", "history"):
        kept = {pk: (polls, recent) for pk, polls, recent in json.loads(bytes(history))}
        for pk, at, counters, ext, hw in json.loads(bytes(counters)):
            polls, recent = kept[pk]
            Port.objects.using(db).filter(pk=pk).update(
                last_collected_at=None if at is None else EPOCH + at * US,
                state_polls=polls,
                counters=counters,
                counters_ext=ext,
                hw_counters=hw,
                recent=recent,
            )


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0005_port_up_degraded'),
    ]

    operations = [
        migrations.CreateModel(
            name='NodeReadings',
            fields=[
                ('node', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='readings', serialize=False, to='inventory.node')),
                ('counters', models.BinaryField(help_text='JSON: per port, last poll and raw counters (inventory.readings).')),
                ('history', models.BinaryField(help_text='JSON: per port, state_polls and the recent ring (inventory.readings).')),
            ],
        ),
        migrations.RunPython(compress_with_lz4, migrations.RunPython.noop, elidable=False),
        migrations.RunPython(copy_out, copy_back, elidable=False),
        migrations.RemoveField(
            model_name='port',
            name='counters',
        ),
        migrations.RemoveField(
            model_name='port',
            name='counters_ext',
        ),
        migrations.RemoveField(
            model_name='port',
            name='hw_counters',
        ),
        migrations.RemoveField(
            model_name='port',
            name='last_collected_at',
        ),
        migrations.RemoveField(
            model_name='port',
            name='recent',
        ),
        migrations.RemoveField(
            model_name='port',
            name='state_polls',
        ),
    ]
