"""Bounded reading of the JSON and XML files objrel parses (annotations, manifests, results).

Each file is held to a size limit, checked before a byte is read, and to ``MAX_NESTING_DEPTH``, checked
before it is parsed: Python's ``json`` recurses once per nesting level and fails with ``RecursionError`` on
a few hundred kilobytes of ``[[[[...``, and no format objrel reads needs more than a handful of levels.  The
JSON depth comes from one linear pass over the bytes (string-aware, vectorised in chunks); XML is parsed
incrementally and stopped at the first element too deep.  Every refusal is one ``InputFileError`` line
naming the file as the caller does (``what``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from objrel.constants import MAX_NESTING_DEPTH
from objrel.errors import InputFileError

# Bytes the JSON depth scan handles at once (its int32 work arrays take about 8 bytes per input byte).
SCAN_CHUNK_BYTES = 8 * 2**20
# XML bytes handed to the incremental parser at once.
XML_FEED_BYTES = 2**16
MIB = 2**20

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENERS = (ord("["), ord("{"))
_CLOSERS = (ord("]"), ord("}"))


def _size_text(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n} bytes"


def _real_quotes(b: np.ndarray, quotes: np.ndarray, carried_backslashes: int) -> np.ndarray:
    """The quotes of ``b`` not escaped: an escaped quote has an odd run of backslashes right before it (a run
    may begin in the previous chunk: ``carried_backslashes``)."""
    prev = np.empty(quotes.size, dtype=np.uint8)
    prev[quotes > 0] = b[quotes[quotes > 0] - 1]
    if quotes.size and quotes[0] == 0:
        prev[0] = _BACKSLASH if carried_backslashes else 0
    if not (prev == _BACKSLASH).any():
        return quotes
    idx = np.arange(b.size, dtype=np.int64)
    last_other = np.maximum.accumulate(np.where(b != _BACKSLASH, idx, -1 - carried_backslashes))
    before = np.concatenate(([-1 - carried_backslashes], last_other[:-1]))
    run = quotes - 1 - before[quotes]
    return quotes[(run & 1) == 0]


def nesting_depth(raw: bytes, stop_above: int | None = None) -> int:
    """Deepest nesting of ``[``/``{`` in the JSON text ``raw``, brackets inside strings not counted.

    Linear in ``len(raw)``.  For valid JSON (and for every valid prefix of an invalid file, which is as far
    as a parser gets) this is exactly the depth a parser reaches.  ``stop_above``: return as soon as the
    depth exceeds it.
    """
    depth, deepest, inside, carried = 0, 0, False, 0
    for start in range(0, len(raw), SCAN_CHUNK_BYTES):
        b = np.frombuffer(raw, dtype=np.uint8, count=min(SCAN_CHUNK_BYTES, len(raw) - start), offset=start)
        real = _real_quotes(b, np.flatnonzero(b == _QUOTE), carried)
        opens = (b == _OPENERS[0]) | (b == _OPENERS[1])
        brackets = np.flatnonzero(opens | (b == _CLOSERS[0]) | (b == _CLOSERS[1]))
        # A bracket lies inside a string when an odd number of real quotes precede it (plus the carry).
        outside = (np.searchsorted(real, brackets) & 1) == (1 if inside else 0)
        brackets = brackets[outside]
        if brackets.size:
            levels = np.cumsum(np.where(opens[brackets], 1, -1), dtype=np.int64) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        inside = inside != bool(real.size & 1)
        others = np.flatnonzero(b[-min(b.size, 64):] != _BACKSLASH)   # usually the last byte is no backslash
        if others.size:
            carried = min(b.size, 64) - 1 - int(others[-1])
        else:
            others = np.flatnonzero(b != _BACKSLASH)
            carried = b.size - 1 - int(others[-1]) if others.size else carried + b.size
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def read_limited(source, what: str, max_bytes: int) -> bytes:
    """The bytes of ``source`` (a path, or the file's bytes themselves), refused above ``max_bytes`` before
    they are read.  ``what`` names the file in messages (``"annotation file x.json"``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    else:
        p = Path(source)
        try:
            size = p.stat().st_size
        except FileNotFoundError as exc:
            raise InputFileError(f"{what} does not exist") from exc
        except OSError as exc:
            raise InputFileError(f"cannot read {what}: {type(exc).__name__}") from exc
        if not p.is_file():
            raise InputFileError(f"{what} is not a file")
        if size > max_bytes:
            raise InputFileError(f"{what} is {_size_text(size)}; at most {_size_text(max_bytes)} is read")
        with open(p, "rb") as fh:   # read what stat said (+1 to see growth): read(n) reserves n bytes up front
            raw = fh.read(size + 1)
    if len(raw) > max_bytes:
        raise InputFileError(f"{what} is {_size_text(len(raw))}; at most {_size_text(max_bytes)} is read")
    return raw


def check_json_depth(raw: bytes, what: str, limit: int = MAX_NESTING_DEPTH) -> None:
    """Refuse JSON text nested more than ``limit`` levels deep, before it is parsed."""
    depth = nesting_depth(raw, stop_above=limit)
    if depth > limit:
        raise InputFileError(f"{what} nests arrays/objects more than {limit} levels deep; at most {limit} "
                             f"are accepted")


def parse_json(source, what: str, max_bytes: int, limit: int = MAX_NESTING_DEPTH):
    """Parse the JSON of ``source`` (a path, or the file's bytes) within ``max_bytes`` and ``limit`` levels.

    Raises ``InputFileError`` (an ``AnnotationError`` and a ``ValueError``) when the file is missing, too
    large, too deep, not UTF-8 or not JSON; the message is one line.
    """
    raw = read_limited(source, what, max_bytes)
    check_json_depth(raw, what, limit)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{what} is not valid JSON: expected UTF-8 text, found {exc.reason} at byte "
                             f"{exc.start}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{what} is not valid JSON: {exc}") from exc
    except RecursionError as exc:   # unreachable after the depth check; kept so no traceback can escape
        raise InputFileError(f"{what} nests too deeply to parse") from exc


def parse_xml(source, what: str, max_bytes: int, limit: int = MAX_NESTING_DEPTH):
    """The root element of the XML ``source`` (a path or the bytes) within ``max_bytes`` and ``limit`` levels.

    Entity declarations are refused (no annotation format uses them; expanded entities are a classic
    memory bomb).  Raises ``InputFileError`` for a file too large, too deep or with entities, and
    ``xml.etree.ElementTree.ParseError`` for XML that is not well formed.
    """
    import xml.etree.ElementTree as ET

    raw = read_limited(source, what, max_bytes)
    if b"<!ENTITY" in raw:
        raise InputFileError(f"{what} declares XML entities; annotation files are plain XML without a DTD")
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    depth, root = 0, None
    for start in range(0, len(raw), XML_FEED_BYTES):
        parser.feed(raw[start:start + XML_FEED_BYTES])
        for event, elem in parser.read_events():  # type: ignore[misc]  # typeshed: 1-tuples are other events
            if event == "start":
                depth += 1
                if root is None:
                    root = elem
                if depth > limit:
                    raise InputFileError(f"{what} nests elements more than {limit} levels deep; at most {limit} "
                                         f"are accepted")
            else:
                depth -= 1
    parser.close()
    for event, elem in parser.read_events():  # type: ignore[misc]  # typeshed: 1-tuples are other events
        if event == "start" and root is None:
            root = elem
    if root is None:
        raise ET.ParseError(f"{what} holds no XML element")
    return root
