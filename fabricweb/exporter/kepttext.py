"""The text /metrics renders once and reuses across scrapes: fabricweb/exporter/encoder.py's, kept per process."""

from __future__ import annotations

import threading


class KeptText:
    """Text rendered once and reused across scrapes (docs/architecture.md, "What processes keep in memory"). Each
    dict starts afresh past its bound (encoder.MAX_CACHED_LABEL_SETS, MAX_KEPT_ROWS); keys are what the text is
    made of, so nothing in it goes stale."""

    def __init__(self) -> None:
        # A label set's items -> its text per format, by the format's slot: one string where formats agree.
        self.label_texts: dict[tuple, list[str | None]] = {}
        self.slots: dict[tuple, int] = {}  # Exposition.key -> its index in label_texts' lists
        self.slots_lock = threading.Lock()
        self.family_parts: dict[tuple, tuple[str, str]] = {}
        # Per format and KeyedFamily: a row key's serial (grouped.Memo) -> its lines (another format's if equal).
        self.row_lines: dict[tuple, dict[int, str]] = {}


KEPT = KeptText()
