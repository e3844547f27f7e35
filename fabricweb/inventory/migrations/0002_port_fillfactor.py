"""PostgreSQL: leave room in each page of the port and node tables for HOT updates.

Ingest rewrites every port row (raw counters, ring, timestamps) at every poll, and no
indexed column changes; with free space in the page PostgreSQL updates such rows in
place of a new index entry (a heap-only tuple), which halved the cost of the update in
bench/bench_ingest.py. Other databases have no such setting.
"""

from django.db import migrations

TABLES = ("inventory_port", "inventory_node")


def set_fillfactor(apps, schema_editor, value=50):
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} SET (fillfactor = {int(value)})")


def reset_fillfactor(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor, elidable=False)]
