"""Notification channels as YAML, for configuration management: `manage.py import_channels` / `export_channels`.

    channels:
      - name: oncall-pager          # unique; an import updates the channel of the same name
        kind: alertmanager          # webhook, alertmanager, email, slack, apprise
        url: http://alertmanager:9093
        severities: [critical]
        wait_s: 30                  # `for`: stay open this long before paging (default 0)
        group_s: 1                  # events due within this window are one notification
        flap_hold_s: 60             # resolution announced after this long; reopening continues the thread
        repeat_s: 0                 # repeat unacknowledged critical events this often (0: never)
        max_age_s: 86400            # give a delivery up after this long
        enabled: true
      - name: chat
        kind: slack
        secret_env: FABRIC_ALERT_SLACK_URL   # the URL holds a token: from the environment (or ..._FILE)
        severities: [critical, warning]
      - name: mail
        kind: email
        url: smtp://alerts@mail.example.org:587
        secret_env: FABRIC_ALERT_SMTP_PASSWORD
        options: {to: [oncall@example.org], from: fabricweb@example.org, starttls: true}

Secrets never go in the file: `url` must not carry a password or query string; use secret_env,
which must name a variable FABRIC_ALERT_... (fabricweb/alerts/secrets.py).
Everything is checked before anything is stored.
"""

from __future__ import annotations

import yaml
from django.db import transaction

from fabricweb.yamlfile import named_entries

from .models import SEVERITIES, Channel, url_problem
from .secrets import secret_env_problem

FIELDS = (
    "name", "kind", "url", "secret_env", "options", "severities", "wait_s", "group_s",
    "flap_hold_s", "repeat_s", "max_age_s", "enabled",
)  # fmt: skip
NUMBERS = ("wait_s", "group_s", "flap_hold_s", "repeat_s", "max_age_s")


class ChannelFileError(ValueError):
    pass


def parse(text: str) -> list[dict]:
    return named_entries(text, key="channels", noun="channel", error=ChannelFileError, entry=_entry)


def _entry(entry: object, i: int) -> dict:
    if not isinstance(entry, dict):
        raise ChannelFileError(f"channel {i}: expected a mapping of {', '.join(FIELDS)}")
    name = entry.get("name")
    where = f"channel {i}" + (f" ({name!r})" if isinstance(name, str) else "")

    def bad(message: str) -> ChannelFileError:
        return ChannelFileError(f"{where}: {message}")

    unknown = sorted(map(str, set(entry) - set(FIELDS)))
    if unknown:
        raise bad(f"unknown field(s) {', '.join(unknown)}")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise bad("name must be text of 1-100 characters")
    kind = entry.get("kind")
    if kind not in Channel.Kind.values:
        raise bad(f"kind {kind!r} is not one of {', '.join(Channel.Kind.values)}")
    row = {"name": name.strip(), "kind": kind}
    url = entry.get("url", "") or ""
    if not isinstance(url, str):
        raise bad("url must be text")
    secret_env = entry.get("secret_env", "") or ""
    problem = secret_env_problem(secret_env) or url_problem(kind, url, secret_env)
    if problem:
        raise bad(problem)
    row.update(url=url, secret_env=secret_env)
    options = entry.get("options", {}) or {}
    if not isinstance(options, dict):
        raise bad("options must be a mapping")
    if kind == "email" and not (isinstance(options.get("to"), list) and options["to"]):
        raise bad("an email channel needs options.to, a list of addresses")
    row["options"] = options
    severities = entry.get("severities", ["critical"])
    if not isinstance(severities, list) or not severities or any(s not in SEVERITIES for s in severities):
        raise bad(f"severities must be a non-empty list of {', '.join(SEVERITIES)}")
    row["severities"] = list(dict.fromkeys(severities))
    for field in NUMBERS:
        if field in entry:
            value = entry[field]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise bad(f"{field} must be a number of seconds, 0 or more")
            row[field] = float(value)
    if "max_age_s" in row and row["max_age_s"] <= 0:
        raise bad("max_age_s must be more than 0")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise bad("enabled must be true or false")
    row["enabled"] = enabled
    return row


def import_channels(text: str, replace: bool = False) -> tuple[int, int, int]:
    """(created, updated, deleted). All or nothing: a bad entry stores none of them."""
    rows = parse(text)
    created = updated = 0
    with transaction.atomic():
        for row in rows:
            _, was_created = Channel.objects.update_or_create(name=row["name"], defaults=row)
            created += was_created
            updated += not was_created
        deleted = 0
        if replace:
            deleted, _ = Channel.objects.exclude(name__in=[r["name"] for r in rows]).delete()
    return created, updated, deleted


def export_channels() -> str:
    channels = [{f: getattr(c, f) for f in FIELDS} for c in Channel.objects.order_by("name")]
    return yaml.safe_dump({"channels": channels}, sort_keys=False, allow_unicode=True)
