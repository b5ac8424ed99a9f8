"""LIME explanations of stored inferences, cached in the store (``objrel.explain`` computes them).

``explanation_for`` rebuilds a stored source or mutant from its recipe (``objrel.review.rebuild``), explains it
and keeps the result in the store's ``explanations`` table; ``cached_explanation`` reads that table only.
"""

from __future__ import annotations

from objrel.explain import LIME_SAMPLES, Explanation, ProgressFn, explain, settings_string
from objrel.review.rebuild import rebuild_mutant
from objrel.store import explanations as cache


def explanation_for(store, model, run_id: int, sample_id: str, mutation_key: str = "source",
                    label: int | None = None, num_samples: int = LIME_SAMPLES, seed: int = 0,
                    progress: ProgressFn | None = None, segmenter: str = "quickshift") -> Explanation:
    """The explanation of a stored inference's source (or one mutant), cached in the store.

    The cache key is (run, sample, mutation key, label, settings).  On a hit the stored
    explanation comes back and the model is not called.  Otherwise the image is rebuilt
    from its recipe (:func:`objrel.review.rebuild.rebuild_mutant`), explained, its
    ``object_share`` computed against the rebuilt target region, stored and returned.
    ``label`` defaults to the source's stored top-1, so a source and its mutants explain
    the same class.  ``model`` must be the run's model (only its class count is checked).
    Two processes computing the same key both succeed: the second insert loses and
    returns the stored row.  ``progress`` is not called on a cache hit.
    """
    rid, sid, key = int(run_id), str(sample_id), str(mutation_key)
    n_model = getattr(model, "num_classes", None)
    n_run = len(store.class_names(rid))
    if n_model is not None and n_model != n_run:
        raise ValueError(f"model {getattr(model, 'name', model)!r} has {n_model} classes, run {rid} was made "
                         f"with {n_run}; pass the run's model")
    label = _label_of(store, rid, sid, key, label)
    settings = settings_string(num_samples, segmenter, seed)
    hit = cache.stored_explanation(store, rid, sid, key, label, settings)
    if hit is not None:
        return Explanation.from_row(hit)
    rebuilt = rebuild_mutant(store, rid, sid, key)
    image = rebuilt.image if rebuilt.mutant is None else rebuilt.mutant
    exp = explain(model, image, label=label, region=rebuilt.target.region, num_samples=num_samples, seed=seed,
                  segmenter=segmenter, progress=progress)
    theirs = cache.add_explanation(store, rid, sid, key, exp.to_row())
    return Explanation.from_row(theirs) if theirs is not None else exp


def cached_explanation(store, run_id: int, sample_id: str, mutation_key: str = "source", label: int | None = None,
                       num_samples: int = LIME_SAMPLES, seed: int = 0,
                       segmenter: str = "quickshift") -> Explanation | None:
    """The stored explanation :func:`explanation_for` would return with these arguments, or None when it
    was not computed yet.  Never runs a model: a page may call it on every redraw."""
    rid, sid, key = int(run_id), str(sample_id), str(mutation_key)
    label = _label_of(store, rid, sid, key, label)
    hit = cache.stored_explanation(store, rid, sid, key, label, settings_string(num_samples, segmenter, seed))
    return Explanation.from_row(hit) if hit is not None else None


def _label_of(store, rid: int, sid: str, key: str, label: int | None) -> int:
    """The class to explain: ``label``, or the source's stored top-1 (so a source and its mutants explain
    the same class); ValueError for a label outside the run's classes or a mutant that was not made."""
    class_names = store.class_names(rid)
    preds = store.predictions(rid, sid)
    if label is None:
        source = (preds.get("source") or {}).get("prediction")
        if not source:
            raise ValueError(f"run {rid} sample {sid!r} has no stored source prediction to take the label from; "
                             "pass label=")
        label = int(source["top_labels"][0])
    label = int(label)
    if not 0 <= label < len(class_names):
        raise ValueError(f"label {label} is not a class of run {rid} (0..{len(class_names) - 1})")
    if key != "source" and key in preds and preds[key].get("prediction") is None:
        raise ValueError(f"mutation {key!r} was not applicable to sample {sid!r} of run {rid}; nothing to explain")
    return label
