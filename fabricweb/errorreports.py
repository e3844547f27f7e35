"""What error reports may show: Django's filter, with URLs hidden as well as keys and passwords."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class RedactingReporterFilter(SafeExceptionReporterFilter):
    # Django's list plus URL: broker and database URLs hold credentials in their user-info part.
    hidden_settings = re.compile("API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL", flags=re.IGNORECASE)
