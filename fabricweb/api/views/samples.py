"""GET /api/v1/ports/<node>/<device>/<port>/samples?since=&until=: one port's polls, oldest first."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from fabricweb.telemetry.history import samples

from .. import params, serializers
from ..http import api_view, bad_param
from ..pagination import cursor, keyset_cut
from .ports import find_port

DEFAULT_WINDOW = timedelta(hours=1)
PAGE, MAX_PAGE = 360, 5000  # an hour of 10-second polls; a day at most per page

PARAMS = {
    "since": params.timestamp,
    "until": params.timestamp,
    "limit": params.integer(1, MAX_PAGE),
    "cursor": cursor,
}


@api_view
def sample_list(request, node: str, device: str, port: int):
    given = params.read(request, PARAMS)
    until = given.get("until") or timezone.now()
    since = given.get("since") or until - DEFAULT_WINDOW
    if since > until:
        raise bad_param("since", "is after until")
    row = find_port(node, device, port)
    # Half-open [since, until): consecutive windows never share a sample.
    limit = given.get("limit", PAGE)
    rows = samples.of_port(row, since, until, after=given.get("cursor"), limit=limit + 1)
    page, next_link = keyset_cut(request, rows, "ts", limit, since=serializers.iso(since), until=serializers.iso(until))
    return {
        "node": node,
        "device": device,
        "port": port,
        "since": serializers.iso(since),
        "until": serializers.iso(until),
        "samples": [serializers.sample(s) for s in page],
        "next": next_link,
    }
