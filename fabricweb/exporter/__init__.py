"""/metrics: the current-state tables as Prometheus series (docs/metrics.md)."""
