"""JSON from the broker read with orjson, only where orjson reads exactly what `json` reads.

orjson is ~2x faster than json on a snapshot, but reads integers outside [-2^63, 2^64) as
floats, where json keeps them exact: any of 20 digits or more, and negative ones of 19. They
are found by making every digit a 0 and looking for those runs (~13 µs a snapshot; a regex
took ~120). What orjson refuses (NaN, lone surrogates...) is left to the caller's json too.
Used for message bodies (messages.decode_body) and the signed snapshot texts inside them (json_text_loads);
redisread reads the envelopes, which hold no float, with a cheaper rule of its own.
"""

from __future__ import annotations

import json

import orjson

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TWENTY_DIGITS = b"0" * 20
_NEGATIVE_NINETEEN_DIGITS = b"-" + b"0" * 19


class NotExact(ValueError):
    """orjson would refuse these bytes or might read them differently from json: read them with json."""


def exact_loads(data: bytes) -> object:
    """`data` decoded as json.loads decodes it, with orjson; NotExact where only json can say."""
    digits = data.translate(_DIGITS_AS_ZERO)
    if _TWENTY_DIGITS in digits or _NEGATIVE_NINETEEN_DIGITS in digits:
        raise NotExact("an integer orjson would read as a float")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise NotExact("refused by orjson") from None


def json_text_loads(text: str) -> object:
    """json.loads(text), read by orjson where it reads the same (a signed snapshot's text: half the time)."""
    try:
        return exact_loads(text.encode())
    except (NotExact, UnicodeEncodeError):  # (a lone surrogate: json's to refuse or read)
        return json.loads(text)
