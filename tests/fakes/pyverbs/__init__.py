"""A stand-in for rdma-core's pyverbs, for tests only (see _fabric.py for the controls).

Only what fabricweb uses, with the real module names, class hierarchy, attribute
names, bytes/str types and integer encodings of rdma-core 44's pyverbs.
"""
