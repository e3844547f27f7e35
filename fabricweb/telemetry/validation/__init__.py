"""Validation: whether a snapshot is well-formed and whose it is, before anything is stored.

schema.py parses a node's snapshot into its typed form (typed.py), through the quick path
(quickparse.py) or the worded checks (checks.py) that say what is wrong; auth.py checks that a
message's signature is its node's (or its fabric collector's).
"""
