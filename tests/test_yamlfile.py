"""Covers fabricweb/yamlfile.py.

load() reads with libyaml where PyYAML has it, and with the pure-Python loader otherwise: both give the same
document, and refuse the same files with the same one-line error at the same mark, hostile files included."""

from __future__ import annotations

import pytest
import yaml

from fabricweb import yamlfile


def pure(text: str):
    return yaml.load(text, Loader=yamlfile._Bounded)


def outcome(read, text: str) -> tuple[str, object]:
    try:
        return "read", read(text)
    except yaml.YAMLError as e:
        return "refused", yamlfile.one_line(e)


TEXTS = [
    "links:\n  - leaf01 port 1 -- cn001 mlx5_0/1\n  - leaf01 port 2 -- cn002 mlx5_0/1\n",
    "policies:\n  - {name: cn-hdr, match: 'cn*', speed: HDR, width: 4X, order: 3, enabled: true}\n",
    "a: {b: [1, 2.5, null, ~, yes, '007', 2026-12-06]}\n",
    "",
    "links: [1, 2\n",
    "\tlinks: []\n",
    "a: &a [1]\nb: *a\n",
    "x: " + "[" * 31 + "1" + "]" * 31,  # the root mapping, 31 lists and the scalar: 33 levels
    "x: " + "[" * 30 + "1" + "]" * 30,  # 32: the most accepted
    "links: " + "[" * 100_000 + "]" * 100_000,  # past libyaml's own limit of nesting
    'a: &a ["lol","lol"]\nb: &b [*a,*a]\nlinks: [*b,*b]\n',
    "? [1, 2]\n: 3\n",  # a list as a key: refused when the mapping is made
]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="this PyYAML has no libyaml: load() is the pure loader")
@pytest.mark.parametrize("text", TEXTS)
def test_libyaml_and_the_pure_loader_read_and_refuse_alike(text):
    assert outcome(yamlfile.load, text) == outcome(pure, text)


def test_it_refuses_aliases_and_deep_nesting_where_they_start():
    assert outcome(yamlfile.load, "a: &a [1]\nb: *a\n") == (
        "refused",
        "aliases (*name) are not accepted, line 2 column 4",
    )
    deep = "links: " + "[" * 100_000 + "]" * 100_000
    assert outcome(yamlfile.load, deep) == ("refused", "nested deeper than 32 levels, line 1 column 39")
    assert outcome(yamlfile.load, "x: " + "[" * 30 + "1" + "]" * 30)[0] == "read"
