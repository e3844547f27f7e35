"""manage.py import_policies FILE.yaml: load link policies from YAML, all of them or none."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fabricweb.health.records import context, policyfile


class Command(BaseCommand):
    help = (
        "Create or update link policies from a YAML file (format: fabricweb/health/records/policyfile.py). "
        "Every entry is checked first; one bad entry stores nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="YAML file, or - for standard input")
        parser.add_argument(
            "--replace", action="store_true", help="also delete the policies the file does not name (baselines too)"
        )

    def handle(self, *args, file: str, replace: bool, **options):
        try:
            if file == "-":
                text = sys.stdin.read()
            else:
                with open(file, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise CommandError(f"{file}: cannot read it ({e})") from None
        try:
            rows = policyfile.parse(text)
        except policyfile.PolicyFileError as e:
            raise CommandError(f"{file}: {e}; nothing imported") from None
        with transaction.atomic():
            created, updated, deleted = policyfile.store(rows, replace=replace)
        context.forget()
        self.stdout.write(f"{file}: {len(rows)} policies: {created} created, {updated} updated, {deleted} deleted")
