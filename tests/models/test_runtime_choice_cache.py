"""``auto``'s remembered choice is read back only when its runtime can run here: the model cache may be shared
with an installation that has the runtimes extra (``objrel[runtimes]``), and a core install must then measure
again rather than fail on a runtime it does not have."""

from __future__ import annotations

import json

from objrel.constants import MODEL_CACHE_ENV, ONNXRUNTIME, TORCH_RUNTIME
from objrel.models import runtimes as RT


def choice(runtime: str) -> RT.RuntimeChoice:
    return RT.RuntimeChoice(runtime, f"{runtime} was fastest", {runtime: 100.0}, {}, 2)


def test_a_remembered_choice_of_a_runtime_not_installed_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_CACHE_ENV, str(tmp_path))
    (tmp_path / "net.choice-2t.json").write_text(json.dumps(choice(ONNXRUNTIME).to_dict()))
    monkeypatch.setattr(RT, "installed_runtimes", lambda: (TORCH_RUNTIME,))
    measured = []

    def measure():
        measured.append(True)
        return choice(TORCH_RUNTIME)

    assert RT.remembered_choice("net", 2, measure).runtime == TORCH_RUNTIME and measured == [True]
    # what was measured is remembered in its place, and read back without measuring
    assert RT.remembered_choice("net", 2, measure).runtime == TORCH_RUNTIME and measured == [True]


def test_a_remembered_choice_of_an_installed_runtime_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_CACHE_ENV, str(tmp_path))
    (tmp_path / "net.choice-2t.json").write_text(json.dumps(choice(ONNXRUNTIME).to_dict()))
    monkeypatch.setattr(RT, "installed_runtimes", lambda: (TORCH_RUNTIME, ONNXRUNTIME))

    def measure():
        raise AssertionError("a remembered choice of an installed runtime was measured again")

    assert RT.remembered_choice("net", 2, measure).runtime == ONNXRUNTIME
