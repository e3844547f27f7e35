"""Covers fabricweb/telemetry/intake/envelopes.py, fabricweb/telemetry/intake/jsonread.py,
fabricweb/telemetry/intake/messages.py.

The consumer decodes message bodies (and redisread their envelopes) with orjson only where it reads exactly what
kombu (json) reads."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kombu.exceptions import DecodeError
from kombu.message import Message

from fabricweb.telemetry.intake import envelopes
from fabricweb.telemetry.intake.jsonread import NotExact, exact_loads, json_text_loads
from fabricweb.telemetry.intake.messages import decode_body
from tests.telemetry.telemetry_support import T0, snapshot

EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def message(text: str) -> Message:
    return Message(
        body=text.encode(), content_type="application/json", content_encoding="utf-8", accept=["application/json"]
    )


def body_of(snap: dict) -> str:
    return json.dumps([[snap], {}, EMBED])


@pytest.mark.parametrize(
    "text",
    [
        body_of(snapshot(at=T0)),
        body_of({"counters": {"port_xmit_data": 4 * 2**64 - 1, "symbol_error": 2**64, "x": 2**64 - 1}}),
        '[[{"a": -12345678901234567890123, "b": 1e400}], {}, {}]',
        '[[{"host": "\\ud800"}], {}, {}]',  # a lone surrogate: orjson refuses it, json reads it
        '[[{"a": -9223372036854775809, "b": -9999999999999999999}], {}, {}]',  # 19 digits, below -2^63
    ],
    ids=["snapshot", "counters past 64 bits", "huge negative", "lone surrogate", "negative past 64 bits"],
)
def test_it_decodes_every_body_as_kombu_does(text):
    got, expected = decode_body(message(text)), message(text).decode()
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # same types too: an int stays an int


def test_nan_is_read_as_kombu_reads_it():
    (args, _, _) = decode_body(message('[[{"x": NaN}], {}, {}]'))
    assert math.isnan(args[0]["x"])


def test_a_body_that_is_not_json_raises_as_kombu_does():
    with pytest.raises(DecodeError):
        decode_body(message("[[{"))


# -- jsonread.exact_loads: what json.loads reads, or NotExact ----------------------------------

NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, 4 * (2**64 - 1), -(10**18)]),
    st.floats(allow_nan=False, allow_infinity=False),
)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
ODD_TEXTS = st.sampled_from(
    ["[NaN]", '{"a": Infinity}', "1e400", '["\\ud800"]', '{"a": 1, "a": 2}', "\ufeff[1]", "[1]x", "", '"\\u0000"']
)


@given(text=st.one_of(VALUES.map(json.dumps), ODD_TEXTS))
def test_exact_loads_reads_what_json_reads_or_leaves_it_to_json(text):
    data = text.encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            exact_loads(data)
        return
    try:
        got = exact_loads(data)
    except NotExact:
        return  # the caller reads it with json
    assert repr(got) == repr(expected)  # the same values of the same types: no integer turned float


@given(text=st.one_of(VALUES.map(json.dumps), ODD_TEXTS, st.just('["\ud800"]')))
def test_a_signed_text_reads_as_json_reads_it(text):
    try:
        expected = json.loads(text)
    except ValueError as e:
        with pytest.raises(type(e)):
            json_text_loads(text)
        return
    assert repr(json_text_loads(text)) == repr(expected)  # big integers and NaN included, through json


def test_exact_loads_leaves_integers_past_64_bits_to_json():
    for text in ("[18446744073709551616]", "[-9223372036854775809]", '{"x": 36893488147419103228}'):
        with pytest.raises(NotExact):
            exact_loads(text.encode())
    # 19 digits (18 negative) are read by orjson, as integers
    assert (
        repr(exact_loads(b"[9999999999999999999, -999999999999999999]")) == "[9999999999999999999, -999999999999999999]"
    )


@given(value=VALUES, headers=VALUES)
def test_an_envelope_reads_as_json_reads_it(value, headers):
    text = json.dumps({"body": "W1tdLCB7fSwge31d", "headers": {"x": headers}, "properties": {"v": value}})
    assert repr(envelopes.envelope(text.encode())) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": "\\ud800"}', '{"h": {"n": 36893488147419103228}}', "{"])
def test_an_envelope_orjson_reads_otherwise_is_read_by_json(text):
    try:
        expected = repr(json.loads(text))
    except ValueError:
        with pytest.raises(ValueError):
            envelopes.envelope(text.encode())
        return
    assert repr(envelopes.envelope(text.encode())) == expected


@given(body=st.binary(max_size=200), encoding=st.sampled_from(["base64", None, "utf-8"]))
def test_a_taken_messages_body_is_the_bytes_kombu_would_give(body, encoding):
    """kombu's Redis transport writes a body plain (kombu's JSON of bytes: text, or base64 when not UTF-8)
    or in base64 by its body_encoding; what the batch reader reads is what kombu's own consumer reads."""
    from kombu.transport.virtual.base import Channel
    from kombu.utils.json import dumps, loads

    encoded, named = Channel.encode_body(Channel.__new__(Channel), body, encoding)
    raw = dumps({"body": encoded, "properties": {"body_encoding": named}}).encode()
    envelope = envelopes.envelope(raw)
    kombus = Channel.decode_body(Channel.__new__(Channel), loads(raw)["body"], named)
    assert envelopes.body_of(envelope["body"], named) == kombus == body


def test_a_body_in_a_form_kombu_does_not_write_is_left_for_the_consumer_to_refuse():
    assert envelopes.body_of({"__type__": "pickle", "__value__": "x"}, None) == {"__type__": "pickle", "__value__": "x"}
    assert envelopes.body_of("{not base64}", "base64") == "{not base64}"
    assert envelopes.body_of(None, None) == b""
