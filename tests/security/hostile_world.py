"""A store whose every name a dataset, a run operator or a reviewer writes is hostile: script and link payloads
in COCO image ids, file names and category (class) names, in the run's name, in reviewers' notes and an
adjudicator's note, and in account names as far as the account-name rules allow.

The model is the colour model of tests/fixtures (it names the dominant colour of the whole image), with its
three classes renamed to payloads, so the ground truth and every top label shown are payloads too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from objrel.models import CallableClassifier
from tests.fixtures.colour_model import dominant_colour_probs

# Each payload either runs script where user text reaches HTML or a script, or makes a link where it reaches
# markdown (GitHub autolinks included) or plotly's pseudo-HTML.  Every link payload points at "evil".
IMG_ONERROR = '<img src=x onerror="window.__pwned=1">'
SCRIPT_TAG = "<script>window.__pwned=1</script>"
JS_URL = "javascript:window.__pwned=1"
MD_LINK = "[click](http://evil.example/x)"
BARE_URL = "http://evil.example/y"
WWW = "www.evil.example"
EMAIL = "x@evil.example"
PLOT_LINK = '<a href="http://evil.example/p">p</a>'

# The model's classes (red, green, blue channels) and the dataset's categories: the flagged items' ground truth
# and top label is RED.
RED = f"{PLOT_LINK} {MD_LINK} {IMG_ONERROR}"
GREEN = f"{WWW} {SCRIPT_TAG}"
BLUE = f"{BARE_URL} {JS_URL}"
CLASSES = [RED, GREEN, BLUE]

# Image ids (any text) and file names (whatever a file system takes: no "/") of the flagged items, then two
# items the model gets right for the right reason.
FLAGGED = [(IMG_ONERROR, f"f1 [click](evil.example) {IMG_ONERROR}.png"),
           (MD_LINK, f"f2 {WWW}.png"),
           (BARE_URL, f"f3 {EMAIL}.png"),
           (WWW, "f4 [a](http:evil.example).png"),
           (SCRIPT_TAG, "f5 <script>window.__pwned=1<.png"),
           (JS_URL, "f6.png")]
CLEAN = [("c1", "c1.png"), ("c2", "c2.png")]

RUN_NAME = f"[run](http://evil.example/r) {PLOT_LINK} {WWW} {IMG_ONERROR}"
NOTE = f"{MD_LINK} {BARE_URL} {WWW} {EMAIL} {IMG_ONERROR} {SCRIPT_TAG} **b** :red[x] $x$"
DECISION_NOTE = f"decided: {PLOT_LINK} {MD_LINK} {WWW}"

# Account names allow ASCII letters, digits, ". _ - @" and inner spaces (objrel.review.accounts): "<", "[",
# "(" and ":" are refused, so the most hostile names are a bare web address and an e-mail address.
REFUSED_NAMES = (IMG_ONERROR, MD_LINK, BARE_URL)
REVIEWER_A = f"{WWW} {EMAIL}"
REVIEWER_B = "bob@evil.example"
ADJUDICATOR, RUN_OPERATOR, ADMIN = "carol", "olga", "adam"


def passphrase(name: str) -> str:
    return f"{name.replace(' ', '-')}-long-passphrase"


def factory() -> CallableClassifier:
    """The colour model with payload class names."""
    return CallableClassifier(dominant_colour_probs, CLASSES, name="dominant-colour")


def write_dataset(root: Path) -> Path:
    """The COCO file (``root/annotations.json``) and its images: flagged items are a greenish patch annotated
    RED on a saturated red field (the model says RED because of the field: MR-1 and MR-2 flag it), clean ones
    a large red object on a dark blue field."""
    root.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i, (image_id, file_name) in enumerate(FLAGGED + CLEAN, start=1):
        img = np.zeros((40, 48, 3), np.uint8)
        if i <= len(FLAGGED):
            img[:] = (240 + i % 10, 0, 0)
            img[10:30, 12:32] = (100, 150 + i, 100)
            box = [12, 10, 20, 20]
        else:
            img[:] = (20, 20, 120)
            img[4:36, 6:42] = (220, 20, 20)
            box = [6, 4, 36, 32]
        Image.fromarray(img).save(root / file_name)
        images.append({"id": image_id, "file_name": file_name, "width": 48, "height": 40})
        anns.append({"id": i, "image_id": image_id, "category_id": 1, "bbox": box})
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": k + 1, "name": name} for k, name in enumerate(CLASSES)]}
    path = root / "annotations.json"
    path.write_text(json.dumps(coco))
    return path


def build(base: Path):
    """The store (``base/app.db``) with the run, the accounts, two reviewers' calls on the MR-2 review sample
    (they disagree on two items, with payload notes) and one disagreement decided with a payload note;
    returns ``(store, run_id)``."""
    from objrel import review as R
    from objrel.access import SERVER
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.review.roles import actor_of
    from objrel.store import Store

    ann = write_dataset(base / "data")
    store = Store(base / "app.db")
    run_id = Engine(store, RunConfig(model="py:tests.security.hostile_world:factory", dataset=str(ann),
                                     plan="colours3", name=RUN_NAME), model=factory()).execute().run_id
    for name, roles in ((REVIEWER_A, [R.REVIEWER]), (REVIEWER_B, [R.REVIEWER]), (ADJUDICATOR, [R.ADJUDICATOR]),
                        (RUN_OPERATOR, [R.RUN_OPERATOR]), (ADMIN, [R.ADMIN])):
        R.create_reviewer(store, name, passphrase(name), roles=roles)
    relation = "MR-2"
    drawn = R.draw_review_sample(SERVER, store, run_id, relation)
    for i, sid in enumerate(drawn):
        for who in (REVIEWER_A, REVIEWER_B):
            disagree = i < 2 and who == REVIEWER_B
            R.record_judgment(actor_of(store, who), store, run_id, sid, relation, "fp" if disagree else "tp",
                              ["other"] if disagree else (), NOTE if i < 2 else None)
    R.adjudicate(actor_of(store, ADJUDICATOR), store, run_id, drawn[0], relation, "tp", [], DECISION_NOTE)
    return store, run_id
