"""Read-only JSON API (/api/v1/) and /healthz: what tests, scripts and the dashboard read."""
