"""The engine: what judges every poll inside the ingest transaction, in memory (engine.py), and its fast path
for quiet ports: when judging a port can only repeat itself (quiet.py), its last judgement reused without a
PortView (memo.py) and the running sums of its waits (waitlog.py); with the host's PCIe views built from the
rows ingest already holds (pciehost.py). The top of health's three layers: it may import the rules
(`fabricweb.health.rules`), the database side (`fabricweb.health.records`), health's models and signals, and
the layers below health (inventory, telemetry, collectors); nothing in health but its apps.py imports it.
"""
