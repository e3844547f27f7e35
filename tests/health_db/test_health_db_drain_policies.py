"""Covers fabricweb/jobs/drain.py, fabricweb/health/management/commands/import_drain_policies.py; through them
fabricweb/health/records/drainpolicyfile.py.

Drain policies from YAML (manage.py import_drain_policies): checked whole before anything is stored, and
what they say decides which findings drain (fabricweb.jobs.drain._policy_for)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from fabricweb.health.models import DrainPolicy
from fabricweb.jobs.drain import _policy_for

GOOD = """
drain_policies:
  - name: compute
    node: "cn*"
    kinds: [down, symbol_errors]
    severity: warning
  - name: login-never
    node: "login*"
    drain: false
    order: 10
"""


def test_it_imports_drain_policies_and_the_first_match_by_order_decides(each_db, tmp_path):
    path = tmp_path / "drain.yaml"
    path.write_text(GOOD)
    call_command("import_drain_policies", str(path))
    policies = list(DrainPolicy.objects.all())
    assert [p.name for p in policies] == ["login-never", "compute"]
    assert _policy_for("cn042", policies) == (True, ["down", "symbol_errors"], "warning")
    assert _policy_for("login1", policies)[0] is False
    assert _policy_for("gpu01", policies) == (True, ("down", "degraded", "flapping"), "critical")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("drain_policies:\n  - name: a\n    kinds: [down, bogus]\n", "'kinds' must be a list of finding kinds"),
        ("drain_policies:\n  - name: a\n    severity: info\n", "'severity' must be critical or warning"),
        ("drain_policies:\n  - name: a\n    nodes: cn*\n", "unknown key(s) nodes"),
        ("drain_policies:\n  - name: a\n  - name: b\n    drain: maybe\n", "drain policy 2 ('b'): 'drain'"),
        ("drain_policies:\n  - &p {name: a}\n  - *p\n", "not valid YAML: aliases (*name) are not accepted, line 3"),
    ],
)
def test_a_bad_drain_policy_file_is_refused_whole(each_db, tmp_path, text, says):
    path = tmp_path / "drain.yaml"
    path.write_text(text)
    with pytest.raises(CommandError, match="nothing imported") as refused:
        call_command("import_drain_policies", str(path))
    assert says in str(refused.value)
    assert not DrainPolicy.objects.exists()
