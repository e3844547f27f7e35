"""Link health: operator link policies and the events that health rules open and resolve.

Three layers, lowest first, each importing only from those below it (tests/test_imports.py, LAYERS): `rules/`
(pure: a port's view in, findings out), `records/` (the database side: events, norms, operator actions,
policy files, staleness and retiring) and `engine/` (judging every poll inside ingest, with its fast path for
quiet ports). Django's own modules stay here: models.py and signals.py below the three, apps.py, tasks.py,
admin.py and management/ above them.
"""
