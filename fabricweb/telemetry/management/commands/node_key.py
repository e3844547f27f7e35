"""manage.py node_key NODE [NODE ...] [--json]: the key each node signs its snapshots with (fabricweb/nodeauth.py)."""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from collectors.facts import NODE_NAME_PATTERN
from fabricweb.nodeauth import node_key


class Command(BaseCommand):
    help = (
        "Print the key of each NODE, derived from FABRIC_NODE_KEY_SECRET, to provision on that node as "
        "FABRIC_NODE_KEY (or in FABRIC_NODE_KEY_FILE). --json prints {node: key} for an agent serving several."
    )

    def add_arguments(self, parser):
        parser.add_argument("nodes", nargs="+", metavar="NODE")
        parser.add_argument("--json", action="store_true", help="one JSON object {node: key}")

    def handle(self, *args, nodes: list[str], **options):
        secret = settings.FABRIC_NODE_KEY_SECRET
        if not secret:
            raise CommandError("FABRIC_NODE_KEY_SECRET is not set: node keys are derived from it")
        bad = [n for n in nodes if not re.fullmatch(NODE_NAME_PATTERN, n)]
        if bad:
            raise CommandError(f"not node names: {', '.join(map(repr, bad))}")
        keys = {n: node_key(secret, n) for n in nodes}
        if options["json"]:
            self.stdout.write(_dumps(keys))
        else:
            for n, key in keys.items():
                self.stdout.write(f"{n} {key}")


def _dumps(keys: dict[str, str]) -> str:
    return json.dumps(keys, indent=1, sort_keys=True)
