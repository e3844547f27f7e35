"""Covers collectors/link.py, fabricweb/health/records/context.py, fabricweb/health/rules/expectation.py.

The policy index the engine matches with (context.Policies) picks what expectation.match_policy picks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from collectors.link import make_rate
from fabricweb.health.records.context import Policies
from fabricweb.health.rules.expectation import LinkPolicy, baseline_policy, match_policy

NODES = ["*", "cn*", "cn001", "CN001", "cn00?", "cn00[12]", "[c]n001", "gpu*", "cn[*]1"]
DEVICES = ["*", "mlx5_*", "mlx5_0", "mlx4_0", "mlx5_[01]", "MLX5_1"]
PORTS = ["*", "1", "2", "[12]"]

policy = st.builds(
    lambda node, device, port, order: (node, device, port, order),
    st.sampled_from(NODES),
    st.sampled_from(DEVICES),
    st.sampled_from(PORTS),
    st.sampled_from([0, 50, 100]),
)


@given(st.lists(policy, max_size=12))
def test_the_index_matches_like_trying_every_policy_in_order(specs):
    policies = [LinkPolicy(f"p{i}", *spec[:3], order=spec[3]) for i, spec in enumerate(specs)]
    index = Policies.of(policies)
    for node in ("cn001", "cn002", "CN001", "gpu01", "cn*1"):
        for device in ("mlx5_0", "mlx5_1", "mlx4_0"):
            for port in (1, 2):
                assert index.match(node, device, port) == match_policy(policies, node, device, port)


def test_an_accepted_baseline_is_looked_up_by_name_not_tried_as_a_glob():
    base = baseline_policy("cn[7]", "mlx5_0", 1, make_rate("HDR", 4))
    index = Policies.of([base, LinkPolicy("site", "cn*", order=200)])
    assert index.exact and index.globs == (LinkPolicy("site", "cn*", order=200),)
    assert index.match("cn[7]", "mlx5_0", 1) is base
    assert index.match("cn7", "mlx5_0", 1).name == "site"
