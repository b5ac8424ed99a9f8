"""A prediction's top labels and ranks equal those of a stable sort of every class (numpy's ``argsort``, the
reference), ties broken by label order, whether the vector is short (sorted whole) or long (partitioned)."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.relations.classify import FULL_SORT_CLASSES, Prediction


def stable_sort_reference(p: np.ndarray, interest, k: int):
    order = np.argsort(-np.asarray(p, dtype=np.float64), kind="stable")
    rank = np.empty(p.size, dtype=np.int64)
    rank[order] = np.arange(1, p.size + 1)
    return [int(i) for i in order[:k]], {int(i): int(rank[i]) for i in interest}


@pytest.mark.parametrize("classes", [3, FULL_SORT_CLASSES, FULL_SORT_CLASSES + 1, 1000])
def test_top_labels_and_ranks_equal_a_stable_sort_of_every_class(classes):
    rng = np.random.default_rng(classes)
    for trial in range(300):
        p = rng.dirichlet(np.full(classes, 0.3))
        if trial % 3 == 0:
            p = np.round(p, int(rng.integers(1, 4)))      # many ties, at the top too
        if trial % 25 == 0:
            p[int(rng.integers(classes))] = np.nan         # sorted last, as numpy sorts it
        interest = sorted({int(i) for i in rng.integers(0, classes, 3)})
        got = Prediction.from_probs(p.astype(np.float32), "single", interest=interest)
        top, ranks = stable_sort_reference(p.astype(np.float32), interest, len(got.top_labels))
        assert list(got.top_labels) == top and got.ranks == ranks
        assert got.predicted == (top[0],)


def test_ties_at_the_top_go_in_label_order_by_hand():
    p = np.zeros(200)
    p[[150, 7, 99]] = 0.3           # three labels tie for first
    p[3] = 0.1
    got = Prediction.from_probs(p, "single", interest=[150, 3, 4], top_k=4)
    assert got.top_labels == (7, 99, 150, 3)
    # label 4 ties with every other zero: after the 4 non-zero labels, and after the zeros of labels 0-2
    assert got.ranks == {3: 4, 4: 8, 150: 3}


@pytest.mark.parametrize("classes", [3, FULL_SORT_CLASSES + 1, 1000])
@pytest.mark.parametrize("task", ["single", "multi"])
def test_a_batch_gives_each_row_the_prediction_from_probs_gives_it(classes, task):
    rng = np.random.default_rng(classes + len(task))
    for trial in range(60):
        n = int(rng.integers(1, 20))
        p = rng.dirichlet(np.full(classes, 0.3), size=n)
        if trial % 3 == 0:
            p = np.round(p, int(rng.integers(1, 4)))      # ties, at the top and around the labels of interest
        if trial % 10 == 0:
            p[int(rng.integers(n)), int(rng.integers(classes))] = np.nan
        interests = [{int(i) for i in rng.integers(-1, classes + 1, int(rng.integers(0, 4)))} for _ in range(n)]
        got = Prediction.from_batch(p.astype(np.float32), task, interests, threshold=0.2)
        want = [Prediction.from_probs(row, task, interest=i, threshold=0.2)
                for row, i in zip(p.astype(np.float32), interests)]
        assert [repr(g) for g in got] == [repr(w) for w in want]    # repr: NaN equals NaN


def test_a_batch_breaks_ties_at_the_top_in_label_order_by_hand():
    p = np.zeros((2, 200))
    p[0, [150, 7, 99]] = 0.3
    p[0, 3] = 0.1
    p[1, [5, 4]] = 0.5
    first, second = Prediction.from_batch(p, "single", [[150, 3, 4], [5]], top_k=4)
    assert first.top_labels == (7, 99, 150, 3) and first.ranks == {3: 4, 4: 8, 150: 3}
    assert second.top_labels == (4, 5, 0, 1) and second.ranks == {5: 2} and second.predicted == (4,)


def test_a_batch_refuses_a_row_count_its_labels_of_interest_do_not_match():
    with pytest.raises(ValueError, match=r"\(N, C\) probabilities and N sets"):
        Prediction.from_batch(np.zeros((3, 10)), "single", [[1], [2]])
