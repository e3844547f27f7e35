"""Covers fabricweb/nodeauth.py, fabricweb/telemetry/intake/messages.py,
fabricweb/identity/management/commands/node_key.py.

A snapshot is stored only from the node it names: per-node keys, signatures checked by the consumer."""

from __future__ import annotations

import logging

import pytest
from django.core.management import call_command

from fabricweb import nodeauth
from fabricweb.telemetry.intake.messages import ONE
from tests.fixture_trees import snapshot
from tests.pipeline.pipeline_support import PORTS, consume, on_the_wire, stored

# As the consumer's own tests: data committed for real, acks after commits.
pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "site-secret-for-tests-" + "k" * 40


@pytest.fixture
def auth(settings):
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    settings.FABRIC_NODE_AUTH = "required"
    return settings


def key(node: str) -> str:
    return nodeauth.node_key(SECRET, node)


def test_each_node_has_its_own_key_and_a_signature_holds_only_for_its_name():
    assert key("cn001") != key("cn002") and len(key("cn001")) == 64
    signed = nodeauth.signed_kwargs(key("cn001"), snapshot(host="cn001"))
    assert nodeauth.verify(SECRET, signed)["host"] == "cn001"
    with pytest.raises(nodeauth.NotAuthenticated, match="bad signature for node 'cn002'"):
        nodeauth.verify(SECRET, {**signed, "node": "cn002"})
    tampered = {**signed, "snapshot": signed["snapshot"].replace('"cn001"', '"cn009"')}
    with pytest.raises(nodeauth.NotAuthenticated, match="bad signature"):
        nodeauth.verify(SECRET, tampered)


def test_a_snapshot_larger_than_a_node_sends_is_refused_before_it_is_hashed():
    big = snapshot(host="cn001")
    big["errors"] = [{"path": "p" * 1000, "reason": "r"}] * 5_000
    with pytest.raises(nodeauth.NotAuthenticated, match="more than the 4194304 a node sends"):
        nodeauth.verify(SECRET, nodeauth.signed_kwargs(key("cn001"), big))


def test_it_stores_signed_snapshots_and_refuses_forged_ones_counting_them(each_db, auth, broker, caplog):
    broker.send(ONE, **nodeauth.signed_kwargs(key("cn001"), on_the_wire(snapshot(host="cn001"))))
    # What anyone on the broker could send: another node's name with their own key, or no signature at all.
    forged = nodeauth.signed_kwargs(key("cn666"), on_the_wire(snapshot(host="cn002")))
    broker.send(ONE, **{**forged, "node": "cn002"})
    lying = nodeauth.signed_kwargs(key("cn003"), on_the_wire(snapshot(host="cn003")))
    lying["snapshot"] = lying["snapshot"].replace('"host":"cn003"', '"host":"cn004"')
    lying["signature"] = nodeauth.sign(key("cn003"), "cn003", lying["snapshot"])
    broker.send(ONE, **lying)
    broker.send(ONE, snapshot(host="cn005"))

    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["snapshots"] + c.totals["unauthenticated"] >= 4)
    assert stored() == {"cn001": PORTS}  # no node created for the forgeries
    assert consumer.totals["unauthenticated"] == 3
    assert "bad signature for node 'cn002': not sent with that node's key" in caplog.text
    assert "signed by cn003 but names host 'cn004'" in caplog.text
    assert "not signed, and FABRIC_NODE_AUTH is required" in caplog.text
    assert broker.left() == (0, 0)


def test_unsigned_snapshots_are_stored_while_node_auth_is_off(each_db, settings, broker):
    settings.FABRIC_NODE_AUTH = "off"
    broker.send(ONE, snapshot(host="cn005"))
    consume(broker.url, lambda c: c.totals["snapshots"] >= 1)
    assert stored() == {"cn005": PORTS}


def test_node_key_prints_what_each_node_is_provisioned_with(auth, capsys):
    call_command("node_key", "cn001", "cn002")
    assert capsys.readouterr().out.splitlines() == [f"cn001 {key('cn001')}", f"cn002 {key('cn002')}"]
    call_command("node_key", "cn001", "--json")
    assert capsys.readouterr().out.strip().startswith('{\n "cn001": "')
