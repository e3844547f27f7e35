"""History: the stored series read and kept.

samples.py reads raw samples (every reader goes through it), rollup.py sums them into 5-minute and
hourly buckets, retention.py drops what is past its retention.
"""
