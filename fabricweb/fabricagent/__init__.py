"""The fabric collector: sweeps the fabric over management datagrams and sends the snapshot (docs/fabric.md)."""
