"""The hook through which ingest hands each poll to the health rules.

`snapshots_ingested` is sent once per transaction, inside it, after every row of the
batch is written, with `results`: the IngestResult of each snapshot stored (in time
order per node). Each result carries `observations` (one PortObservation per port
seen) and `missing_devices` / `missing_ports`. A receiver that writes events does so
in the same transaction; if it raises, the whole batch rolls back and is retried one
snapshot at a time, so a receiver should only raise for database errors.
"""

from django.dispatch import Signal

snapshots_ingested = Signal()
