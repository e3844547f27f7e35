"""manage.py export_policies [--output FILE]: every link policy as YAML that import_policies reads back."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from fabricweb.health.models import LinkPolicy
from fabricweb.health.records import policyfile


class Command(BaseCommand):
    help = "Write every link policy (baselines and disabled ones included) as YAML for import_policies."

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, output: str | None, **options):
        text = policyfile.dump(LinkPolicy.objects.order_by("order", "name"))
        if output is None:
            self.stdout.write(text, ending="")
            return
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise CommandError(f"{output}: cannot write it ({e})") from None
