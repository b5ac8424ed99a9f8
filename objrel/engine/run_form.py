"""A new run as the app's start form describes it, turned into a ``RunConfig`` or a ``DetectionConfig``.

The form shows the settings both tasks share (the model or detector, data, plan, vote, seed, limit,
name) plus one task-specific switch; every other setting (multi-label threshold, IoU threshold,
batch size, ...) comes from the run it starts from, or from the task's defaults.  No Streamlit here.

The web policy (``check_web_config``, and ``RunForm.to_config`` for the form's own values): a value the form
does not offer starts nothing.  Each form field must be one of the form's choices or inside its bounds
(``RunForm.check``), whatever the browser sent; of the settings the form does not show, a base run may bring
only ``WEB_INHERITED`` ones (what describes its data and its decisions), and every other one (``compile``,
``device``, ``engine``, ``workers``, and any setting added later) must keep the task's default.  Refusals
name files by their place under the allowed folders, never by a server path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from objrel.config import DetectionConfig, RunConfig, config_from_dict
from objrel.constants import AUTO_RUNTIME, CPU_DEVICE, RUNTIMES, THREE_COLOUR_VOTE_K
from objrel.data.bundled import DEMO_DIR
from objrel.data.uploads import WEIGHT_ARCHITECTURES
from objrel.errors import ConfigError
from objrel import access as A
from objrel.access import Actor
from objrel.store import Store
from objrel.store import accounts as account_rows

CLASSIFIER, DETECTOR = "classifier", "detector"
TASKS = (CLASSIFIER, DETECTOR)
TASK_LABELS = {CLASSIFIER: "Image classifier", DETECTOR: "Object detector"}
# Bounds of the form's number fields.
MAX_VOTE_K = 3          # the primary votes have three mutations
MAX_DILATE_PX = 50
MAX_SEED = 2**31 - 1

AnyConfig = RunConfig | DetectionConfig

# ---------------------------------------------------------------- what the web app may run
# Nothing typed into the web app names code or an arbitrary server path: models come from these lists
# (plus the entries an admin registers in the store), data and weights from the allowed roots.

# Classifiers of the zoo the app offers (objrel.models.efficientnet.LITE_SIZES).
ZOO_CLASSIFIERS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2")
# torchvision classifiers the app offers for uploaded state dicts (objrel.data.uploads); they need a weights file.
WEIGHTS_CLASSIFIERS = tuple(f"torchvision:{a}" for a in WEIGHT_ARCHITECTURES)
# Detectors the app offers (OpenCV's bundled cascades and HOG, MTCNN with its bundled weights).
ZOO_DETECTORS = ("haar:frontalface_default", "haar:frontalcatface", "haar:frontalface_default+haar:frontalcatface",
                 "hog:people", "mtcnn")
# Model specs that run arbitrary code: never from the web, not even registered by an admin.
CODE_PREFIX = "py:"
# Largest batch a run started from the web may use (the CLI is not limited): a larger one only costs memory.
MAX_WEB_BATCH = 256
# Folders the web app may read datasets and weights from: os.pathsep-separated in this variable, else
# the bundled demo and the uploads folder.
DATA_ROOTS_ENV = "OBJREL_DATA_ROOTS"
UPLOADS_DIR = Path("var/uploads")
DEMO_ASSETS = DEMO_DIR


def data_roots() -> tuple[Path, ...]:
    """The allowed roots, resolved: ``$OBJREL_DATA_ROOTS`` or (demo assets, ``var/uploads``)."""
    raw = os.environ.get(DATA_ROOTS_ENV, "")
    roots = [Path(p) for p in raw.split(os.pathsep) if p.strip()] or [DEMO_ASSETS, UPLOADS_DIR]
    return tuple(p.expanduser().resolve() for p in roots)


def web_models(store: Store, task: str) -> list[str]:
    """The models the app offers for ``task``: the zoo's, then those an admin registered."""
    zoo = ZOO_DETECTORS if task == DETECTOR else ZOO_CLASSIFIERS + WEIGHTS_CLASSIFIERS
    return list(zoo) + [m for m in account_rows.allowed_models(store, task) if m not in zoo]


def _names_code(spec: str) -> bool:
    return any(part.strip().startswith(CODE_PREFIX) for part in spec.split("+"))


def allow_model(actor: Actor, store: Store, task: str, name: str) -> list[str]:
    """``actor`` (an admin) registers model ``name`` for ``task`` in the app's list; returns the new list.
    NotAllowed for a non-admin; ConfigError for a ``py:`` spec (code) or a path (only names: files come as
    weights)."""
    A.authorize(actor, A.ALLOW_MODEL, repr(name))
    if task not in TASKS:
        raise ConfigError(f"task must be one of {TASKS}, got {task!r}")
    name = (name or "").strip()
    if not name or _names_code(name) or "/" in name or "\\" in name:
        raise ConfigError(f"a registered model is a zoo name or detector spec, never code ({CODE_PREFIX}...) or "
                          f"a path; got {name!r}")
    account_rows.add_allowed_model(store, task, name, actor.name)
    return web_models(store, task)


# What the start form lists from the allowed roots (nobody types a server path): annotation files, image
# folders and weights files, found at most this deep below a root and at most this many of each.
CHOICE_DEPTH = 3
MAX_CHOICES = 500
ANNOTATION_SUFFIXES = (".json", ".xml")
WEIGHTS_SUFFIXES = (".pt", ".pth")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


def root_choices(kind: str, roots: tuple[Path, ...] | None = None) -> list[str]:
    """The files (``kind`` "annotation" or "weights") or image folders ("images") inside the allowed roots, as
    absolute paths, sorted: the only values the web form offers.  Symbolic links are not followed."""
    if kind not in ("annotation", "weights", "images"):
        raise ValueError(f"kind must be annotation, weights or images; got {kind!r}")
    out: list[str] = []
    for root in data_roots() if roots is None else roots:
        if not root.is_dir():
            continue
        for folder, dirs, files in os.walk(root, followlinks=False):
            depth = len(Path(folder).relative_to(root).parts)
            if depth >= CHOICE_DEPTH:
                dirs[:] = []
            dirs.sort()
            names = [f for f in files if not os.path.islink(os.path.join(folder, f))]
            if kind == "images":
                if any(f.lower().endswith(IMAGE_SUFFIXES) for f in names):
                    out.append(folder)
            else:
                suffixes = ANNOTATION_SUFFIXES if kind == "annotation" else WEIGHTS_SUFFIXES
                out += [os.path.join(folder, f) for f in sorted(names) if f.lower().endswith(suffixes)]
            if len(out) >= MAX_CHOICES:
                return sorted(out[:MAX_CHOICES])
    return sorted(out)


def choice_label(path: str, roots: tuple[Path, ...] | None = None) -> str:
    """``path`` as the form shows it: relative to its allowed root, under the root's folder name (a store's own
    uploads folder shows as ``uploads``)."""
    p = Path(path)
    uploads = UPLOADS_DIR.expanduser().resolve()
    for root in data_roots() if roots is None else roots:
        if p == root or root in p.parents:
            name = UPLOADS_DIR.name if root.parent == uploads else root.name
            return str(Path(name) / p.relative_to(root))
    return p.name


def _inside_roots(what: str, value: str | None, roots: tuple[Path, ...]) -> None:
    """ConfigError unless ``value`` lies inside one of ``roots``; the message names the roots by their folder
    names and the value by its file name only (a visitor never reads a server path)."""
    if value is None:
        return
    path = Path(value).expanduser().resolve()
    if not any(path == r or r in path.parents for r in roots):
        names = ", ".join(sorted({UPLOADS_DIR.name if r.name == UPLOADS_DIR.name else r.name for r in roots}))
        raise ConfigError(f"the {what} must lie inside an allowed folder ({names}); got {Path(value).name!r}, "
                          "which lies elsewhere: pick it from the form's list or upload it")


# Settings the form does not show that a base run may bring along (what describes its data and its decisions);
# every other setting the form does not show must keep the task's default from the web (``check_web_config``).
WEB_INHERITED = ("task", "threshold", "fmt", "padding", "synset_mapping", "lazy", "batch_size", "score_threshold",
                 "labels", "iou_threshold", "regions_from")
# The config fields the form sets (``RunForm.to_config``), for either task.
FORM_FIELDS = ("model", "detector", "weights", "dataset", "images", "plan", "operators", "vote_k", "dilate",
               "test_all", "detected_only", "seed", "limit", "name", "runtime")


def _pinned_changes(config: AnyConfig) -> list[str]:
    """``field=value`` of every setting that neither the form sets nor a base run may bring, where it differs
    from the task's default."""
    import dataclasses

    default = default_config(task_of(config))
    return [f"{f.name}={getattr(config, f.name)!r}" for f in dataclasses.fields(config)
            if f.name not in FORM_FIELDS + WEB_INHERITED and getattr(config, f.name) != getattr(default, f.name)]


def check_web_config(store: Store, config: AnyConfig) -> AnyConfig:
    """``config`` when the web app may run it: its model is in ``web_models`` (never ``py:``), and its
    dataset (unless bundled), images folder and weights file lie inside ``data_roots()``.  ConfigError
    saying what was refused otherwise."""
    task = task_of(config)
    model = config.detector if task == DETECTOR else config.model
    if _names_code(model):
        raise ConfigError(f"the web app never runs code named by a model spec ({CODE_PREFIX}...); got {model!r}. "
                          "Start such runs with the objrel command on the server")
    allowed = web_models(store, task)
    if model not in allowed:
        raise ConfigError(f"the model must be one of the app's list ({', '.join(allowed)}); got {model!r}. "
                          "An admin can register more")
    if model in WEIGHTS_CLASSIFIERS and not config.weights and model not in account_rows.allowed_models(store, task):
        raise ConfigError(f"{model} runs with an uploaded weights file; got no weights file (upload one on the "
                          "Runs page, or pick another model)")
    code = [f"{name}={value!r}" for name, value in _text_fields(config) if _names_code(value)]
    if code:   # every field, not only those the form shows: a base run's settings come along too (F20)
        raise ConfigError(f"the web app never runs code named in a run's settings ({CODE_PREFIX}...); got "
                          f"{', '.join(code)}. Start such runs with the objrel command on the server")
    regions_from = getattr(config, "regions_from", None)
    if regions_from and regions_from not in web_models(store, DETECTOR):
        raise ConfigError(f"regions_from must be one of the app's detectors "
                          f"({', '.join(web_models(store, DETECTOR))}); got {regions_from!r}")
    roots = data_roots()
    if config.dataset not in type(config).BUILTIN_DATASETS:
        _inside_roots("dataset", config.dataset, roots)
    _inside_roots("images folder", config.images, roots)
    _inside_roots("weights file", config.weights, roots)
    _inside_roots("synset mapping", config.synset_mapping, roots)
    # what the form does not show cannot come in through a base run's settings either: the app runs on this
    # machine, one process per run, with batches no larger than the form would offer
    if getattr(config, "engine", "local") != "local":
        raise ConfigError(f"the web app runs on this machine only (engine local); got engine={config.engine!r}. "
                          "Start Ray runs with the objrel command")
    if getattr(config, "device", CPU_DEVICE) != CPU_DEVICE:
        raise ConfigError(f"the web app runs models on the CPU (device cpu); got device={config.device!r}. "
                          "Start GPU runs with the objrel command")
    if config.batch_size > MAX_WEB_BATCH:
        raise ConfigError(f"batch_size must be at most {MAX_WEB_BATCH} from the web app; got {config.batch_size}")
    pinned = _pinned_changes(config)
    if pinned:
        raise ConfigError(f"the web app starts runs only with settings its form offers; got {', '.join(pinned)} "
                          "(from the run it starts from?). Start such runs with the objrel command on the server")
    return config


def _text_fields(config: AnyConfig):
    """Every text value of ``config``'s fields (inside lists, tuples and dicts too), as (field, value)."""
    import dataclasses

    def walk(name, value):
        if isinstance(value, str):
            yield name, value
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from walk(name, v)
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from walk(f"{name}.{k}", v)

    for f in dataclasses.fields(config):
        yield from walk(f.name, getattr(config, f.name))


def task_of(config: AnyConfig) -> str:
    """Which kind of run the config starts: the detector task or the classifier task."""
    return DETECTOR if isinstance(config, DetectionConfig) else CLASSIFIER


def default_config(task: str) -> AnyConfig:
    """A config with the defaults for ``task``; ConfigError for an unknown task."""
    if task not in TASKS:
        raise ConfigError(f"task must be one of {TASKS}, got {task!r}")
    return DetectionConfig() if task == DETECTOR else RunConfig()


def stored_config(store: Store, run_id: int) -> AnyConfig:
    """The configuration a stored run was made with (classifier or detection)."""
    return config_from_dict(store.get_run(run_id).config)


def base_config(task: str, base: AnyConfig | None = None) -> AnyConfig:
    """``base`` when it is a run of ``task``, else the task's defaults."""
    return base if base is not None and task_of(base) == task else default_config(task)


def extra_operator_choices() -> list[str]:
    """Operators that can be added to a plan from the form (those with a parameter grid)."""
    from objrel.mutations import operators

    return [o.name for o in operators() if o.grid]


@dataclass(frozen=True)
class RunForm:
    """The start form's fields, text as typed (a blank text field means "not set").

    model:        classifier name for a classifier run, detector name for a detection run.
    test_all:     classifier runs: test incorrect inferences too.
    detected_only: detection runs: test only objects detected on the source.
    runtime:      what runs the forward pass (``RUNTIMES``; ``auto``: the fastest that matches torch here).
    """

    task: str = CLASSIFIER
    model: str = ""
    weights: str = ""
    dataset: str = ""
    images: str = ""
    plan: str = ""
    operators: tuple[str, ...] = ()
    vote_k: int = THREE_COLOUR_VOTE_K
    dilate: int = 0
    test_all: bool = False
    detected_only: bool = False
    seed: int = 0
    limit: int = 0
    name: str = ""
    runtime: str = AUTO_RUNTIME

    @classmethod
    def from_config(cls, config: AnyConfig) -> RunForm:
        """The form filled in from ``config`` (the name is left blank: a new run gets its own)."""
        detection = isinstance(config, DetectionConfig)
        return cls(task=task_of(config), model=config.detector if detection else config.model,
                   weights=config.weights or "", dataset=config.dataset or "", images=config.images or "",
                   plan=config.plan, operators=tuple(config.operators), vote_k=config.vote_k or THREE_COLOUR_VOTE_K,
                   dilate=config.dilate, test_all=False if detection else config.test_all,
                   detected_only=config.detected_only if detection else False, seed=config.seed,
                   limit=config.limit, runtime=getattr(config, "runtime", AUTO_RUNTIME))

    def check(self) -> RunForm:
        """The form itself when every field holds a value the form offers (a choice of its lists, a number
        inside its bounds, text as text); ConfigError naming the first field that does not, what was expected
        and what came (a tampered form starts nothing)."""
        from objrel.mutations import PRESETS

        def refuse(field: str, expected: str) -> ConfigError:
            return ConfigError(f"the form's {field} must be {expected}; got {getattr(self, field)!r}. "
                               "Nothing was started")

        if self.task not in TASKS:
            raise ConfigError(f"task must be one of {TASKS}, got {self.task!r}")
        for name in ("model", "weights", "dataset", "images", "plan", "name", "runtime"):
            if not isinstance(getattr(self, name), str):
                raise refuse(name, "text")
        if self.plan and self.plan not in PRESETS:
            raise refuse("plan", f"one of {', '.join(PRESETS)}")
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"runtime must be one of {RUNTIMES}, got {self.runtime!r}")
        offered = extra_operator_choices()
        if not isinstance(self.operators, (tuple, list)) or any(o not in offered for o in self.operators):
            raise refuse("operators", f"a list of {', '.join(offered)}")
        for name, low, high in (("vote_k", 1, MAX_VOTE_K), ("dilate", 0, MAX_DILATE_PX), ("seed", 0, MAX_SEED),
                                ("limit", 0, None)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None
                                                                                        and value > high):
                raise refuse(name, f"a whole number from {low}" + (f" to {high}" if high is not None else " up"))
        for name in ("test_all", "detected_only"):
            if not isinstance(getattr(self, name), bool):
                raise refuse(name, "on or off")
        return self

    def to_config(self, base: AnyConfig | None = None) -> AnyConfig:
        """The run's configuration: these fields over ``base`` (when it is a run of the same task) or the
        task's defaults.  Raises ConfigError for a field the form does not offer (``check``), a missing model
        or dataset or an invalid setting."""
        self.check()
        start = base_config(self.task, base)
        model = self.model.strip()
        if not model:
            raise ConfigError(f"name a {'detector' if self.task == DETECTOR else 'model'} to run")
        dataset, images = self.dataset.strip() or None, self.images.strip() or None
        if self.task == CLASSIFIER and dataset is None:
            raise ConfigError("a classifier run needs a dataset (an annotation file or 'demo')")
        changes = {"weights": self.weights.strip() or None, "dataset": dataset, "images": images,
                   "plan": self.plan or start.plan, "operators": tuple(self.operators), "vote_k": int(self.vote_k),
                   "dilate": int(self.dilate), "seed": int(self.seed), "limit": int(self.limit),
                   "name": self.name.strip() or None}
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"runtime must be one of {RUNTIMES}, got {self.runtime!r}")
        if hasattr(start, "runtime"):
            changes["runtime"] = self.runtime
        if self.task == DETECTOR:
            changes |= {"detector": model, "detected_only": bool(self.detected_only)}
        else:
            changes |= {"model": model, "test_all": bool(self.test_all)}
        return type(start).from_dict({**start.to_dict(), **changes})

