"""Storage: a validated snapshot turned into rows.

apply.py applies a snapshot to its node's rows in memory (counter deltas: deltas.py, columns.py; the
`recent` ring: ring.py) and store.py writes the changes: samples packed per node-poll (packing.py)
into time partitions (partitions.py). rowcache.py keeps the rows between batches; catchup.py brings a
port's history from its checkpoint up to its last poll.
"""
