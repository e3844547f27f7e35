"""Snapshot ingest, counter deltas, per-poll samples, rollups and retention.

Grouped by stage: intake/ (snapshot messages off the broker), validation/ (well-formed, and whose),
storage/ (a snapshot into rows), history/ (the stored series read and kept). ingest.py, the entry
point (ingest_snapshot, ingest_batch), and what it reports (results.py, signals.py) stay here with
the app's models, admin, tasks, migrations and management commands.
"""
