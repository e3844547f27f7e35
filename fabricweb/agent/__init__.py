"""The node agent: a loop that answers central beat's polls with this node's snapshot (loop.py).

Started by `python -m fabricweb.agent`. It loads `collectors`, fabricweb/names.py, nodeauth.py and
brokertls.py, and nothing outside Python's standard library: no Django, no Celery, no database
settings, no secret (DESIGN.md, "Node workers hold only the broker URL"); its configuration is
environment variables (config.py).
"""
