"""What health tells the rest of the project about events, without knowing who listens.

`events_changed` is sent by EventBook.write, inside the transaction that wrote the events
(the ingest transaction, or the stale check's), with `changes`: a list of
(event, change) where change is "opened", "severity" (its severity changed) or
"resolved", and every event has its primary key. A receiver that writes rows (the
alerts outbox) does so in the same transaction: committed together, or not at all. It
must not query per event (this runs on the ingest hot path) and should only raise for
database errors.
"""

from django.dispatch import Signal

OPENED, SEVERITY, RESOLVED = "opened", "severity", "resolved"

events_changed = Signal()
