#!/usr/bin/env python
"""Django's command-line utility for fabricweb."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fabricweb.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as e:  # a setting missing or wrong: one line naming it, not a traceback
        sys.exit(f"manage.py: {e}\n(On the demo's own database, as `make demo` runs: DEBUG=1 before the command.)")


if __name__ == "__main__":
    main()
