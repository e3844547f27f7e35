"""The consumer decodes message bodies with orjson only where it reads exactly what kombu reads."""

from __future__ import annotations

import json
import math

import pytest
from kombu.exceptions import DecodeError
from kombu.message import Message
from support import T0, snapshot

from fabricweb.telemetry.consumer import decode_body

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
