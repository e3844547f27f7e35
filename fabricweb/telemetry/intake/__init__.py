"""Intake: snapshot messages taken off the broker and handed to ingest in batches (`manage.py ingest`).

The batch consumer (consumer.py) and what it stores a batch with (batchstore.py), how it reads its
queues (readers.py; redisread.py on plain redis://, broker.py otherwise), which queues it holds
(shards.py), and what a message holds, read without trusting it (messages.py, jsonread.py).
"""
