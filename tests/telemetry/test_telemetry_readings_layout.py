"""Covers fabricweb/inventory/readings.py.

A node's counters row names each counter set's names once, not once a port; each port carries its values
in that order. Its ports' hw_counters are a column of their own, in the same form. A row written in an older
form (every set named in each entry; hw_counters in the counters column) is read as before.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import orjson

from fabricweb.inventory import readings
from fabricweb.inventory.models import Port

AT = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)
AT_US = 1_796_637_600_000_000
PAST_64_BITS = 295_147_905_179_352_825_856  # 2^68: allowed up to 4·(2^64-1), beyond orjson


def port(pk: int, counters: dict | None, hw: dict | None, ext: dict | None = None) -> Port:
    p = Port(pk=pk, number=pk)
    p.last_collected_at, p.counters, p.counters_ext, p.hw_counters = AT, counters, ext, hw
    return p


def test_a_nodes_counter_names_are_written_once_for_all_its_ports():
    ports = [
        port(11, {"symbol_error": 0, "port_xmit_data": 4096}, {"out_of_buffer": 2}),
        port(12, {"symbol_error": 3, "port_xmit_data": 8192}, {"out_of_buffer": 0, "rnr_nak_retry_err": 1}),
        port(13, None, {}),
    ]
    document = orjson.loads(readings.encode_counters(ports))
    assert document == {
        "names": [["symbol_error", "port_xmit_data"]],
        "ports": [
            [11, AT_US, [0, 0, 4096], None, None, None],
            [12, AT_US, [0, 3, 8192], None, None, None],
            [13, AT_US, None, None, None, None],
        ],
    }
    assert orjson.loads(readings.encode_hw(ports)) == {
        "names": [["out_of_buffer"], ["out_of_buffer", "rnr_nak_retry_err"], []],
        "ports": [[11, [0, 2]], [12, [1, 0, 1]], [13, [2]]],
    }


def test_it_reads_back_every_set_as_it_was_written():
    ports = [
        port(11, {"symbol_error": None, "port_xmit_data": 4096}, {"out_of_buffer": 2}, ext={"port_rcv_data": 7}),
        port(12, {}, None),
    ]
    counters, hw = readings.encode_counters(ports), readings.encode_hw(ports)
    assert list(readings.counters_of(counters, hw_column=hw)) == [
        (11, {"symbol_error": None, "port_xmit_data": 4096}, {"port_rcv_data": 7}, {"out_of_buffer": 2}, None),
        (12, {}, None, None, None),
    ]
    assert list(readings.counters_of(counters, hw=False, hw_column=hw)) == [  # not named when not asked for
        (11, {"symbol_error": None, "port_xmit_data": 4096}, {"port_rcv_data": 7}, None, None),
        (12, {}, None, None, None),
    ]
    decoded = readings.decode(counters, None, hw)
    assert decoded[11] == [AT, 1, {"symbol_error": None, "port_xmit_data": 4096}, {"port_rcv_data": 7},
                           {"out_of_buffer": 2}, []]  # fmt: skip


def test_a_port_missing_from_the_hw_counters_column_has_none_known():
    # (a port the node had not yet when its hw_counters were last written: never the case as ingest writes them)
    counters = readings.encode_counters([port(11, {"symbol_error": 0}, None), port(12, {"symbol_error": 1}, None)])
    hw = readings.encode_hw([port(11, {}, {"out_of_buffer": 4})])
    assert [(pk, hw_counters) for pk, _, _, hw_counters, _ in readings.counters_of(counters, hw_column=hw)] == [
        (11, {"out_of_buffer": 4}),
        (12, None),
    ]


def test_an_unreadable_hw_counters_column_costs_only_the_hw_counters(caplog):
    counters = readings.encode_counters([port(11, {"symbol_error": 2}, {"out_of_buffer": 4})])
    assert list(readings.counters_of(counters, hw_column=b"{not json")) == [(11, {"symbol_error": 2}, None, None, None)]
    assert readings.decode(counters, None, b'{"names": []}')[11][2:5] == [{"symbol_error": 2}, None, None]
    assert "its ports' hw_counters are unknown" in caplog.text


def test_a_row_whose_hw_counters_are_in_its_counters_column_is_read_as_before():
    written_before = orjson.dumps(
        {"names": [["symbol_error"], ["out_of_buffer"]], "ports": [[11, AT_US, [0, 5], None, [1, 2], None]]}
    )
    assert list(readings.counters_of(written_before)) == [(11, {"symbol_error": 5}, None, {"out_of_buffer": 2}, None)]
    assert readings.decode(written_before, None)[11][4] == {"out_of_buffer": 2}


def test_a_counter_past_64_bits_is_read_back_exactly():
    ports = [port(11, {"port_xmit_data": PAST_64_BITS}, {"rx_bytes": PAST_64_BITS})]
    counters, hw = readings.encode_counters(ports), readings.encode_hw(ports)
    assert counters.startswith(readings.BIG) and hw.startswith(readings.BIG)
    assert json.loads(counters)["ports"][0][2] == [0, PAST_64_BITS]
    assert list(readings.counters_of(counters, hw_column=hw)) == [
        (11, {"port_xmit_data": PAST_64_BITS}, None, {"rx_bytes": PAST_64_BITS}, None)
    ]


def test_a_row_of_the_older_named_form_is_read_as_before():
    older = orjson.dumps(
        [
            [11, AT_US, {"symbol_error": 5}, {}, {"out_of_buffer": 2}, [3, 10.0]],
            [12, None, {"symbol_error": 0}, None, {}],  # written before the wait was kept
        ]
    )
    assert list(readings.counters_of(older)) == [
        (11, {"symbol_error": 5}, {}, {"out_of_buffer": 2}, [3, 10.0]),
        (12, {"symbol_error": 0}, None, {}, None),
    ]
    assert readings.decode(older, None)[12] == [None, 1, {"symbol_error": 0}, None, {}, []]
