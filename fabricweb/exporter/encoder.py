"""The exposition of FabricCollector's families, byte for byte what prometheus_client's encoder gives, faster.

prometheus_client's generate_latest renders every sample from scratch: each label name is
validated and escaped and each value escaped, for every one of the ~1.1 million samples of
20,000 ports (~8 µs each). Here every piece of text but the values is still rendered by
the negotiated prometheus_client encoder itself, once, and reused:

- a family's HELP/TYPE lines: the encoder's output for the family without samples;
- a family's sample name: the encoder's line for a sample without labels, cut before the value;
- a label set: the encoder's line for a probe sample with those labels, cut after the name
  and before the value; where a probe with empty values shows the encoder writes the names as
  they are, composed here (names sorted, values escaped as prometheus_client does). A port's
  labels are one dict shared by all its rows, rendered once per scrape, and cached across
  scrapes keyed by their content (a renamed node or a changed link is another key; nothing can
  go stale, the cache is only bounded);
- a row with an extra label that sorts before all the others (`counter` of hw_stat):
  `{counter="x",` + the port's label text. The encoder sorts label names and joins them with
  commas, so that concatenation is its own output;
- values: prometheus_client.utils.floatToGoString, memoised per scrape (ints and non-zero
  floats: -0.0 == 0.0 but prints otherwise); a column of mostly distinct counts (traffic,
  packets) by go_int_texts, floatToGoString's own result for an int below 2**53 built from
  str(n), about 4x cheaper a value.

- the rows of a KeyedFamily (the health series: grouped.py): each row's lines are kept across
  scrapes by the serial of the row's key, which is exactly what they are made of, so a family's body
  is one join over its rows' kept lines; rows not kept yet are rendered as above.

Each family's first row is also rendered by prometheus_client and compared with the composed
line; a family where they differ is rendered by prometheus_client entirely. The tests compare
whole expositions with generate_latest (both formats, hostile label values).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from .kepttext import KEPT
from .series import Family, KeyedFamily
from .texts import EXACT_INTS, LEGACY_NAME, Values, escape_value, go_int_texts

log = logging.getLogger(__name__)

Encoder = Callable[..., bytes]  # what prometheus_client.exposition.choose_encoder returns
PROBE = "probe"  # the sample name label sets are rendered with (a valid legacy name)
ZERO = " " + floatToGoString(0.0)  # the value part of a probe line
# Label texts kept across scrapes: about 4 label sets a port (port, port_info, its device's two).
MAX_CACHED_LABEL_SETS = 400_000
# Lines rendered and encoded at a time: hw_stat alone is ~480,000 lines at 20,000 ports.
LINES_PER_WRITE = 50_000
CHUNK_BYTES = 1 << 20  # what encode_chunks gathers before handing it on (a socket write, in a server)
# Rows' lines kept per KeyedFamily and format (grouped.MAX_MEMO_ROWS rows): past it, afresh.
MAX_KEPT_ROWS = 200_000


class _Registry:
    """What an encoder iterates: these metrics."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> list[Metric]:
        return self.metrics


class Exposition:
    """One negotiated format (prometheus_client's encoder, its escaping and version) and its pieces."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        if isinstance(encoder, partial):
            self.key = (encoder.func, encoder.args, tuple(sorted(encoder.keywords.items())))
        else:
            self.key = (encoder,)
        self.trailer = self.render([])  # `# EOF` in OpenMetrics, nothing in the text format
        self._plain_names: dict[tuple[str, ...], bool] = {}

    def render(self, metrics: list[Metric]) -> str:
        return self.encoder(_Registry(metrics)).decode("utf-8")

    def header(self, metric: Metric) -> str:
        """The HELP/TYPE lines of `metric`: its exposition without samples and the trailer."""
        body = self.render([Metric(metric.name, metric.documentation, metric.type)])
        return body[: len(body) - len(self.trailer)]

    def sample_lines(self, metric: Metric) -> list[str]:
        """The encoder's lines for `metric`'s samples, without its header and the trailer."""
        header = self.header(metric)
        body = self.render([metric])
        if not body.startswith(header) or not body.endswith(self.trailer):
            raise ValueError(f"{metric.name}: unexpected layout")
        middle = body[len(header) : len(body) - len(self.trailer)]
        # Not splitlines(): label values may hold \r or \u2028; only \n ends a line (values have it escaped).
        return [line + "\n" for line in middle.split("\n")[:-1]]

    def label_texts(self, label_sets: list[dict[str, str]]) -> list[str]:
        """`{name="value",...}` as the encoder renders each label set ('' for none).

        Label sets whose names the encoder writes as they are (legacy names, most escapings: one probe
        per set of names says so) are composed here: the names sorted, each value with prometheus_client's
        escaping of label values (backslash, newline, double quote), the same in every format and
        escaping. A fresh process renders ~60,000 label sets at 20,000 ports: through the probe they were
        most of its first scrape. The others go through the probe."""
        texts: list[str | None] = [None] * len(label_sets)
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, labels in enumerate(label_sets):
            groups.setdefault(tuple(sorted(labels)), []).append(i)
        slow = []
        for names, indexes in groups.items():
            if not names or not self._names_as_they_are(names):
                slow.extend(indexes)
                continue
            heads = [f'{name}="' for name in names]
            for i in indexes:
                labels = label_sets[i]
                texts[i] = (
                    "{"
                    + ",".join([head + escape_value(labels[n]) + '"' for head, n in zip(heads, names, strict=True)])
                    + "}"
                )
        if slow:
            for i, text in zip(slow, self._probe_texts([label_sets[i] for i in slow]), strict=True):
                texts[i] = text
        return texts

    def _names_as_they_are(self, names: tuple[str, ...]) -> bool:
        """Whether the encoder writes these label names (sorted) as they are: a probe with empty values."""
        known = self._plain_names.get(names)
        if known is None:
            known = all(map(LEGACY_NAME.fullmatch, names)) and self._probe_texts([dict.fromkeys(names, "")]) == [
                "{" + ",".join(f'{name}=""' for name in names) + "}"
            ]
            self._plain_names[names] = known
        return known

    def _probe_texts(self, label_sets: list[dict[str, str]]) -> list[str]:
        probe = Metric(PROBE, "", "gauge")
        probe.samples = [Sample(PROBE, {}, 0.0)] + [Sample(PROBE, labels, 0.0) for labels in label_sets]
        first, *lines = self.sample_lines(probe)
        name = first.removesuffix(ZERO + "\n")
        texts = []
        for line in lines:
            if not (line.startswith(name) and line.endswith(ZERO + "\n")):
                raise ValueError(f"unexpected probe line {line!r}")
            texts.append(line[len(name) : -len(ZERO) - 1])
        return texts

    def family_parts(self, family: Family) -> tuple[str, str]:
        """(HELP/TYPE lines, sample name as rendered) of `family`."""
        key = (self.key, family.name, family.help, family.type, family.sample_name)
        parts = KEPT.family_parts.get(key)
        if parts is None:
            metric = Metric(family.name, family.help, family.type)
            header = self.header(metric)
            metric.samples = [Sample(family.sample_name, {}, 0.0)]
            (line,) = self.sample_lines(metric)
            parts = KEPT.family_parts[key] = (header, line.removesuffix(ZERO + "\n"))
        return parts


class _Scrape:
    """The label texts of one scrape (each followed by the space before the value), by the id of the label dict.

    An id is unique only while its object lives: every dict (and labels column) looked up by
    id is kept until the scrape ends.
    """

    def __init__(self, exposition: Exposition) -> None:
        self.exposition = exposition
        self.by_id: dict[int, str] = {}
        # Per extra label name: id of a label dict -> its text after `{`, for dicts whose
        # names all sort after the extra one.
        self.tails: dict[str, dict[int, str]] = {}
        self.columns: dict[int, list[str]] = {}  # id of a labels column -> its label texts
        self.alive: list[object] = []
        self.memo = Values()
        with KEPT.slots_lock:  # two threads must not give two formats one slot
            self.slot = KEPT.slots.setdefault(exposition.key, len(KEPT.slots))
        self.unkept: dict[int, tuple[tuple, str]] = {}  # rendered by learn(keep=False): id -> key, text

    def learn(self, label_sets: Iterable[dict[str, str]], keep: bool = True) -> None:
        """Render (or find in the cache) the texts of `label_sets` not seen yet in this scrape;
        with `keep`, put those rendered in the cache for later scrapes."""
        by_id = self.by_id
        missing: dict[int, dict[str, str]] = {}
        keys: dict[int, tuple] = {}
        slot = self.slot
        for labels in {id(labels): labels for labels in label_sets}.values():
            ident = id(labels)
            if ident in by_id:
                if keep and ident in self.unkept:  # a port's labels: its health lines first, then its counters
                    self._cache(*self.unkept.pop(ident))
                continue
            self.alive.append(labels)
            key = keys[ident] = tuple(labels.items())
            texts = KEPT.label_texts.get(key)
            text = texts[slot] if texts is not None and slot < len(texts) else None
            if text is None:
                missing[ident] = labels
            else:
                by_id[ident] = text
        if not missing:
            return
        rendered = self.exposition.label_texts(list(missing.values()))
        for ident, text in zip(missing, rendered, strict=True):
            text += " "  # the space before the value
            if keep:
                by_id[ident] = self._cache(keys[ident], text)
            else:
                by_id[ident] = text
                self.unkept[ident] = (keys[ident], text)

    def _cache(self, key: tuple, text: str) -> str:
        """Keep `text` as this format's for the label set `key`; returns it, or the equal string
        another format keeps (one copy for both)."""
        texts = KEPT.label_texts.get(key)
        if texts is None:
            if len(KEPT.label_texts) >= MAX_CACHED_LABEL_SETS:
                KEPT.label_texts.clear()
            texts = KEPT.label_texts[key] = [None] * len(KEPT.slots)
        elif len(texts) < len(KEPT.slots):
            texts.extend([None] * (len(KEPT.slots) - len(texts)))
        texts[self.slot] = next((t for t in texts if t == text), text)
        return texts[self.slot]

    def values(self, values: list[float]) -> list[str]:
        """floatToGoString of each value; memoised where that is safe (see Values)."""
        memo = self.memo
        types = set(map(type, values))
        if types == {int} and min(values) >= 0 and max(values) < EXACT_INTS and len(set(values)) > len(values) // 4:
            return go_int_texts(values)
        if types <= {int} or (types <= {int, float} and 0 not in values):  # `in` is ==: -0.0 too
            return list(map(memo.__getitem__, values))
        return [memo[v] if type(v) is int or (v and type(v) is float) else floatToGoString(v) for v in values]

    def text(self, family: Family, name: str, keep: bool = True) -> str:
        """The sample lines of `family`, `name` being its sample name as rendered: for each
        sample `name`, its label text and a space (by_id), its value, a newline. `keep`: as learn's."""
        if not len(family):
            return ""
        labels = family.labels
        if family.extra is None:
            for attempt in range(2):
                try:
                    # The counter families of the ports share one labels column: look it up once.
                    texts = self.columns.get(id(labels))
                    if texts is None:
                        if keep and self.unkept:  # labels the health lines rendered: cache them now
                            self.learn(labels)
                        texts = list(map(self.by_id.__getitem__, map(id, labels)))
                        self.columns[id(labels)] = texts
                        self.alive.append(labels)
                    return _lines(name, texts, self.values(family.values))
                except KeyError:  # label sets not seen yet in this scrape
                    if attempt:
                        raise
                self.learn(labels, keep)
        extra, extras = family.extra, family.extras
        pieces = [{extra: value} for value in set(extras)]
        self.learn(pieces, keep)
        heads = {piece[extra]: self.by_id[id(piece)][:-2] + "," for piece in pieces}  # `{counter="x",`
        tails = self.tails.setdefault(extra, {})  # a label set's text after its `{`
        for attempt in range(2):
            try:
                texts = list(map(tails.__getitem__, map(id, labels)))
                return _lines(name, list(map(heads.__getitem__, extras)), texts, self.values(family.values))
            except KeyError:
                if attempt:
                    break  # a label set with a name that sorts before the extra one
            unique = dict(zip(map(id, labels), labels, strict=True))
            self.learn(unique.values(), keep)
            for ident, ls in unique.items():
                if ident not in tails and ls and extra < min(ls):
                    tails[ident] = self.by_id[ident][1:]
        lines = []
        for ls, e, v in zip(labels, extras, self.values(family.values), strict=True):
            tail = tails.get(id(ls))
            if tail is None:  # the extra label sorts among the others: render the merged set
                merged = {**ls, extra: e}
                self.learn((merged,), keep)
                lines.append(f"{name}{self.by_id[id(merged)]}{v}\n")
            else:
                lines.append(f"{name}{heads[e]}{tail}{v}\n")
        return "".join(lines)

    def keyed_text(self, family: KeyedFamily, name: str) -> str:
        """The sample lines of `family`: its rows' kept lines, those not kept yet rendered by text()."""
        identity = (family.name, family.help, family.type, family.extra)
        kept = KEPT.row_lines.setdefault((self.exposition.key, *identity), {})
        keys = family.keys
        try:
            return "".join(map(kept.__getitem__, keys))
        except KeyError:
            pass
        # A snapshot: another scrape may start the kept lines afresh meanwhile.
        found = {key: kept.get(key) for key in keys}
        missing = [key for key, lines in found.items() if lines is None]
        if len(kept) + len(missing) > MAX_KEPT_ROWS:
            kept.clear()
        twins = [lines for k, lines in KEPT.row_lines.items() if k[1:] == identity and lines is not kept]
        plain = family.expand(missing)
        # Their label texts are not cached for later scrapes (port_info's alone were ~20 MB a format at 20,000
        # ports): the lines are; the label sets the counter families reuse are cached when they meet them.
        lines = self.text(plain, name, keep=False).split("\n")
        start = 0
        for key in missing:
            stop = start + len(family.groups[key][family.name])
            found[key] = kept[key] = _keep("\n".join(lines[start:stop]) + "\n", key, twins)
            start = stop
        # Not kept joined across scrapes: the health families' 14 MB at 20,000 ports would add as much to the
        # peak RSS of every scrape, for 18 ms of a health scrape's 84 (BENCHMARKS.md).
        return "".join(map(found.__getitem__, keys))


def _keep(text: str, key: int, twins: list[dict[int, str]]) -> str:
    """`text`, or the equal string another format keeps for the same row: one copy for both."""
    for twin in twins:
        other = twin.get(key)
        if other == text:
            return other
    return text


def _lines(name: str, *columns: list[str]) -> str:
    """`name` + the columns' i-th items + a newline, for each i: one join over the interleaved
    columns, no string built per sample."""
    n, k = len(columns[0]), len(columns) + 1
    parts: list[str | None] = [None] * (n * k)
    for j, column in enumerate(columns):
        parts[j::k] = column  # a column of the wrong length raises here
    parts[k - 1 :: k] = ["\n" + name] * n
    parts[-1] = "\n"
    return name + "".join(parts)


def encode(families: Iterable[Family], encoder: Encoder) -> bytes:
    """The exposition of `families` in `encoder`'s format: encoder(registry of to_metric()), faster."""
    return b"".join(encode_chunks(families, encoder))


def encode_chunks(families: Iterable[Family], encoder: Encoder) -> Iterator[bytes]:
    """encode()'s bytes in chunks of about CHUNK_BYTES, rendered as they are asked for: a streamed
    response never holds the whole body (~110 MB at 20,000 ports, most of a full scrape's peak)."""
    buffer = io.BytesIO()
    for text in _texts(families, Exposition(encoder)):
        buffer.write(text.encode("utf-8"))
        if buffer.tell() >= CHUNK_BYTES:
            yield buffer.getvalue()
            buffer = io.BytesIO()
    yield buffer.getvalue()


def _texts(families: Iterable[Family], exposition: Exposition) -> Iterator[str]:
    scrape = _Scrape(exposition)
    for family in families:
        header, name = exposition.family_parts(family)
        if isinstance(family, KeyedFamily):
            yield from _keyed_texts(exposition, scrape, family, header, name)
            continue
        if len(family):
            first = scrape.text(family.head(1), name)
            if exposition.render([family.head(1).to_metric()]) != header + first + exposition.trailer:
                log.warning("%s: composed line differs from prometheus_client's, rendering it there", family.name)
                yield exposition.render([family.to_metric()])[: -len(exposition.trailer) or None]
                continue
        yield header
        for start in range(0, len(family), LINES_PER_WRITE):
            part = family.head(start + LINES_PER_WRITE, start) if len(family) > LINES_PER_WRITE else family
            yield scrape.text(part, name)
    yield exposition.trailer


def _keyed_texts(exposition: Exposition, scrape: _Scrape, family: KeyedFamily, header: str, name: str) -> Iterator[str]:
    text = scrape.keyed_text(family, name) if len(family) else ""
    if text:
        first = family.expand(family.keys[:1]).head(1)
        if exposition.render([first.to_metric()]) != header + text[: text.index("\n") + 1] + exposition.trailer:
            log.warning("%s: composed line differs from prometheus_client's, rendering it there", family.name)
            yield exposition.render([family.to_metric()])[: -len(exposition.trailer) or None]
            return
    yield header
    yield text
