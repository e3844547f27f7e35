"""The node agent: a Celery worker that reads this node's ports and sends snapshots to ingest.

It runs with `fabricweb.agent.settings` (started by `python -m fabricweb.agent`): the
broker URL and the node's hardware, no database and no secret (DESIGN.md, "Node workers
hold only the broker URL"). Only this package and `collectors` run on a compute node.
"""
