"""Covers fabricweb/alerts/channelfile.py, fabricweb/alerts/delivery.py, fabricweb/alerts/routing.py,
fabricweb/alerts/secrets.py; through them fabricweb/alerts/transports/apprise.py,
fabricweb/alerts/transports/email.py, fabricweb/alerts/transports/slack.py, fabricweb/alerts/transports/webhook.py,
fabricweb/yamlfile.py.

A channel's secret_env may name only FABRIC_ALERT_... variables: refused when a channel is saved (model,
admin form, channel file) and when it is used, so a channel stored before the rule cannot send this server's
own secrets (an email channel once sent FABRIC_NODE_KEY_SECRET to its SMTP server as the password)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from fabricweb.alerts.channelfile import ChannelFileError, import_channels
from fabricweb.alerts.delivery import deliver_all
from fabricweb.alerts.models import Channel, Delivery
from fabricweb.alerts.routing import make_test_delivery
from fabricweb.alerts.secrets import secret_env_problem
from tests.alerts.alerts_support import channel, env

NODE_SECRET = "node-signing-secret-" + "k" * 40
OWN = [
    "FABRIC_NODE_KEY_SECRET", "FABRIC_NODE_KEY", "FABRIC_NODE_KEY_FILE", "SECRET_KEY", "SECRET_KEY_FILE",
    "DATABASE_URL", "POSTGRES_PASSWORD", "POSTGRES_PASSWORD_FILE", "REDIS_URL", "REDIS_PASSWORD_FILE",
    "FABRIC_METRICS_BEARER_TOKEN",
]  # fmt: skip


def mail_channel(port: int, secret_env: str) -> Channel:
    """An email channel as stored before the rule: straight into the table, no validation."""
    return channel(
        "mail", kind="email", url=f"smtp://alerts@127.0.0.1:{port}", secret_env=secret_env,
        options={"to": ["oncall@example.org"]},
    )  # fmt: skip


def test_a_stored_channel_naming_the_node_key_secret_never_sends_it(each_db, smtp_server):
    c = mail_channel(smtp_server.port, "FABRIC_NODE_KEY_SECRET")
    make_test_delivery(c)
    with env(FABRIC_NODE_KEY_SECRET=NODE_SECRET):
        assert deliver_all().failed == 1
    assert smtp_server.logins == [] and smtp_server.messages == []  # the SMTP server saw no password, no mail
    c.refresh_from_db()
    assert c.state == Channel.State.FAILED
    assert c.last_error == (
        "SMTP password: secret_env FABRIC_NODE_KEY_SECRET is refused: it holds a node signing key, which must "
        "never leave this server; name a variable FABRIC_ALERT_... instead (e.g. FABRIC_ALERT_SMTP_PASSWORD)"
    )
    assert Delivery.objects.get().status == Delivery.Status.FAILED
    assert NODE_SECRET not in c.last_error + Delivery.objects.get().last_error


def test_a_fabric_alert_variable_still_logs_in_to_the_smtp_server(each_db, smtp_server, tmp_path):
    make_test_delivery(mail_channel(smtp_server.port, "FABRIC_ALERT_SMTP_PASSWORD"))
    with env(FABRIC_ALERT_SMTP_PASSWORD="s3cret"):
        assert deliver_all().sent == 1
    (tmp_path / "pw").write_text("s3cret\n")
    make_test_delivery(Channel.objects.get())
    with env(FABRIC_ALERT_SMTP_PASSWORD_FILE=str(tmp_path / "pw")):
        assert deliver_all().sent == 1
    assert smtp_server.logins == [("alerts", "s3cret")] * 2 and len(smtp_server.messages) == 2
    assert Channel.objects.get().state == Channel.State.OK


@pytest.mark.parametrize("name", OWN)
def test_it_refuses_this_servers_own_secrets_naming_what_they_hold(name):
    problem = secret_env_problem(name)
    assert problem.startswith(f"secret_env {name} is refused: it holds ")
    assert "must never leave this server" in problem


@pytest.mark.parametrize("name", ["SMTP_PASSWORD", "SLACK_WEBHOOK_URL", "HOME", "FABRIC_ALERT_", "FABRIC_ALERTS_X"])
def test_it_refuses_any_name_outside_the_fabric_alert_prefix(name):
    assert secret_env_problem(name).startswith(
        f"secret_env {name} is refused: a channel's secret must be in a variable named FABRIC_ALERT_..."
    )


@pytest.mark.parametrize("name", ["", "FABRIC_ALERT_SMTP_PASSWORD", "FABRIC_ALERT_SLACK_URL", "FABRIC_ALERT_X1"])
def test_it_accepts_no_secret_and_fabric_alert_names(name):
    assert secret_env_problem(name) is None


def test_it_refuses_a_non_variable_name():
    assert secret_env_problem("fabric_alert_x") == "secret_env must be an environment variable name (A-Z, 0-9, _)"
    assert secret_env_problem(["FABRIC_ALERT_X"]) == "secret_env must be an environment variable name (A-Z, 0-9, _)"


def test_model_validation_refuses_the_node_key_secret(each_db):
    c = Channel(name="mail", kind="email", url="smtp://alerts@mail.example.org", secret_env="FABRIC_NODE_KEY_SECRET",
                options={"to": ["oncall@example.org"]}, severities=["critical"])  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        c.full_clean()
    assert refused.value.message_dict == {"secret_env": [secret_env_problem("FABRIC_NODE_KEY_SECRET")]}
    c.secret_env = "FABRIC_ALERT_SMTP_PASSWORD"
    c.full_clean()


def test_the_channel_file_refuses_a_database_credential_and_stores_nothing(each_db):
    text = """
channels:
  - name: pager
    kind: webhook
    url: http://127.0.0.1:9/hook
  - name: mail
    kind: email
    url: smtp://alerts@mail.example.org:587
    secret_env: POSTGRES_PASSWORD
    options: {to: [oncall@example.org]}
"""
    with pytest.raises(ChannelFileError) as refused:
        import_channels(text)
    assert str(refused.value) == "channel 2 ('mail'): " + secret_env_problem("POSTGRES_PASSWORD")
    assert not Channel.objects.exists()
    assert import_channels(text.replace("POSTGRES_PASSWORD", "FABRIC_ALERT_SMTP_PASSWORD")) == (2, 0, 0)


def test_the_admin_form_refuses_the_django_secret_key(each_db, admin_client):
    form = admin_client.post(
        "/admin/alerts/channel/add/",
        {"name": "chat", "kind": "slack", "url": "", "secret_env": "SECRET_KEY", "options": "{}",
         "severities": '["critical"]', "wait_s": 0, "group_s": 1, "flap_hold_s": 60, "repeat_s": 0,
         "max_age_s": 86400, "enabled": "on"},
        secure=True,
    )  # fmt: skip
    assert form.status_code == 200
    assert b"secret_env SECRET_KEY is refused: it holds Django&#x27;s SECRET_KEY" in form.content
    assert not Channel.objects.filter(name="chat").exists()
