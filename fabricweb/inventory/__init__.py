"""Nodes, their RDMA devices and ports, with each port's current state."""
