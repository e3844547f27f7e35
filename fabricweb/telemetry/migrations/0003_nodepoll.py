"""The table of packed raw samples, one row per node-poll; 0004 partitions it (PostgreSQL) and fills it."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0002_partition_samples"),
        ("inventory", "0004_node_ingest_token"),
    ]

    operations = [
        migrations.CreateModel(
            name="NodePoll",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("ts", models.DateTimeField(help_text="collected_at of the snapshot (the node's clock).")),
                ("ports", models.BinaryField(help_text="The ports' samples, packed by fabricweb.telemetry.storage.packing.")),
                (
                    "node",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="polls",
                        to="inventory.node",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["node", "ts"], name="telemetry_poll_node_ts"),
                    models.Index(fields=["ts"], name="telemetry_poll_ts"),
                ],
            },
        ),
    ]
