"""The Runs page's start form as objrel reads it (objrel.engine.run_form): classifier and detection runs."""

from __future__ import annotations

import dataclasses

import pytest

from objrel.config import DetectionConfig, RunConfig
from objrel.engine.run_form import (CLASSIFIER, DETECTOR, RunForm, base_config, extra_operator_choices,
                                    stored_config, task_of)
from objrel.errors import ConfigError
from objrel.mutations import operators


@pytest.mark.parametrize("config", [
    RunConfig(model="py:tests.fixtures.colour_model:factory", dataset="ann.json", images="imgs", plan="palette15",
              vote_k=3, dilate=4, test_all=True, seed=9, limit=5, name="a run"),
    DetectionConfig(detector="mtcnn", dataset=None, images="photos", regions_from="mtcnn", detected_only=True,
                    vote_k=1, seed=3, limit=2, name="faces"),
])
def test_a_filled_form_gives_back_its_config(config):
    form = RunForm.from_config(config)
    assert form.task == task_of(config) and form.name == ""          # a new run gets its own name
    assert form.to_config(config) == dataclasses.replace(config, name=None)
    assert dataclasses.replace(form, name="again").to_config(config).name == "again"


def test_settings_the_form_does_not_show_come_from_the_base_run():
    base = RunConfig(model="m", dataset="d", task="multi", threshold=0.3, batch_size=4)
    config = RunForm(task=CLASSIFIER, model="other", dataset="d2").to_config(base)
    assert (config.model, config.dataset, config.task, config.threshold, config.batch_size) == \
        ("other", "d2", "multi", 0.3, 4)
    det = DetectionConfig(iou_threshold=0.6, labels=("face",), score_threshold=0.8)
    config = RunForm(task=DETECTOR, model="haar:frontalface_default", dataset="demo-faces").to_config(det)
    assert (config.iou_threshold, config.labels, config.score_threshold) == (0.6, ("face",), 0.8)


def test_a_base_run_of_the_other_task_gives_way_to_the_defaults():
    base = RunConfig(model="m", dataset="d", plan="palette15")
    assert base_config(DETECTOR, base) == DetectionConfig() and base_config(CLASSIFIER, base) is base
    config = RunForm(task=DETECTOR, model="mtcnn", dataset="demo-faces").to_config(base)
    assert isinstance(config, DetectionConfig) and config.detector == "mtcnn" and config.plan == "erase_noise"


def test_blank_text_means_not_set():
    config = RunForm(task=DETECTOR, model=" hog ", weights=" ", dataset="", images="photos",
                     name="  ").to_config()
    assert (config.detector, config.weights, config.dataset, config.images, config.name) == \
        ("hog", None, None, "photos", None)


@pytest.mark.parametrize("form, message", [
    (RunForm(task=CLASSIFIER, model=" ", dataset="demo"), "name a model"),
    (RunForm(task=DETECTOR, model="", dataset="demo-faces"), "name a detector"),
    (RunForm(task=CLASSIFIER, model="m", dataset=""), "needs a dataset"),
    (RunForm(task=DETECTOR, model="mtcnn", dataset="", images=""), "needs a dataset"),
    (RunForm(task=CLASSIFIER, model="m", dataset="d", dilate=-1), "dilate"),
    (RunForm(task="segmenter", model="m", dataset="d"), "task must be one of"),
])
def test_what_cannot_run_says_why(form, message):
    with pytest.raises(ConfigError, match=message):
        form.to_config()


def test_stored_config_reads_either_task_back(store):
    det = DetectionConfig(detector="mtcnn", limit=1)
    rid = store.create_run(name="x", model="mtcnn", model_config={}, task="detection", class_names=["face"],
                           dataset="d", dataset_config={}, plan={"groups": []}, config=det.to_dict(), seed=0, n_total=1)
    assert stored_config(store, rid) == det


def test_extra_operators_are_the_ones_with_a_grid():
    choices = extra_operator_choices()
    assert choices and set(choices) == {o.name for o in operators() if o.grid}


@pytest.mark.parametrize("task, model", [(CLASSIFIER, "efficientnet-lite0"), (DETECTOR, "haar:frontalface_default")])
def test_the_runtime_chosen_on_the_form_reaches_either_config_and_comes_back(task, model):
    form = RunForm(task=task, model=model, dataset="demo-faces" if task == DETECTOR else "demo", runtime="openvino")
    config = form.to_config()
    assert config.runtime == "openvino"
    assert RunForm.from_config(config).runtime == "openvino"
    assert RunForm.from_config(base_config(task)).runtime == "auto"
    with pytest.raises(ConfigError, match="runtime must be one of"):
        dataclasses.replace(form, runtime="tensorrt").to_config()
