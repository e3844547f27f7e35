"""Snapshot ingest, counter deltas, per-poll samples, rollups and retention."""
