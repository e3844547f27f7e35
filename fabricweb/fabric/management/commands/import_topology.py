"""manage.py import_topology FILE: the expected cabling, from ibnetdiscover output or YAML (docs/fabric.md)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from fabricweb.fabric.expected import TopologyError
from fabricweb.fabric.topology import import_topology


class Command(BaseCommand):
    help = (
        "Replace the expected cabling with FILE's: ibnetdiscover output, or YAML "
        "('links:' then '- leaf01 port 1 -- cn001 mlx5_0/1' per cable)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the topology; - for standard input")

    def handle(self, *args, file: str, **options) -> None:
        try:
            text = self.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CommandError(f"cannot read {file}: {e}") from None
        try:
            count = import_topology(text, Path(file).name if file != "-" else "stdin")
        except TopologyError as e:
            raise CommandError(f"{file}: {e} (nothing imported)") from None
        self.stdout.write(f"expected cabling: {count} links from {file}; checked at every full sweep")
