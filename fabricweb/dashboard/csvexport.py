"""Lists as CSV for a spreadsheet: every cell escaped by the csv module, and text that a spreadsheet would
run as a formula (a cell starting with = + - @, or a tab or carriage return before one) written with a
leading apostrophe, so a device's or an operator's text cannot become a formula on the NOC's desktop."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class _Echo:
    def write(self, value: str) -> str:
        return value


def cell(value) -> object:
    """What one cell holds: numbers as they are, None as empty, text guarded against formulas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def lines(header: list[str], rows: Iterable[Iterable[object]]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([cell(v) for v in row])


def response(filename: str, header: list[str], rows: Iterable[Iterable[object]]) -> StreamingHttpResponse:
    """Streamed: an export of 20,000 ports is not built in memory first."""
    out = StreamingHttpResponse(lines(header, rows), content_type="text/csv; charset=utf-8")
    out["Content-Disposition"] = f'attachment; filename="{filename}"'
    return out
