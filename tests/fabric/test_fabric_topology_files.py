"""Covers collectors/mads/netfile.py, fabricweb/fabric/expected.py, fabricweb/fabric/naming.py.

Topology files: ibnetdiscover's output (recorded from an HDR/NDR fabric, which ibsim cannot simulate) and
fabricweb's YAML, read strictly; switch names from NodeDescriptions."""

from __future__ import annotations

import pytest

from collectors.mads import netfile
from fabricweb.fabric import expected, naming

# The shape `ibnetdiscover` prints on a real NDR/HDR fabric (rdma-core 44), two switches and two hosts.
RECORDED = """\
#
# Topology file: generated on Tue Nov 24 10:01:12 2026
#
# Initiated from node b8599f03000a1b2c port b8599f03000a1b2c

vendid=0x2c9
devid=0xd2f2
sysimgguid=0xb8599f03000a1b2c
switchguid=0xb8599f03000a1b2c(b8599f03000a1b2c)
Switch	64 "S-b8599f03000a1b2c"		# "MF0;leaf07:MQM9790-NS2F/U1" enhanced port 0 lid 3 lmc 0
[1]	"H-946dae0300c41e22"[1](946dae0300c41e22) 		# "cn042 mlx5_0" lid 42 4xNDR
[2]	"H-946dae0300c41e30"[1](946dae0300c41e30) 		# "cn043 mlx5_0" lid 43 2xNDR
[33]	"S-b8599f03000a9f00"[1]		# "MF0;spine01:MQM9790-NS2F/U1" lid 1 4xNDR

vendid=0x2c9
devid=0xd2f2
sysimgguid=0xb8599f03000a9f00
switchguid=0xb8599f03000a9f00(b8599f03000a9f00)
Switch	64 "S-b8599f03000a9f00"		# "MF0;spine01:MQM9790-NS2F/U1" enhanced port 0 lid 1 lmc 0
[1]	"S-b8599f03000a1b2c"[33]		# "MF0;leaf07:MQM9790-NS2F/U1" lid 3 4xNDR

vendid=0x2c9
devid=0x1021
sysimgguid=0x946dae0300c41e22
caguid=0x946dae0300c41e22
Ca	1 "H-946dae0300c41e22"		# "cn042 mlx5_0"
[1](946dae0300c41e22) 	"S-b8599f03000a1b2c"[1]		# lid 42 lmc 0 "MF0;leaf07:MQM9790-NS2F/U1" lid 3 4xNDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x946dae0300c41e30
caguid=0x946dae0300c41e30
Ca	1 "H-946dae0300c41e30"		# "cn043 mlx5_0"
[1](946dae0300c41e30) 	"S-b8599f03000a1b2c"[2]		# lid 43 lmc 0 "MF0;leaf07:MQM9790-NS2F/U1" lid 3 2xNDR
"""


def test_it_reads_a_recorded_ibnetdiscover_output_of_an_ndr_fabric():
    net = netfile.parse(RECORDED)
    leaf = net.nodes["S-b8599f03000a1b2c"]
    assert (leaf.kind, leaf.num_ports, leaf.guid, leaf.description) == (
        "switch", 64, 0xB8599F03000A1B2C, "MF0;leaf07:MQM9790-NS2F/U1",
    )  # fmt: skip
    assert leaf.ports[1].link == "4xNDR" and leaf.ports[2].link == "2xNDR"
    assert leaf.ports[1].remote_port_guid == 0x946DAE0300C41E22
    ends = {frozenset({(a.id, ap), (b.id, bp)}) for a, ap, b, bp in net.links()}
    assert ends == {
        frozenset({("S-b8599f03000a1b2c", 1), ("H-946dae0300c41e22", 1)}),
        frozenset({("S-b8599f03000a1b2c", 2), ("H-946dae0300c41e30", 1)}),
        frozenset({("S-b8599f03000a1b2c", 33), ("S-b8599f03000a9f00", 1)}),
    }


def test_an_expected_topology_from_ibnetdiscover_names_ends_by_guid_and_description():
    links = expected.parse(RECORDED)
    labels = sorted(f"{a.label} -- {b.label}" for a, b in links)
    assert labels == [
        "MF0;leaf07:MQM9790-NS2F/U1 port 1 -- cn042 mlx5_0 port 1",
        "MF0;leaf07:MQM9790-NS2F/U1 port 2 -- cn043 mlx5_0 port 1",
        "MF0;leaf07:MQM9790-NS2F/U1 port 33 -- MF0;spine01:MQM9790-NS2F/U1 port 1",
    ]
    a, _ = links[0]
    assert (a.node, a.device, a.port) == ("0xb8599f03000a1b2c", "", 1)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('Switch 4 "s1"\n[5] "s2"[1]\n', "line 2: port 5 of 's1', which has 4 ports"),
        ('Switch 4 "s1"\n[1] "s2"[1]\n', "'s1' port 1 is cabled to 's2', which the file does not describe"),
        ('Switch 4 "s1"\n[1] "s1"[2]\n[1] "s1"[3]\n', "line 3: port 1 of 's1' is cabled twice"),
        ('[1] "s2"[1]\n', "line 1: a port line outside a Switch or Ca record"),
        ('Switch 4 "s1"\nbanana\n', "line 2: not a topology line: 'banana'"),
        ('Switch 900 "s1"\n', "line 1: Switch 's1' with 900 ports (1 to 255)"),
    ],
)
def test_a_broken_topology_file_is_an_error_naming_its_line(text, error):
    with pytest.raises(netfile.NetFileError, match=error.replace("(", r"\(").replace(")", r"\)")):
        netfile.parse(text)


def test_the_yaml_form_names_switch_ports_host_ports_and_guids():
    links = expected.parse(
        "links:\n  - leaf01 port 1 -- cn001 mlx5_0/1\n  - leaf01 port 21 -- spine01 port 1\n"
        "  - 0xB8599F0000000102 port 3 -- nfs01 mlx5_0/1\n"
    )
    assert [(a.label, b.label) for a, b in links] == [
        ("leaf01 port 1", "cn001 mlx5_0/1"),
        ("leaf01 port 21", "spine01 port 1"),
        ("0xb8599f0000000102 port 3", "nfs01 mlx5_0/1"),
    ]
    assert (links[0][1].node, links[0][1].device, links[0][1].port) == ("cn001", "mlx5_0", 1)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("links:\n  - leaf01 port 1 cn001 mlx5_0/1\n", "link 1 ('leaf01 port 1 cn001 mlx5_0/1'): expected two ends"),
        ("links:\n  - leaf01 port 1 -- cn001\n", "link 1: 'cn001' is not an end"),
        ("links:\n  - leaf01 port 0 -- cn001 mlx5_0/1\n", "link 1: 'leaf01 port 0': port 0 is not a port number"),
        ("links:\n  - leaf01 port 1 -- leaf01 port 1\n", "both ends are the same port"),
        (
            "links:\n  - leaf01 port 1 -- cn001 mlx5_0/1\n  - leaf01 port 1 -- cn002 mlx5_0/1\n",
            "leaf01 port 1 is cabled twice in topology (cn001 mlx5_0/1 and leaf01 port 1)",
        ),
        ("cables: []\n", "unknown top-level key(s) cables: expected only 'links'"),
        ("links: [1, 2\n", "neither an ibnetdiscover topology nor valid YAML"),
        ("links:\n  - 7\n", "link 1: expected 'END -- END' as text, got 7"),
        # Hostile files: aliases that expand to gigabytes, nesting that overflows the stack, a huge item.
        (
            'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
            "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nlinks: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
            "valid YAML: aliases (*name) are not accepted, line 2 column 8",
        ),
        ("links: " + "[" * 100_000 + "]" * 100_000, "valid YAML: nested deeper than 32 levels, line 1 column 39"),
        (
            "links:\n  - " + "[" * 20 + "1, " * 200_000 + "]" * 20 + "\n",
            "link 1: expected 'END -- END' as text, got [[",
        ),
    ],
)
def test_a_broken_yaml_topology_is_an_error_naming_the_link(text, error):
    with pytest.raises(expected.TopologyError) as e:
        expected.parse(text)
    assert error in str(e.value)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300  # one short line, whatever the file


@pytest.mark.parametrize(
    ("description", "name"),
    [
        ("MF0;leaf07:MQM8790-HS2F/U1", "leaf07"),
        ("leaf07", "leaf07"),
        ("spine 01 rack B", "spine"),
        ("<script>alert(1)</script>", "script-alert-1-script"),
        ("", "sw-b8599f0300001234"),
        (None, "sw-b8599f0300001234"),
        ("MF0;;", "MF0"),
    ],
)
def test_a_switch_is_named_from_its_description(description, name):
    assert naming.switch_name(description, "0xb8599f0300001234", lambda n: False) == name


def test_a_name_already_taken_gets_the_guids_last_digits_then_the_guid():
    assert naming.switch_name("MF0;cn001:X/U1", "0xb8599f0300001234", {"cn001"}.__contains__) == "cn001-1234"
    taken = {"cn001", "cn001-1234"}.__contains__
    assert naming.switch_name("MF0;cn001:X/U1", "0xb8599f0300001234", taken) == "sw-b8599f0300001234"
