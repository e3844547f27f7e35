"""Covers fabricweb/deploychecks.py.

`manage.py check --deploy` warns about a site whose nodes need not sign (fabricweb.W001) or whose broker has no
ACL users (fabricweb.W002: the broker URL names no user), and says nothing of either on a site that has both."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks

from fabricweb.deploychecks import BROKER_DEFAULT_USER, NODE_AUTH_OFF, broker_user
from tests.settings_support import PRODUCTION, manage

NODE_SECRET = "node-secret-for-deploy-checks-" + "b" * 40
# The production variables of tests/test_settings_env.py, less the node auth and broker user they now have.
WITHOUT = {k: v for k, v in PRODUCTION.items() if not k.startswith(("FABRIC_", "REDIS_"))}
SECURED = {**WITHOUT, "FABRIC_NODE_KEY_SECRET": NODE_SECRET, "REDIS_URL": "redis://central@broker:6379/0"}


def ours(include_deployment_checks: bool = True) -> dict[str, str]:
    """The project's own check results, by id: message."""
    found = run_checks(include_deployment_checks=include_deployment_checks)
    return {c.id: c.msg for c in found if c.id.startswith("fabricweb.")}


def test_it_warns_when_node_auth_is_off(settings):
    settings.FABRIC_NODE_AUTH, settings.REDIS_URL = "off", "redis://central:pw@broker:6379/0"
    found = ours()
    assert list(found) == [NODE_AUTH_OFF]
    assert "Node authentication is off (FABRIC_NODE_AUTH=off)" in found[NODE_AUTH_OFF]


@pytest.mark.parametrize(
    "url",
    [
        "redis://broker:6379/0",
        "redis://:the-one-password@broker:6379/0",
        "rediss://default:the-one-password@broker:6379/0",
        "unix:///run/redis/redis.sock?db=0",
    ],
)
def test_it_warns_when_the_broker_url_names_no_user_or_the_default_one(settings, url):
    settings.FABRIC_NODE_AUTH, settings.REDIS_URL = "required", url
    found = ours()
    assert list(found) == [BROKER_DEFAULT_USER]
    assert "names no Redis user" in found[BROKER_DEFAULT_USER]
    assert "the-one-password" not in found[BROKER_DEFAULT_USER]


def test_it_is_silent_with_node_auth_required_and_a_broker_user(settings):
    settings.FABRIC_NODE_AUTH = "required"
    for url in ("redis://central:pw@broker:6379/0", "rediss://central@broker:6379/0", "unix:///r.sock?username=c"):
        settings.REDIS_URL = url
        assert ours() == {}, url


def test_the_warnings_are_deploy_checks_only(settings):
    settings.FABRIC_NODE_AUTH, settings.REDIS_URL = "off", "redis://broker:6379/0"
    assert ours(include_deployment_checks=False) == {}
    assert set(ours()) == {NODE_AUTH_OFF, BROKER_DEFAULT_USER}


def test_the_broker_user_is_read_from_the_url():
    assert broker_user("redis://central:p%40ss@broker:6379/0") == "central"
    assert broker_user("redis://node.cn001@broker/0") == "node.cn001"
    assert broker_user("redis://:pw@broker/0") is None
    assert broker_user("redis://broker/0") is None


# -- the real settings module and manage.py, as a site runs them --------------------------------------------


def test_check_deploy_is_clean_with_node_auth_required_and_a_broker_user():
    done = manage("check", "--deploy", "--fail-level", "WARNING", **SECURED)
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_warns_without_node_auth_or_a_broker_user():
    done = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        **WITHOUT,
        FABRIC_NODE_AUTH="off",
        REDIS_URL="redis://broker:6379/0",
    )
    assert done.returncode != 0
    assert f"({NODE_AUTH_OFF}) Node authentication is off" in done.stderr
    assert f"({BROKER_DEFAULT_USER}) The broker URL (REDIS_URL) names no Redis user" in done.stderr
    # Django's own deploy checks pass with these variables: the two are the only issues.
    assert "System check identified 2 issues" in done.stderr
