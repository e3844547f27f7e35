"""The database side of health: the event rows and the lifecycle they follow (events.py, lifecycle.py, the
per-node cap eventbudget.py, why one is critical: critical.py), the norms read from the tables (context.py),
operator actions and policy files (actions.py, policyfile.py, drainpolicyfile.py), the sweeps that mark nodes
stale and retire vanished rows (staleness.py, retire.py) and how old the newest data is (freshness.py). The
middle of health's three layers: it may import the rules (`fabricweb.health.rules`), health's models and
signals, and the layers below health (inventory, telemetry, collectors); never the engine
(`fabricweb.health.engine`), which builds on it.
"""
