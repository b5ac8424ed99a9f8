"""Confusion and bias scores over the class columns of rho (DeepInspect s3.2, s3.3, s4.3).

Every function takes plain arrays: ``rho`` is ``(neurons, m)`` with values in [0, 1],
a distance matrix is a symmetric ``(m, m)`` array with a zero diagonal, and pair scores
are the ``m (m - 1) / 2`` entries above the diagonal in row-major order
(``pair_indices``).
"""

from __future__ import annotations

import numpy as np

from objrel.studies.deepinspect.constants import FAR_STD, FLAG_STD


def pair_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of every class pair a < b, row-major: (0,1), (0,2), ..., (m-2, m-1)."""
    if m < 2:
        raise ValueError(f"need at least 2 classes to form a pair, got {m}")
    return np.triu_indices(m, k=1)


def pair_values(matrix: np.ndarray) -> np.ndarray:
    """The entries above the diagonal of a square ``(m, m)`` matrix, as ``(m (m-1) / 2,)``."""
    mat = np.asarray(matrix)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise ValueError(f"expected a square (m, m) matrix, got shape {mat.shape}")
    return mat[pair_indices(mat.shape[0])]


def check_distance_matrix(dist: np.ndarray) -> np.ndarray:
    """``dist`` as a float array; ValueError unless it is square, symmetric, finite, non-negative and of 3+ classes."""
    d = np.asarray(dist, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"expected a square (m, m) distance matrix, got shape {d.shape}")
    if d.shape[0] < 3:
        raise ValueError(f"bias needs a third class: expected at least 3 classes, got {d.shape[0]}")
    if not np.all(np.isfinite(d)) or (d < 0).any():
        raise ValueError("distances must be finite and non-negative")
    if not np.allclose(d, d.T):
        raise ValueError("distance matrix must be symmetric")
    return d


def napvd(rho: np.ndarray) -> np.ndarray:
    """NAPVD (DeepInspect Eq. 2): Euclidean distance between every two class columns of rho.

    rho: ``(neurons, m)`` activation probabilities in [0, 1].
    Returns ``(m, m)`` float64, symmetric, zero diagonal; lower means more alike (confusion).
    Differences are taken exactly (no Gram-matrix shortcut), so identical columns give 0.
    """
    r = np.asarray(rho, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rho must be (neurons, classes), got shape {r.shape}")
    if r.size and (r.min() < 0 or r.max() > 1):
        raise ValueError(f"rho holds probabilities in [0, 1], got values in [{r.min()}, {r.max()}]")
    import torch  # here, not at the top: a page that reads a stored result computes no distance

    cols = torch.from_numpy(np.ascontiguousarray(r.T))
    d = torch.cdist(cols, cols, p=2.0, compute_mode="donot_use_mm_for_euclid_dist").numpy()
    np.fill_diagonal(d, 0.0)
    return (d + d.T) / 2.0


def mean_std(values: np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (ddof 0, as DeepInspect's evaluation uses)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no values to summarise")
    return float(v.mean()), float(v.std())


def flag_low(values: np.ndarray, k_std: float = FLAG_STD) -> tuple[np.ndarray, float]:
    """Flags ``values < mean - k_std * std`` (confusion: NAPVD).  Returns (bool mask, cutoff)."""
    mu, sd = mean_std(values)
    cut = mu - k_std * sd
    return np.asarray(values) < cut, cut


def flag_high(values: np.ndarray, k_std: float = FLAG_STD) -> tuple[np.ndarray, float]:
    """Flags ``values > mean + k_std * std`` (bias, ground-truth errors).  Returns (bool mask, cutoff)."""
    mu, sd = mean_std(values)
    cut = mu + k_std * sd
    return np.asarray(values) > cut, cut


def bias(d_ca, d_cb):
    """bias(a, b, c) (DeepInspect Eq. 3) = |d(c,a) - d(c,b)| / (d(c,a) + d(c,b)), in [0, 1].

    Arrays broadcast.  When both distances are 0 (c indistinguishable from a and b)
    there is no disparity and the result is 0.
    """
    da = np.asarray(d_ca, dtype=np.float64)
    db = np.asarray(d_cb, dtype=np.float64)
    den = da + db
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, np.abs(da - db) / np.where(den > 0, den, 1.0), 0.0)
    return out


def far_cutoff(dist: np.ndarray, k_std: float = FAR_STD) -> float:
    """The far-triplet threshold th = mean + k_std * std of all pairwise distances (DeepInspect s4.3)."""
    mu, sd = mean_std(pair_values(dist))
    return mu + k_std * sd


def avg_bias(dist: np.ndarray, far: float | None = None) -> np.ndarray:
    """avg_bias(a, b) (DeepInspect Eq. 4) for every pair, with the far-triplet filter of s4.3.

    dist: ``(m, m)`` class distances (NAPVD, or the weight-vector baseline's), m >= 3.
    far:  a third class c is left out of avg_bias(a, b) when ``d(c,a) > far`` and
          ``d(c,b) > far``; default ``far_cutoff(dist)`` (mean + 1 std); ``inf`` keeps all.
    Returns ``(m, m)`` float64, symmetric, zero diagonal:
    ``sum over kept c not in {a, b} of bias(a, b, c)``, divided by ``m - 2``.  The divisor
    stays Eq. 4's ``|O| - 2``: a left-out triplet adds 0 (DeepInspect's published
    evaluation code does the same), so pairs whose classes are far from everything score
    low rather than being averaged over a handful of triplets.
    """
    d = check_distance_matrix(dist)
    m = d.shape[0]
    th = far_cutoff(d) if far is None else float(far)
    out = np.zeros((m, m), dtype=np.float64)
    for a in range(m):
        d_ca = d[:, a][None, :]                      # (1, c)
        d_cb = d                                     # (b, c): row b holds d(b, c) = d(c, b)
        terms = bias(d_ca, d_cb)                     # (b, c)
        keep = ~((d_ca > th) & (d_cb > th))
        keep[:, a] = False                           # c != a
        keep[np.arange(m), np.arange(m)] = False     # c != b
        out[a] = np.where(keep, terms, 0.0).sum(axis=1) / (m - 2)
    out[np.arange(m), np.arange(m)] = 0.0
    return (out + out.T) / 2.0


def rank_order(values: np.ndarray, ascending: bool) -> np.ndarray:
    """Pair indices from most to least suspicious; ties keep pair order (stable sort)."""
    v = np.asarray(values, dtype=np.float64)
    return np.argsort(v if ascending else -v, kind="stable")


def ranks(values: np.ndarray, ascending: bool) -> np.ndarray:
    """1-based rank of every pair in ``rank_order``."""
    order = rank_order(values, ascending)
    r = np.empty(len(order), dtype=np.int64)
    r[order] = np.arange(1, len(order) + 1)
    return r
