"""Covers fabricweb/health/management/commands/import_policies.py,
fabricweb/health/management/commands/export_policies.py.

Link policies from and to YAML (manage.py import_policies / export_policies): all of a file or none of it."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from fabricweb.health.models import LinkPolicy

SITE = """\
policies:
  - name: cn-hdr
    node: "cn*"
    device: "mlx5_*"
    speed: hdr
    width: 4X
  - name: storage-edr
    node: "st[0-9][0-9]"
    port: 1
    speed: EDR
    width: 4
    order: 50
  - name: spares
    node: cn042
    device: mlx5_1
    expect_up: false
    enabled: false
"""


def import_text(tmp_path, text: str, *args: str) -> str:
    path = tmp_path / "policies.yaml"
    path.write_text(text)
    out = io.StringIO()
    call_command("import_policies", str(path), *args, stdout=out)
    return out.getvalue()


def export_text() -> str:
    out = io.StringIO()
    call_command("export_policies", stdout=out)
    return out.getvalue()


def rows() -> list[tuple]:
    return list(
        LinkPolicy.objects.order_by("name").values_list(
            "name", "node_glob", "device_glob", "port_glob", "speed", "lanes", "expect_up", "order", "enabled"
        )
    )


def test_policies_go_in_from_yaml_and_come_back_out_the_same(each_db, tmp_path):
    assert "3 policies: 3 created, 0 updated, 0 deleted" in import_text(tmp_path, SITE)
    assert rows() == [
        ("cn-hdr", "cn*", "mlx5_*", "*", "HDR", 4, True, 100, True),
        ("spares", "cn042", "mlx5_1", "*", None, None, False, 100, False),
        ("storage-edr", "st[0-9][0-9]", "*", "1", "EDR", 4, True, 50, True),
    ]
    exported = export_text()
    assert yaml.safe_load(exported)["policies"][0] == {
        "name": "storage-edr",
        "node": "st[0-9][0-9]",
        "device": "*",
        "port": "1",
        "speed": "EDR",
        "width": "4X",
        "expect_up": True,
        "order": 50,
        "enabled": True,
    }
    before = rows()
    assert "3 policies: 0 created, 0 updated, 0 deleted" in import_text(tmp_path, exported)
    assert rows() == before

    LinkPolicy.objects.all().delete()
    import_text(tmp_path, exported)
    assert rows() == before


def test_a_policy_says_how_a_shared_pcie_uplink_is_reported_and_exports_it_only_when_it_does(each_db, tmp_path):
    text = SITE + "  - {name: gpu-nodes, node: 'gpu*', pcie_shared: warning}\n"
    assert "4 policies: 4 created" in import_text(tmp_path, text)
    said = dict(LinkPolicy.objects.values_list("name", "pcie_shared"))
    assert said == {"cn-hdr": None, "gpu-nodes": "warning", "spares": None, "storage-edr": None}
    exported = {p["name"]: p for p in yaml.safe_load(export_text())["policies"]}
    assert exported["gpu-nodes"]["pcie_shared"] == "warning"
    assert "pcie_shared" not in exported["cn-hdr"]  # a file without the option reads as it did
    assert "0 created, 0 updated, 0 deleted" in import_text(tmp_path, export_text())


def test_an_import_updates_by_name_and_replace_deletes_the_rest(each_db, tmp_path):
    import_text(tmp_path, SITE)
    changed = "policies:\n  - {name: cn-hdr, node: 'cn*', speed: NDR, width: 4X}\n"
    assert "1 policies: 0 created, 1 updated, 0 deleted" in import_text(tmp_path, changed)
    assert LinkPolicy.objects.get(name="cn-hdr").speed == "NDR"
    assert LinkPolicy.objects.count() == 3
    assert "0 created, 0 updated, 2 deleted" in import_text(tmp_path, changed, "--replace")
    assert [r[0] for r in rows()] == ["cn-hdr"]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("{name: b, speed: XDR4}", "policy 2 ('b'): speed 'XDR4' is not an InfiniBand speed (one of SDR, DDR, QDR"),
        ("{name: b, width: 3X}", "policy 2 ('b'): width '3X' is not an InfiniBand width (one of 1X, 2X, 4X, 8X, 12X"),
        ("{name: b, expect_up: maybe}", "policy 2 ('b'): 'expect_up' must be true or false, got 'maybe'"),
        ("{name: b, order: high}", "policy 2 ('b'): 'order' must be a whole number, got 'high'"),
        ("{name: b, nodes: 'cn*'}", "policy 2 ('b'): unknown key(s) nodes (known: name, node, device, port"),
        ("{name: a}", "policy 2 ('a'): the name is used by an earlier entry"),
        ("{node: 'cn*'}", "policy 2: 'name' must be text of 1 to 100 characters"),
        ("{name: b, port: ''}", "policy 2 ('b'): 'port' must be a shell pattern of 1 to 20 characters"),
        ("{name: b, pcie_shared: page}", "policy 2 ('b'): 'pcie_shared' must be warning, info or null, got 'page'"),
        ("just text", "policy 2: expected a mapping of name, node"),
    ],
)
def test_one_bad_entry_stores_nothing_and_names_the_entry(each_db, tmp_path, entry, words):
    text = f"policies:\n  - {{name: a, node: 'cn*', speed: HDR, width: 4X}}\n  - {entry}\n"
    with pytest.raises(CommandError) as err:
        import_text(tmp_path, text)
    assert words in str(err.value) and str(err.value).endswith("nothing imported")
    assert not LinkPolicy.objects.exists()


def test_a_file_that_is_not_a_policy_list_is_refused(each_db, tmp_path):
    for text, words in (
        ("policies: [a, [", "not valid YAML"),
        ("rules: []\n", "unknown top-level key(s) rules"),
        ("policies: {name: a}\n", "expected a list of policies under 'policies'"),
    ):
        with pytest.raises(CommandError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            import_text(tmp_path, text)
    with pytest.raises(CommandError, match="cannot read it"):
        call_command("import_policies", str(tmp_path / "missing.yaml"))
