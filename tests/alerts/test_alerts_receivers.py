"""Covers fabricweb/alerts/channelfile.py, fabricweb/alerts/delivery.py, fabricweb/alerts/routing.py,
fabricweb/alerts/status.py, fabricweb/api/healthz.py; through them fabricweb/alerts/transports/apprise.py,
fabricweb/alerts/transports/email.py, fabricweb/alerts/transports/slack.py, fabricweb/alerts/transports/webhook.py,
fabricweb/brokermemory.py, fabricweb/yamlfile.py.

Every transport against a real receiver, the delivery loop's retries and failures, secrets,
/healthz. Deliveries are sent from the test's thread (deliver_all) so the test database is used;
the Celery worker is tested in test_alerts_worker.py."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.utils import timezone

from fabricweb.alerts.channelfile import ChannelFileError, export_channels, import_channels
from fabricweb.alerts.delivery import deliver_all
from fabricweb.alerts.models import Channel, Delivery
from fabricweb.alerts.routing import make_test_delivery, route
from fabricweb.alerts.status import channel_problems
from harness import wait_for
from tests.alerts.alerts_support import Fabric, channel, env

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def fab():
    return Fabric()


def fire(fab: Fabric, *keys: str, message: str = "") -> None:
    fab.open(timezone.now(), *(keys or ("cn001/mlx5_0/1",)), message=message)
    route()


def resolve(fab: Fabric, *keys: str) -> None:
    fab.resolve(timezone.now(), *(keys or ("cn001/mlx5_0/1",)))
    route()


def test_the_webhook_receiver_gets_the_documented_body(each_db, fab, http_receiver):
    channel(url=f"{http_receiver.url}/hook")
    fire(fab, message=f"cn001 mlx5_0/1: port down; node_desc {SCRIPT}")
    assert deliver_all().sent == 1
    [got] = http_receiver.requests
    body = got.body
    assert got.path == "/hook" and got.headers["Content-Type"] == "application/json"
    assert got.headers["X-Fabricweb-Delivery"] == body["id"] == str(Delivery.objects.get().uid)
    assert set(body) == {"version", "id", "channel", "reason", "status", "title", "count", "created_at", "events"}
    assert (body["version"], body["status"], body["count"]) == (1, "firing", 1)
    item = body["events"][0]
    assert item["message"] == f"cn001 mlx5_0/1: port down; node_desc {SCRIPT}"  # text, as it came
    assert item["opened_at"].endswith("Z") and item["resolved_at"] is None
    resolve(fab)
    deliver_all()
    assert [r.body["status"] for r in http_receiver.requests] == ["firing", "resolved"]
    assert Channel.objects.get().state == Channel.State.OK


def test_alertmanager_receives_the_alert_and_its_resolution(each_db, fab, alertmanager):
    channel("am", kind="alertmanager", url=alertmanager.url)
    fire(fab, "cnam1/mlx5_0/1")
    assert deliver_all().sent == 1

    def ours():
        return [a for a in alertmanager.alerts() if a["labels"].get("node") == "cnam1"]

    [alert] = ours()
    assert alert["labels"] == {
        "alertname": "InfinibandDown", "node": "cnam1", "device": "mlx5_0", "port": "1",
        "kind": "down", "severity": "critical",
    }  # fmt: skip
    assert alert["status"]["state"] == "active"
    assert alert["annotations"]["summary"].startswith("cnam1 mlx5_0/1: port down")
    assert alert["annotations"]["expected_link"] == "4X HDR"
    assert alert["generatorURL"] == "http://localhost:8000/ports/cnam1/mlx5_0/1/"
    resolve(fab, "cnam1/mlx5_0/1")
    assert deliver_all().sent == 1
    # A resolved alert leaves the list of active ones (its endsAt is when the event resolved).
    wait_for("Alertmanager to resolve the alert", lambda: all(a["status"]["state"] != "active" for a in ours()), 10)
    assert all(a["endsAt"] <= timezone.now().isoformat() for a in ours())


def test_the_mail_says_what_is_wrong_where_and_links_the_port(each_db, fab, smtp_server):
    channel(
        "mail", kind="email", url=f"smtp://127.0.0.1:{smtp_server.port}",
        options={"to": ["oncall@example.org"], "from": "fabricweb@example.org"},
    )  # fmt: skip
    fire(fab, message=f"cn001 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 200 Gb/s (4X HDR) {SCRIPT}")
    assert deliver_all().sent == 1
    [mail] = smtp_server.messages
    assert mail["To"] == "oncall@example.org"
    assert mail["Subject"].startswith("[fabricweb] FIRING: cn001 mlx5_0/1: trained at 40 Gb/s (4X QDR)")
    assert mail.get_content_type() == "text/plain"  # no HTML part: device strings are never markup
    text = mail.get_payload(decode=True).decode()
    assert f"expected 200 Gb/s (4X HDR) {SCRIPT}" in text
    assert "link: expected 4X HDR, actual DOWN / Polling" in text
    assert "since 20" in text and "http://localhost:8000/ports/cn001/mlx5_0/1/" in text


def test_an_smtp_password_comes_from_a_file_named_in_the_environment(each_db, fab, tmp_path, smtp_server):
    (tmp_path / "pw").write_text("s3cret\n")
    channel(
        "mail", kind="email", url=f"smtp://alerts@127.0.0.1:{smtp_server.port}", secret_env="FABRIC_ALERT_TEST_SMTP",
        options={"to": ["oncall@example.org"]},
    )  # fmt: skip
    fire(fab)
    # Without the secret the channel fails naming the variable, never a value.
    assert deliver_all().failed == 1
    assert (
        Channel.objects.get().last_error
        == "SMTP password: neither FABRIC_ALERT_TEST_SMTP nor FABRIC_ALERT_TEST_SMTP_FILE is set in the environment"
    )
    make_test_delivery(Channel.objects.get())
    with env(FABRIC_ALERT_TEST_SMTP_FILE=str(tmp_path / "pw")):
        assert deliver_all().sent == 1
    assert smtp_server.logins == [("alerts", "s3cret")] and len(smtp_server.messages) == 1
    assert Channel.objects.get().state == Channel.State.OK


def test_slack_gets_escaped_text(each_db, fab, http_receiver):
    with env(FABRIC_ALERT_TEST_SLACK_URL=f"{http_receiver.url}/services/T000/B000/XXXX"):
        channel("chat", kind="slack", secret_env="FABRIC_ALERT_TEST_SLACK_URL")
        fire(fab, message=f"cn001 mlx5_0/1: port down {SCRIPT} <!channel> & more")
        assert deliver_all().sent == 1
    [got] = http_receiver.requests
    assert set(got.body) == {"text"}
    assert "port down &lt;script&gt;alert(1)&lt;/script&gt; &lt;!channel&gt; &amp; more" in got.body["text"]
    assert "<" not in got.body["text"]


def test_apprise_delivers_through_its_json_service(each_db, fab, http_receiver):
    channel("apprise", kind="apprise", secret_env="FABRIC_ALERT_TEST_APPRISE_URL")
    fire(fab)
    with env(FABRIC_ALERT_TEST_APPRISE_URL=f"json://127.0.0.1:{http_receiver.port}/notify"):
        assert deliver_all().sent == 1
    [got] = http_receiver.requests
    assert got.path == "/notify"
    assert got.body["title"].startswith("FIRING: cn001 mlx5_0/1: port down")
    assert "http://localhost:8000/ports/cn001/mlx5_0/1/" in got.body["message"]


def test_a_receiver_that_is_down_is_retried_with_backoff_in_order(each_db, fab, http_receiver):
    channel(url=http_receiver.url)
    http_receiver.stop()
    fire(fab)
    resolve(fab)
    report = deliver_all()
    assert (report.sent, report.waiting) == (0, 1)
    first, second = Delivery.objects.order_by("id")
    assert (first.attempts, second.attempts) == (1, 0)  # the later one waits behind the first
    assert "did not answer" in first.last_error and "127.0.0.1" in first.last_error
    assert Channel.objects.get().state == Channel.State.RETRYING
    assert [p.state for p in channel_problems()] == ["retrying"]
    Delivery.objects.update(next_attempt_at=timezone.now())
    deliver_all()
    first.refresh_from_db()
    assert first.attempts == 2 and (first.next_attempt_at - timezone.now()).total_seconds() > 1  # 2 s backoff
    http_receiver.start()
    Delivery.objects.update(next_attempt_at=timezone.now())
    assert deliver_all().sent == 2
    assert [r.body["status"] for r in http_receiver.requests] == ["firing", "resolved"]
    assert Channel.objects.get().state == Channel.State.OK and channel_problems() == []


def test_a_permanent_error_fails_the_delivery_and_shows_on_healthz(each_db, fab, http_receiver):
    channel(url=f"{http_receiver.url}/hook?token=abc")
    http_receiver.status = 404
    fire(fab)
    assert deliver_all().failed == 1
    d = Delivery.objects.get()
    assert d.status == Delivery.Status.FAILED and d.attempts == 1
    c = Channel.objects.get()
    assert c.state == Channel.State.FAILED
    assert c.last_error.startswith(f"http://127.0.0.1:{http_receiver.port} answered HTTP 404")
    assert "token" not in c.last_error  # the path and query (tokens) are never in an error
    [problem] = channel_problems()
    assert (problem.channel, problem.state, problem.failed) == ("oncall", "failed", 1)
    body = json.loads(Client().get("/healthz").content)
    assert body["checks"]["notifications"] == {
        "status": "degraded", "failed_channels": ["oncall"], "retrying_channels": []
    }  # fmt: skip
    assert "notifications" in body["degraded"]


def test_a_delivery_older_than_the_max_age_is_given_up_and_shown(each_db, fab, http_receiver):
    channel(url=http_receiver.url, max_age_s=1)
    http_receiver.stop()
    fire(fab)
    deliver_all()
    time.sleep(1.1)
    Delivery.objects.update(next_attempt_at=timezone.now())
    assert deliver_all().failed == 1
    d = Delivery.objects.get()
    assert d.status == Delivery.Status.FAILED and d.last_error.startswith("not accepted within 1 s (1 attempts)")
    assert Channel.objects.get().state == Channel.State.FAILED


def test_a_test_notification_reaches_the_receiver(each_db, http_receiver):
    make_test_delivery(channel(url=http_receiver.url))
    assert deliver_all().sent == 1
    [got] = http_receiver.requests
    assert (
        got.body["reason"] == "test"
        and got.body["title"] == "TEST: fabricweb-test: test notification for channel oncall"
    )


CHANNELS = """
channels:
  - name: pager
    kind: alertmanager
    url: http://127.0.0.1:9093
    severities: [critical]
    wait_s: 30
  - name: chat
    kind: slack
    secret_env: FABRIC_ALERT_SLACK_URL
    severities: [critical, warning]
"""


def test_channels_import_from_yaml_all_or_nothing(each_db):
    assert import_channels(CHANNELS) == (2, 0, 0)
    pager = Channel.objects.get(name="pager")
    assert (pager.kind, pager.wait_s, pager.severities) == ("alertmanager", 30.0, ["critical"])
    bad = CHANNELS + "  - name: leak\n    kind: webhook\n    url: https://hooks.example.org/x?token=abc\n"
    with pytest.raises(ChannelFileError, match=r"channel 3 \('leak'\): url must not hold a password or a query"):
        import_channels(bad.replace("wait_s: 30", "wait_s: 60"))
    assert Channel.objects.get(name="pager").wait_s == 30.0  # nothing stored
    assert import_channels(export_channels(), replace=True) == (0, 2, 0)
    slack = CHANNELS.replace("secret_env: FABRIC_ALERT_SLACK_URL", "url: https://hooks.slack.com/services/T0/B0/XXXX")
    with pytest.raises(ChannelFileError, match=r"channel 2 \('chat'\): a slack URL holds its token: leave url blank"):
        import_channels(slack)
    assert "XXXX" not in export_channels()


def test_the_admin_lists_channel_state_and_sends_a_test_notification(each_db, http_receiver, admin_client):
    c = channel(url=http_receiver.url)
    Channel.objects.filter(pk=c.pk).update(state="failed", last_error="127.0.0.1 answered HTTP 404")
    page = admin_client.get("/admin/alerts/channel/", secure=True)
    assert page.status_code == 200
    assert b"127.0.0.1 answered HTTP 404" in page.content
    done = admin_client.post(
        "/admin/alerts/channel/",
        {"action": "send_test_notification", "_selected_action": [c.pk]},
        follow=True,
        secure=True,
    )
    assert b"Test notification queued for 1 channel(s)" in done.content
    assert deliver_all().sent == 1
    assert http_receiver.requests[0].body["reason"] == "test"
    deliveries = admin_client.get("/admin/alerts/delivery/", secure=True)
    assert deliveries.status_code == 200 and b"sent" in deliveries.content
    # The form refuses a Slack URL (it holds the token): name a variable instead.
    form = admin_client.post(
        "/admin/alerts/channel/add/",
        {"name": "chat", "kind": "slack", "url": "https://hooks.slack.com/services/T0/B0/XXXX", "options": "{}",
         "severities": '["critical"]', "wait_s": 0, "group_s": 1, "flap_hold_s": 60, "repeat_s": 0,
         "max_age_s": 86400, "enabled": "on"},
        secure=True,
    )  # fmt: skip
    assert form.status_code == 200 and b"holds its token" in form.content
    assert not Channel.objects.filter(name="chat").exists()
