"""manage.py broker_acl NODE [NODE ...] [--passwords]: each node's Redis ACL user (fabricweb/brokeracl.py)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from fabricweb.brokeracl import acl_line, collector_password, collector_user, node_password, user_name
from fabricweb.telemetry.management.nodeargs import site_secret_and_nodes


class Command(BaseCommand):
    help = (
        "Print a Redis ACL file line per NODE: a user node.<NODE> that may only take its own polls and push "
        "snapshots, its password derived from FABRIC_NODE_KEY_SECRET (only its SHA-256 is printed). "
        "--passwords prints `NODE USER PASSWORD` instead, to put in each node's REDIS_URL. --collector: the "
        "names are fabric collectors', whose users fabric.<NAME> may take sweeps and push fabric snapshots only."
    )

    def add_arguments(self, parser):
        parser.add_argument("nodes", nargs="+", metavar="NODE")
        parser.add_argument("--passwords", action="store_true", help="print each node's user and password")
        parser.add_argument("--collector", action="store_true", help="the names are fabric collectors'")

    def handle(self, *args, nodes: list[str], collector: bool = False, **options):
        secret = site_secret_and_nodes(nodes, "broker passwords")
        for node in nodes:
            password = collector_password(secret, node) if collector else node_password(secret, node)
            if options["passwords"]:
                self.stdout.write(f"{node} {collector_user(node) if collector else user_name(node)} {password}")
            else:
                self.stdout.write(acl_line(node, password, settings.FABRIC_INGEST_SHARDS, collector))
