"""manage.py import_drain_policies FILE.yaml: load drain policies from YAML, all of them or none."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fabricweb.health.records import drainpolicyfile


class Command(BaseCommand):
    help = "Create or update drain policies from a YAML file (format: fabricweb/health/records/drainpolicyfile.py)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="YAML file")

    def handle(self, *args, file: str, **options):
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise CommandError(f"{file}: cannot read it ({e})") from None
        try:
            rows = drainpolicyfile.parse(text)
        except drainpolicyfile.DrainPolicyFileError as e:
            raise CommandError(f"{file}: {e}; nothing imported") from None
        with transaction.atomic():
            created, updated = drainpolicyfile.store(rows)
        self.stdout.write(f"{file}: {len(rows)} drain policies: {created} created, {updated} updated")
