"""The engine mixes the model input of one-colour fills (``PaintedInput``) instead of painting and
resizing them: no fill mutant is made, and the rows equal those of a run that paints every mutant (the
same verdicts, votes and flags; probabilities equal up to float32 rounding)."""

from __future__ import annotations

import pytest
import torch

from objrel.config import RunConfig
from objrel.engine import loop
from objrel.engine.classify import Engine
from objrel.models import load_classifier
from objrel.mutations import recipe
from objrel.store import Store
from objrel.studies.shortcut.models import ShortcutCNN, module_classifier
from objrel.studies.shortcut.scenes import SyntheticConfig, write_split

from tests.engine.test_work_ahead import WaitingEngine

pytestmark = pytest.mark.slow
PROB_TOLERANCE = 1e-4


def _run(tmp_path, name, cfg, model, mix: bool, monkeypatch, ahead: bool = False):
    made = []
    real = recipe.make_mutant

    def counting(image, target, mutation, seed):
        made.append(mutation.operator)
        return real(image, target, mutation, seed)

    monkeypatch.setattr(loop, "make_mutant", counting)
    store = Store(tmp_path / f"{name}-{mix}-{ahead}.db")
    # ahead: the next chunk decoded and its sources predicted while this one runs (its model inputs kept for
    # its fills), and each batch prepared in the mutant worker thread, as on a GPU
    engine = (WaitingEngine if ahead else Engine)(store, cfg, model=model)
    engine.mix_fills = mix
    engine.read_ahead = engine.prefetch_mutants = ahead
    report = engine.execute()
    out = {"report": report, "made": made, "samples": store.samples(report.run_id),
           "verdicts": store.verdicts(report.run_id), "votes": store.votes(report.run_id),
           "predictions": {s["sample_id"]: store.predictions(report.run_id, s["sample_id"])
                           for s in store.samples(report.run_id)},
           "model_config": store.get_run(report.run_id).model_config}
    store.dispose()
    return out


def _assert_same_rows(mixed, painted):
    key = lambda r: (r["sample_id"], r.get("mutation_key") or r.get("group_name"))  # noqa: E731
    assert mixed["report"].tested == painted["report"].tested > 0
    assert mixed["report"].forward_passes == painted["report"].forward_passes
    assert [(s["sample_id"], s["status"], s["correct"]) for s in mixed["samples"]] == \
           [(s["sample_id"], s["status"], s["correct"]) for s in painted["samples"]]
    for table in ("verdicts", "votes"):
        a = sorted(mixed[table], key=key)
        b = sorted(painted[table], key=key)
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            same = ("verdict", "note", "label_changed") if table == "verdicts" else ("flagged", "n_violated")
            assert {k: x.get(k) for k in same} == {k: y.get(k) for k in same}, key(x)
            if table == "verdicts" and x["distance"] is not None:
                assert x["distance"] == pytest.approx(y["distance"], abs=PROB_TOLERANCE)
    for sid, by_key in mixed["predictions"].items():
        for mkey, rec in by_key.items():
            ref = painted["predictions"][sid][mkey]
            assert rec["seed"] == ref["seed"]
            if rec["prediction"] is None:
                assert ref["prediction"] is None
                continue
            got, want = rec["prediction"], ref["prediction"]     # the stored record of a Prediction
            assert got["predicted"] == want["predicted"]
            shared = set(got["probs"]) & set(want["probs"])
            assert shared
            for label in shared:
                assert got["probs"][label] == pytest.approx(want["probs"][label], abs=PROB_TOLERANCE)


@pytest.mark.parametrize("lazy, ahead", [(False, False), (True, False), (False, True)],
                         ids=["full", "lazy", "working-ahead"])
def test_the_demo_with_mixed_fills_gives_the_rows_of_painted_mutants(tmp_path, monkeypatch, lazy, ahead):
    model = load_classifier("efficientnet-lite0")
    cfg = RunConfig(dataset="demo", plan="colours3", test_all=True, dilate=3, lazy=lazy, batch_size=4)
    mixed = _run(tmp_path, "demo", cfg, model, True, monkeypatch, ahead)
    painted = _run(tmp_path, "demo", cfg, model, False, monkeypatch)
    assert mixed["made"] == []                      # every colours3 mutation is a one-colour fill
    # the run records how its model inputs were resized (runs stored before rounded them to bytes)
    assert mixed["model_config"]["preprocess"]["resized_as"] == "float32"
    assert len(painted["made"]) == painted["report"].forward_passes - painted["report"].tested > 0
    _assert_same_rows(mixed, painted)
    flags = [v["flagged"] for v in mixed["votes"]]
    assert any(flags) and not all(flags)


class ScribblesOnItsInput(torch.nn.Module):
    """A module that changes its input batch in place after using it (allowed under inference_mode)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x):
        out = self.net(x)
        x.mul_(0.5)
        return out


@pytest.mark.parametrize("multi, scribbles", [(False, False), (True, False), (False, True)],
                         ids=["single-label", "multi-label", "module-changes-its-input"])
def test_planted_shortcut_scenes_with_mixed_fills_give_the_rows_of_painted_mutants(tmp_path, monkeypatch, multi,
                                                                                 scribbles):
    scenes = SyntheticConfig(n_classes=3, rho=0.9, multi_label=multi, seed=5)
    split = write_split(scenes, tmp_path / "scenes", "test", 12)
    torch.manual_seed(0)
    names = [f"class{i}" for i in range(3)]
    net = ScribblesOnItsInput(ShortcutCNN(3)) if scribbles else ShortcutCNN(3)
    model = module_classifier(net, names, task="multi" if multi else "single")
    cfg = RunConfig(dataset=split.annotation, plan="all", test_all=True, lazy=False, batch_size=8,
                    task="multi" if multi else "single")
    mixed = _run(tmp_path, "planted", cfg, model, True, monkeypatch)
    painted = _run(tmp_path, "planted", cfg, model, False, monkeypatch)
    # plan "all": the one-colour fills are mixed, every other operator is still painted
    assert mixed["made"] and not {"fill_object", "fill_background"} & set(mixed["made"])
    assert {"fill_object", "fill_background"} <= set(painted["made"])
    _assert_same_rows(mixed, painted)


def test_an_adapter_that_prepares_its_own_way_gets_painted_mutants():
    """Mixing needs TorchClassifier's own prepare on a plain Preprocess; a subclass with another prepare,
    or another preprocessing, might not be a linear resize."""
    from objrel.models import TorchClassifier
    from objrel.models.preprocess import Preprocess

    class Sharpened(Preprocess):
        pass

    class OwnPrepare(TorchClassifier):
        def prepare(self, images):
            return super().prepare(images)

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2))
    assert TorchClassifier(net, ["a", "b"], Preprocess(size=8)).mixes_fills
    assert not OwnPrepare(net, ["a", "b"], Preprocess(size=8)).mixes_fills
    assert not TorchClassifier(net, ["a", "b"], Sharpened(size=8)).mixes_fills
