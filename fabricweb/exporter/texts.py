"""Texts of values for the exposition (encoder.py): what prometheus_client renders per sample, rendered
once or faster here, byte for byte its own (tests/exporter/test_exporter_memo.py, test_exporter_encoder.py)."""

from __future__ import annotations

import re

from prometheus_client.utils import floatToGoString

LEGACY_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def escape_value(value: str) -> str:
    """A label value as prometheus_client escapes it in both formats (openmetrics._escape, ALLOWUTF8)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


EXACT_INTS = 2**53  # below it, float(n) is n and repr(float(n)) is str(n) + ".0"


# Go's exponent of an int of n digits: `e+06` for 7 digits (looked up, not formatted, per value).
_EXPONENTS = {digits: f"e+{digits - 1:02d}" for digits in range(1, 17)}


def go_int_texts(values: list[int]) -> list[str]:
    """floatToGoString(n) for each int 0 <= n < EXACT_INTS: `n.0` up to 6 digits, else Go's
    exponent form of the shortest digits (1234567 -> 1.234567e+06, 1000000 -> 1e+06).
    Concatenation and a looked-up exponent: ~40% cheaper a value than an f-string with a format spec."""
    texts = []
    append = texts.append
    exponents = _EXPONENTS
    for text in map(str, values):
        digits = len(text)
        if digits <= 6:
            append(text + ".0")
            continue
        rest = text[1:].rstrip("0")
        append(text[0] + "." + rest + exponents[digits] if rest else text[0] + exponents[digits])
    return texts


class Values(dict):
    """floatToGoString of each value, rendered once per scrape.

    Only for ints and non-zero floats: equal ones of those print alike, but 0.0 == -0.0 == 0
    and -0.0 prints with its sign.
    """

    def __missing__(self, value: float) -> str:
        text = self[value] = floatToGoString(value)
        return text
