"""manage.py node_key NODE [NODE ...] [--json]: the key each node signs its snapshots with (fabricweb/nodeauth.py)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from fabricweb.identity.management.nodeargs import site_secret_and_nodes
from fabricweb.nodeauth import collector_key, node_key


class Command(BaseCommand):
    help = (
        "Print the key of each NODE, derived from FABRIC_NODE_KEY_SECRET, to provision on that node as "
        "FABRIC_NODE_KEY (or in FABRIC_NODE_KEY_FILE). --json prints {node: key} for an agent serving several. "
        "--collector: the names are fabric collectors', and each key their FABRIC_COLLECTOR_KEY."
    )

    def add_arguments(self, parser):
        parser.add_argument("nodes", nargs="+", metavar="NODE")
        parser.add_argument("--json", action="store_true", help="one JSON object {node: key}")
        parser.add_argument("--collector", action="store_true", help="the names are fabric collectors'")

    def handle(self, *args, nodes: list[str], collector: bool = False, **options):
        secret = site_secret_and_nodes(nodes, "node keys")
        derive = collector_key if collector else node_key
        keys = {n: derive(secret, n) for n in nodes}
        if options["json"]:
            self.stdout.write(_dumps(keys))
        else:
            for n, key in keys.items():
                self.stdout.write(f"{n} {key}")


def _dumps(keys: dict[str, str]) -> str:
    return json.dumps(keys, indent=1, sort_keys=True)
