"""Results computed once per state of the runs they read, kept in the store and in the process.

A page that shows a run's headline, its per-label or size tables or a statistic over several runs would
otherwise read every sample of those runs on every view (a million rows at the scale of ImageNet's or COCO's
papers).  ``@kept`` wraps such a function: the first call for a state of its runs computes it and stores the
result as JSON in ``run_summaries`` (``objrel.store.summaries``); later calls, in this process or any other
server of the store, read that one row, or this process's copy of it.

The **stamp** of a run is its status, its counts of samples done and tested, and the highest sample row id it has:
the engine only ever adds rows to a run (a resumed run adds the samples it had left), so a new stamp means new
results and an old stamp means nothing changed. While a run is running its stamp moves with every batch; a result
that took long to compute is then reused for a while (``LIVE_REUSE_S``, or ``LIVE_REUSE_FACTOR`` times its cost,
whichever is longer) instead of being computed again on every view.

Results are encoded as JSON with tags for what JSON lacks (tuples, sets, non-finite floats, pandas frames and
series, numpy values, objrel's frozen dataclasses), and decoded again on every call, so a caller may change what
it gets without touching the kept copy.  A result larger than ``MAX_KEPT_CHARS`` is returned but not kept.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import importlib
import inspect
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from objrel.errors import StoreBusy
from objrel.store import Store
from objrel.store import schema as S
from objrel.store import summaries

# A running run's result is reused for at least this long (seconds) after it was computed ...
LIVE_REUSE_S = 10.0
# ... or this many times what computing it took, whichever is longer; results cheaper than LIVE_CHEAP_S (a
# running run's few new samples merged in) are reused for LIVE_FRESH_S only, so a page shows a run's progress
# without every view of every visitor writing to the store.
LIVE_REUSE_FACTOR = 5.0
LIVE_CHEAP_S = 0.5
LIVE_FRESH_S = 2.0
# The encoding of kept results: part of every result's name, so results of another encoding are not read back.
KEPT_FORMAT = 1
# Sample row ids a mergeable result is computed over at a time when it is computed over a whole run.
SLICE_ROWS = 100_000
# The stamp's status of a run that is not in the store.
GONE = "gone"
# Run statuses whose results may still grow.
LIVE_STATUSES = ("pending", "running")
# Results kept per process (their JSON text; decoded on each call).
PROCESS_KEPT = 512
# A result whose JSON is longer than this is not kept (such a result is a list a page should page instead).
MAX_KEPT_CHARS = 4_000_000
# Parameters of a kept function that name runs (one id, or a sequence of ids).
RUN_PARAMETERS = ("run_id", "run_ids", "run_a", "run_b")
# Modules whose dataclasses a kept result may hold (a stored name outside them is refused when decoding).
DATACLASS_MODULES = ("objrel.analysis.", "objrel.review.")
# The key of a kept refusal (an exception of the function's ``refusals``) in its JSON.
REFUSED = "~refused"
# Characters of a name kept as is; a longer one ends in a hash of its arguments.
NAME_CHARS = summaries.NAME_LENGTH

_process: OrderedDict = OrderedDict()
_process_lock = threading.Lock()


# ---------------------------------------------------------------- stamps


def run_stamp(store: Store, run_id: int) -> tuple[str, bool]:
    """The stamp of ``run_id``'s results (status, samples done and tested, highest sample row id) and whether it
    may still grow.  The engine commits a sample's votes, verdicts and units with its sample row, so the newest
    sample row dates them all.  One row and one step of the (run_id, id) index: cheap at any size.  A run that
    is not (or no longer) in the store has the stamp ``GONE``: its function is asked, and nothing is kept."""
    rid = int(run_id)
    r = S.runs.c
    with store.engine.connect() as c:
        row = c.execute(select(r.status, r.n_done, r.n_tested).where(r.id == rid)).first()
        if row is None:     # deleted meanwhile: the function answers as it would without a cache
            return f"{GONE}:0:0:0", False
        top_sample = c.execute(select(func.max(S.samples.c.id)).where(S.samples.c.run_id == rid)).scalar()
    return f"{row.status}:{row.n_done}:{row.n_tested}:{top_sample or 0}", row.status in LIVE_STATUSES


# ---------------------------------------------------------------- the JSON codec


def encode(value) -> str:
    """``value`` as JSON text (see the module docstring for what it may hold)."""
    return json.dumps(_enc(value), separators=(",", ":"), allow_nan=False)


def decode(text: str):
    """The value ``encode`` made ``text`` of."""
    return _dec(json.loads(text))


def _enc(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, np.bool_):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else {"~f": repr(f)}
    if isinstance(v, pd.DataFrame):
        return {"~df": {"columns": [_enc(c) for c in v.columns], "index": _enc_index(v.index),
                        "dtypes": [str(t) for t in v.dtypes],
                        "data": [[_enc(x) for x in _column_values(v.iloc[:, i])] for i in range(v.shape[1])]}}
    if isinstance(v, pd.Series):
        return {"~sr": {"name": _enc(v.name), "index": _enc_index(v.index), "dtype": str(v.dtype),
                        "data": [_enc(x) for x in _column_values(v)]}}
    if isinstance(v, np.ndarray):
        return {"~a": {"dtype": str(v.dtype), "data": [_enc(x) for x in v.tolist()]}}
    if isinstance(v, (pd.Timestamp, dt.datetime)):
        return {"~dt": v.isoformat()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        cls = type(v)
        return {"~dc": f"{cls.__module__}:{cls.__qualname__}",
                "f": {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, tuple):
        return {"~t": [_enc(x) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"~s": [_enc(x) for x in v], "frozen": isinstance(v, frozenset)}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) and not k.startswith("~") for k in v):
            return {k: _enc(x) for k, x in v.items()}
        return {"~d": [[_enc(k), _enc(x)] for k, x in v.items()]}
    raise TypeError(f"a kept result holds {type(v).__name__}, which objrel.store.kept cannot encode")


def _column_values(s: pd.Series) -> list:
    if str(s.dtype).startswith("datetime64"):
        return [None if pd.isna(x) else x.isoformat() for x in s]
    return s.tolist()


def _enc_index(index: pd.Index):
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return {"range": len(index), "name": _enc(index.name)}
    return {"values": [_enc(x) for x in index.tolist()], "name": _enc(index.name), "dtype": str(index.dtype)}


def _dec_index(d: dict) -> pd.Index:
    if "range" in d:
        return pd.RangeIndex(d["range"], name=_dec(d["name"]))
    return pd.Index([_dec(x) for x in d["values"]], name=_dec(d["name"]), dtype=_safe_dtype(d["dtype"]))


def _safe_dtype(name: str):
    return None if name == "object" or name.startswith("category") else name


def _restore(values: list, dtype: str):
    s = pd.Series(values, dtype=object)
    if dtype.startswith("datetime64"):
        return pd.to_datetime(s, utc="UTC" in dtype or "+" in dtype)
    if dtype.startswith("category"):
        return s.astype("category")
    if dtype == "object":
        return s
    return s.astype(dtype)


def _dec(v):
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1 and "~f" in v:
        return float(v["~f"])
    if "~df" in v:
        d = v["~df"]
        cols = [_restore([_dec(x) for x in data], t) for data, t in zip(d["data"], d["dtypes"])]
        frame = pd.concat(cols, axis=1, ignore_index=True) if cols else pd.DataFrame(index=range(0))
        if not cols:
            frame = pd.DataFrame(index=_dec_index(d["index"]), columns=[])
        frame.columns = [_dec(c) for c in d["columns"]]
        frame.index = _dec_index(d["index"])
        return frame
    if "~sr" in v:
        d = v["~sr"]
        s = _restore([_dec(x) for x in d["data"]], d["dtype"])
        s.index = _dec_index(d["index"])
        s.name = _dec(d["name"])
        return s
    if "~a" in v:
        return np.array([_dec(x) for x in v["~a"]["data"]], dtype=v["~a"]["dtype"])
    if "~dt" in v:
        return dt.datetime.fromisoformat(v["~dt"])
    if "~dc" in v:
        return _dataclass(v["~dc"])(**{k: _dec(x) for k, x in v["f"].items()})
    if "~t" in v:
        return tuple(_dec(x) for x in v["~t"])
    if "~s" in v:
        items = [_dec(x) for x in v["~s"]]
        return frozenset(items) if v.get("frozen") else set(items)
    if "~d" in v:
        return {_dec(k): _dec(x) for k, x in v["~d"]}
    return {k: _dec(x) for k, x in v.items()}


def _dataclass(name: str):
    module, _, qualname = name.partition(":")
    if not module.startswith(DATACLASS_MODULES):
        raise ValueError(f"a kept result names the class {name!r}; only objrel's analysis and review dataclasses "
                         "are decoded")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)) or obj.__module__ != module:
        raise ValueError(f"a kept result names {name!r}, which is not a dataclass of that module")
    return obj


# ---------------------------------------------------------------- the decorator


def _run_ids(bound: inspect.BoundArguments) -> list[int]:
    ids: list[int] = []
    for p in RUN_PARAMETERS:
        if p not in bound.arguments:
            continue
        v = bound.arguments[p]
        ids.extend([int(v)] if isinstance(v, (int, np.integer)) else [int(x) for x in v])
    return ids


def _runs_as_lists(bound: inspect.BoundArguments) -> None:
    """Run ids given as any iterable (a range, an array, a generator) become a list of ints, read once."""
    for p in RUN_PARAMETERS:
        v = bound.arguments.get(p)
        if v is not None and not isinstance(v, (int, np.integer)):
            bound.arguments[p] = [int(x) for x in v]


def code_tag(fn: Callable, merge: Callable | None = None) -> str:
    """A short hash of the source of ``fn`` and ``merge`` and of ``KEPT_FORMAT``: a result kept by other code is
    never read back (its name differs), so a fixed function recomputes every run's result."""
    parts = [str(KEPT_FORMAT)]
    for f in (fn, merge):
        if f is not None:
            try:
                parts.append(inspect.getsource(f))
            except (OSError, TypeError):
                parts.append(f.__code__.co_code.hex())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]


def _name(fn: Callable, bound: inspect.BoundArguments, tag: str) -> str:
    args = {k: (int(v) if isinstance(v, (int, np.integer)) and k in RUN_PARAMETERS else v)
            for k, v in bound.arguments.items() if k != "store"}
    text = f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}@{tag}" + json.dumps(args, sort_keys=True, default=str,
                                                                                  separators=(",", ":"))
    if len(text) <= NAME_CHARS:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{text[:NAME_CHARS - 18]}#{digest}"


def _reusable(row: summaries.KeptRow, stamp: str, live: bool) -> bool:
    """Whether ``row`` answers for ``stamp``: its own state, or a running run's recent state (a cheap result for
    ``LIVE_FRESH_S``, a costly one for ``LIVE_REUSE_S`` or ``LIVE_REUSE_FACTOR`` times its cost)."""
    if row.stamp == stamp:
        return True
    if not live or not row.stamp.startswith(LIVE_STATUSES):
        return False
    age = (dt.datetime.now(dt.timezone.utc) - _aware(row.computed_at)).total_seconds()
    if row.seconds < LIVE_CHEAP_S:
        return age < LIVE_FRESH_S
    return age < max(LIVE_REUSE_S, LIVE_REUSE_FACTOR * row.seconds)


def _in_slices(store: Store, run_id: int, stamp: str, compute: Callable, merge: Callable):
    """A mergeable result over a whole run, computed ``SLICE_ROWS`` sample row ids at a time and merged: a run of
    a million samples is read in slices, so computing it holds one slice's rows, not the run's."""
    top = Stamp.parse(stamp)
    if top is None:
        return compute(None)
    with store.engine.connect() as c:
        first = c.execute(select(func.min(S.samples.c.id)).where(S.samples.c.run_id == int(run_id))).scalar()
    if first is None or top.top - first < SLICE_ROWS:     # no row yet: nothing up to the stamp's top
        return compute((0, top.top) if first is None else (first - 1, top.top))
    value = None
    for lo in range(first - 1, top.top, SLICE_ROWS):
        part = compute((lo, min(lo + SLICE_ROWS, top.top)))
        value = part if value is None else merge(value, part)
    return value


def add_counts(kept_count: int, more: int, arguments: dict) -> int:
    """The ``merge`` of a count: kept + more."""
    return kept_count + more


def _grown(row: summaries.KeptRow | None, stamp: str) -> tuple[int, int] | None:
    """The sample rows (after, upto] a running run added since ``row`` was kept, when the kept result can be
    brought up to date with them: both states live, the run only grew.  None otherwise."""
    if row is None:
        return None
    old, new = Stamp.parse(row.stamp), Stamp.parse(stamp)
    if old is None or new is None or old.status not in LIVE_STATUSES or new.status not in LIVE_STATUSES:
        return None
    if new.top < old.top or _refused(row.payload):
        return None
    return (old.top, new.top)


def _refused(payload: str) -> bool:
    return payload.startswith('{"' + REFUSED)


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)


def _remember(key: tuple, row: summaries.KeptRow) -> None:
    with _process_lock:
        _process[key] = row
        _process.move_to_end(key)
        while len(_process) > PROCESS_KEPT:
            _process.popitem(last=False)


def _recalled(key: tuple) -> summaries.KeptRow | None:
    with _process_lock:
        return _process.get(key)


class NoDelta(Exception):
    """Raised by a kept function asked for ``rows`` it cannot count on their own (a detection run's units):
    the result is then computed over the whole run."""


@dataclasses.dataclass(frozen=True)
class Stamp:
    """A run's stamp read back: its status and its newest sample row id."""

    status: str
    top: int

    @classmethod
    def parse(cls, text: str) -> "Stamp | None":
        """The stamp ``run_stamp`` wrote as ``text``; None for anything else (a hashed stamp of several runs)."""
        parts = text.split(":")
        if len(parts) != 4 or not parts[3].isdigit():
            return None
        return cls(parts[0], int(parts[3]))


def kept(fn: Callable | None = None, *, refusals: tuple[type[Exception], ...] = (),
         merge: Callable | None = None) -> Callable:
    """Keep ``fn``'s results (``fn(store, ...)`` with its runs among ``RUN_PARAMETERS``) per state of its runs.

    ``refusals``: exceptions that say the result cannot be computed from these runs (``NotAvailable``); they
    are kept like a result and raised again, with their message, on every later call for the same state.

    ``merge``: for a result that adds up over samples (counts, tables of counts, the best few of a ranking):
    ``fn`` then takes ``rows`` = (after, upto], the sample row ids to count (None: all), and ``merge(kept,
    more, arguments)`` (``arguments``: the call's, by parameter name) combines the kept result with the one
    over the rows a running run added since.  A running run's result is so brought up to date from its
    progress, never computed again from the start; a run that ends (or starts again) is computed once in full.
    ``@kept`` and ``@kept(...)`` both work."""
    if fn is None:
        return functools.partial(kept, refusals=refusals, merge=merge)
    signature = inspect.signature(fn)
    tag = code_tag(fn, merge)

    @functools.wraps(fn)
    def wrapper(store: Store, *args, **kwargs):
        bound = signature.bind(store, *args, **kwargs)
        bound.apply_defaults()
        _runs_as_lists(bound)
        run_ids = _run_ids(bound)
        call = lambda **extra: fn(**{**bound.arguments, **extra})  # noqa: E731
        if not run_ids:
            return call()
        stamps = [run_stamp(store, r) for r in run_ids]
        stamp = "|".join(s for s, _ in stamps)
        live = any(lv for _, lv in stamps)
        if len(stamp) > summaries.STAMP_LENGTH:
            stamp = "#" + hashlib.sha256(stamp.encode()).hexdigest()
        name = _name(fn, bound, tag)
        key = (store.url, run_ids[0], name)
        row = _recalled(key)
        if row is None or row.stamp != stamp:
            stored = summaries.read(store, run_ids[0], name)
            row = stored if stored is not None else row
        single = merge is not None and len(run_ids) == 1
        if row is None or not _reusable(row, stamp, live):
            grown = _grown(row, stamp) if single else None
            row = _computed(store, run_ids[0], name, stamp, call, refusals,
                            merge=(lambda a, b: merge(a, b, bound.arguments)) if merge and single else None,
                            kept_row=row if grown else None, grown=grown)
        try:
            value = _answer(row, refusals)
        except refusals:
            raise
        except _UNREADABLE:               # a row this code cannot read back (damaged, or written otherwise)
            row = _computed(store, run_ids[0], name, stamp, call, refusals)
            value = _answer(row, refusals)
        _remember(key, row)
        return value

    wrapper.uncached = fn  # type: ignore[attr-defined]  # the function itself, for callers that want no cache
    return wrapper


# What reading back a kept row that this code cannot decode raises.
_UNREADABLE = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def _answer(row: summaries.KeptRow, refusals: tuple):
    """The value (or the kept refusal, raised) of ``row``."""
    value = json.loads(row.payload)
    if isinstance(value, dict) and REFUSED in value:
        refused = next((e for e in refusals if e.__name__ == value[REFUSED]), None)
        if refused is None:
            raise ValueError(f"a kept refusal of a kind this code does not raise: {value[REFUSED]!r}")
        raise refused(value["message"])
    return _dec(value)


def _computed(store: Store, run_id: int, name: str, stamp: str, call: Callable, refusals: tuple, *,
              merge: Callable | None = None, kept_row: summaries.KeptRow | None = None,
              grown: tuple[int, int] | None = None) -> summaries.KeptRow:
    """Compute a result for ``stamp`` (the kept one brought up to date with the ``grown`` rows, a mergeable one
    in slices, else whole), keep it when the store takes it, and return its row."""
    t0 = time.perf_counter()
    try:
        try:
            if kept_row is not None and grown is not None and merge is not None:
                value = merge(decode(kept_row.payload), call(rows=grown))
            elif merge is not None:
                value = _in_slices(store, run_id, stamp, lambda rows: call(rows=rows), merge)
            else:
                value = call()
        except NoDelta:
            value = call()
        payload = encode(value)
    except refusals as exc:
        payload = json.dumps({REFUSED: type(exc).__name__, "message": str(exc)})
    row = summaries.KeptRow(stamp, payload, time.perf_counter() - t0, dt.datetime.now(dt.timezone.utc))
    if len(payload) <= MAX_KEPT_CHARS:
        try:
            summaries.keep(store, run_id, name, stamp, payload, row.seconds)
        except (StoreBusy, SQLAlchemyError):
            pass      # a busy or read-only store: the page shows the result; the next view keeps it
    return row


def forget_process_copies() -> None:
    """Drop this process's copies of kept results (the store's rows stay)."""
    with _process_lock:
        _process.clear()
