"""manage.py broker_acl [--central] [NODE ...] [--passwords]: the broker's Redis ACL users (fabricweb/brokeracl.py)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from fabricweb.brokeracl import (
    acl_line,
    central_acl_lines,
    collector_password,
    collector_user,
    node_password,
    user_name,
)
from fabricweb.env import redact_url
from fabricweb.identity.management.nodeargs import site_secret_and_nodes


class Command(BaseCommand):
    help = (
        "Print a Redis ACL file line per NODE: a user node.<NODE> that may only take its own polls and push "
        "snapshots, its password derived from FABRIC_NODE_KEY_SECRET (only its SHA-256 is printed). "
        "--passwords prints `NODE USER PASSWORD` instead, to put in each node's REDIS_URL. --collector: the "
        "names are fabric collectors', whose users fabric.<NAME> may take sweeps and push fabric snapshots only. "
        "--central first prints Redis's default user off and the central user REDIS_URL names (its password "
        "from REDIS_PASSWORD or REDIS_PASSWORD_FILE): a whole ACL file for the broker."
    )

    def add_arguments(self, parser):
        parser.add_argument("nodes", nargs="*", metavar="NODE")
        parser.add_argument("--passwords", action="store_true", help="print each node's user and password")
        parser.add_argument("--collector", action="store_true", help="the names are fabric collectors'")
        parser.add_argument(
            "--central", action="store_true", help="start with `default` off and the central user of REDIS_URL"
        )

    def handle(self, *args, nodes: list[str], collector: bool = False, central: bool = False, **options):
        if central and options["passwords"]:
            raise CommandError("--central prints ACL lines, --passwords the nodes' passwords: give one")
        if not nodes and not central:
            raise CommandError("name at least one NODE (or give --central)")
        secret = site_secret_and_nodes(nodes, "broker passwords") if nodes else None
        if central:
            for line in central_lines(settings.REDIS_URL):
                self.stdout.write(line)
        for node in nodes:
            password = collector_password(secret, node) if collector else node_password(secret, node)
            if options["passwords"]:
                self.stdout.write(f"{node} {collector_user(node) if collector else user_name(node)} {password}")
            else:
                self.stdout.write(acl_line(node, password, settings.FABRIC_INGEST_SHARDS, collector))


def central_lines(url: str) -> list[str]:
    """The ACL lines of the user the central processes connect as (REDIS_URL, its password put in by settings)."""
    parts = urlsplit(url)
    if not parts.username:
        raise CommandError(
            f"REDIS_URL={redact_url(url)!r} names no user: name the central one, e.g. redis://central@redis:6379/0"
        )
    if not parts.password:
        raise CommandError("the central user has no password: set REDIS_PASSWORD_FILE (or REDIS_PASSWORD)")
    try:
        return central_acl_lines(unquote(parts.username), unquote(parts.password))
    except ValueError as e:
        raise CommandError(str(e)) from None
