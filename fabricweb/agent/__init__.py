"""The node agent: a Celery worker that reads this node's ports and sends snapshots to ingest.

Started by `python -m fabricweb.agent`. It loads `collectors`, fabricweb/names.py and Celery,
nothing else of the project: no Django, no database settings, no secret (DESIGN.md, "Node
workers hold only the broker URL"); its configuration is environment variables (config.py).
"""
