"""Ground-truth confusion and bias from a model's errors on labelled images (DeepInspect s4.2).

Type1 (single-label, s4.2.1): ``P(y|x)`` is the share of images of true class x that the
model labels y; ``type1conf(x, y) = mean(P(y|x), P(x|y))``.

Type2 (multi-label, s4.2.1): ``P((x, y)|x)`` is the share of images that contain x and
not y on which the model predicts both x and y; ``type2conf(x, y) =
mean(P((x, y)|x), P((x, y)|y))``.

Confusion disparity (s4.2.2): ``cd(x, y, z) = |err(x, z) - err(y, z)|`` with err the
type1 or type2 score, and ``avg_cd(x, y)`` its mean over the ``|O| - 2`` third classes.
A conditional probability with no images behind it (no image of class x at all) is 0:
no error was observed.

``ErrorCounter`` accumulates the counts batch by batch, like the activation counter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from objrel.studies.deepinspect.metrics import check_distance_matrix


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _symmetric_mean(directional: np.ndarray) -> np.ndarray:
    out = (directional + directional.T) / 2.0
    np.fill_diagonal(out, 0.0)
    return out


@dataclass
class ErrorCounter:
    """Running error counts for the ground truth.

    task 'single': ``confusion[x, y]`` images of true class x labelled y; ``totals[x]``
    images of true class x.  task 'multi': ``both[x, y]`` images containing x but not y
    where x and y are both predicted; ``only[x, y]`` images containing x but not y.
    ``n_images`` counts the images that had a truth; ``n_ambiguous`` single-label images
    skipped because their objects named more than one class.
    """

    task: str
    n_classes: int
    confusion: np.ndarray | None = field(init=False, default=None)
    totals: np.ndarray | None = field(init=False, default=None)
    both: np.ndarray | None = field(init=False, default=None)
    only: np.ndarray | None = field(init=False, default=None)
    n_images: int = field(init=False, default=0)
    n_ambiguous: int = field(init=False, default=0)

    def __post_init__(self):
        c = self.n_classes
        if self.task == "single":
            self.confusion = np.zeros((c, c), dtype=np.int64)
            self.totals = np.zeros(c, dtype=np.int64)
        elif self.task == "multi":
            self.both = np.zeros((c, c), dtype=np.int64)
            self.only = np.zeros((c, c), dtype=np.int64)
        else:
            raise ValueError(f"task must be 'single' or 'multi', got {self.task!r}")

    def add(self, truth: np.ndarray, predicted: np.ndarray) -> None:
        """Fold in one batch of images that have a truth.

        truth, predicted: ``(N, C)`` bool, the true and the predicted classes of each image.
        """
        t = np.asarray(truth, dtype=bool)
        p = np.asarray(predicted, dtype=bool)
        if t.shape != p.shape or t.ndim != 2 or t.shape[1] != self.n_classes:
            raise ValueError(f"expected truth and predicted of the same shape (N, {self.n_classes}), got "
                             f"{t.shape} and {p.shape}")
        if self.task == "single":
            one = t.sum(axis=1) == 1
            self.n_ambiguous += int((t.sum(axis=1) > 1).sum())
            t, p = t[one], p[one]
            if not len(t):
                return
            x = t.argmax(axis=1)
            y = p.argmax(axis=1)
            np.add.at(self.confusion, (x, y), 1)
            np.add.at(self.totals, x, 1)
            self.n_images += len(t)
            return
        # multi-label: matrix products of 0/1 arrays count images per (x, y); float32 is exact
        # for per-batch counts.
        tf, pf = t.astype(np.float32), p.astype(np.float32)
        not_t = 1.0 - tf
        self.only += np.rint(tf.T @ not_t).astype(np.int64)
        self.both += np.rint((tf * pf).T @ (not_t * pf)).astype(np.int64)
        self.n_images += len(t)

    def error_matrix(self, classes=None) -> np.ndarray:
        """type1conf (single) or type2conf (multi) over ``classes`` (default all): ``(m, m)`` in [0, 1]."""
        idx = np.arange(self.n_classes) if classes is None else np.asarray(classes, dtype=int)
        if self.task == "single":
            directional = _ratio(self.confusion, self.totals[:, None])   # P(y | x) at [x, y]
        else:
            directional = _ratio(self.both, self.only)                    # P((x, y) | x) at [x, y]
        return _symmetric_mean(directional[np.ix_(idx, idx)])


def type1_confusion(true_labels, predicted_labels, n_classes: int) -> np.ndarray:
    """type1conf for single-label data: ``(N,)`` true and predicted class indices -> ``(C, C)``."""
    t = np.asarray(true_labels, dtype=int)
    p = np.asarray(predicted_labels, dtype=int)
    if t.shape != p.shape or t.ndim != 1:
        raise ValueError(f"expected two (N,) label arrays, got {t.shape} and {p.shape}")
    if len(t) and (min(t.min(), p.min()) < 0 or max(t.max(), p.max()) >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}), got values in "
                         f"[{min(t.min(), p.min())}, {max(t.max(), p.max())}]")
    eye = np.eye(n_classes, dtype=bool)
    counter = ErrorCounter("single", n_classes)
    counter.add(eye[t], eye[p])
    return counter.error_matrix()


def type2_confusion(truth, predicted) -> np.ndarray:
    """type2conf for multi-label data: ``(N, C)`` bool true and predicted sets -> ``(C, C)``."""
    t = np.asarray(truth, dtype=bool)
    if t.ndim != 2:
        raise ValueError(f"expected (N, C) bool label sets, got shape {t.shape}")
    counter = ErrorCounter("multi", t.shape[1])
    counter.add(t, predicted)
    return counter.error_matrix()


def avg_confusion_disparity(error: np.ndarray) -> np.ndarray:
    """avg_cd(x, y) = mean over z not in {x, y} of |err(x, z) - err(y, z)| (DeepInspect s4.2.2).

    error: symmetric ``(m, m)`` type1conf or type2conf, m >= 3.  Returns ``(m, m)``,
    symmetric, zero diagonal.
    """
    e = check_distance_matrix(error)
    m = e.shape[0]
    out = np.zeros((m, m), dtype=np.float64)
    for x in range(m):
        d = np.abs(e[x][None, :] - e)                                     # (y, z): |err(x,z) - err(y,z)|
        keep = np.ones((m, m), dtype=bool)
        keep[:, x] = False
        keep[np.arange(m), np.arange(m)] = False
        out[x] = np.where(keep, d, 0.0).sum(axis=1) / (m - 2)
    np.fill_diagonal(out, 0.0)
    return out
