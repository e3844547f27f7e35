"""Covers fabricweb/inventory/migrations/, fabricweb/telemetry/migrations/, fabricweb/health/migrations/.

Every model change ships with its migration."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as e:
        pytest.fail(f"models changed without a migration (exit {e.code}):\n{out.getvalue()}")
