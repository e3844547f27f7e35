"""The fabric view: switch ports, links with both ends, topology changes and expected cabling (docs/fabric.md)."""
