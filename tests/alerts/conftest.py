from tests.alerts.alerts_support import alertmanager, http_receiver, smtp_server  # noqa: F401 - fixtures
