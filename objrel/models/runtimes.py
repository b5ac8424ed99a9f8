"""What runs a classifier's forward pass: torch itself, or its network exported once to ONNX and run by
ONNX Runtime or OpenVINO.

On a 2-core CPU ONNX Runtime can run EfficientNet-Lite0 at about 2.5-3x torch's speed and OpenVINO close
to it, with probabilities equal to torch's within 1e-6 (``benchmarks/throughput.py`` measures it).

* ``export_onnx``: the network plus its output head (softmax or sigmoid) written once per (architecture,
  weights, input size, head) to the model cache (``$OBJREL_MODEL_CACHE``, default
  ``~/.cache/objrel/models``), named by a hash of those, so every later run and process reuses the file.
* ``ExportedClassifier``: a ``TorchClassifier`` whose ``forward`` runs the exported file.  Preprocessing and
  the one-colour fill mixing are the torch adapter's own, so every mutant reaches both runtimes as the same
  tensor.  OpenVINO is forced to f32 (its default on CPUs with bf16 differs from torch by ~3e-2).
* ``with_runtime(model, runtime)``: the adapter for a ``--runtime`` choice; ``auto`` takes the fastest
  runtime whose outputs match torch's within ``MATCH_TOLERANCE``, timed once per model and thread count on
  this machine and remembered beside the exported file (``choose_runtime``).

Only a plain ``TorchClassifier`` is exported: a subclass or a Python callable may do work outside its
``nn.Module`` that an exported graph would silently drop, so it runs on torch (``auto``) or is refused with
one line naming why (an explicit runtime).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import math
import os
import re
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from objrel.constants import AUTO_RUNTIME, CPU_DEVICE, DEFAULT_BATCH_SIZE, ONNXRUNTIME, OPENVINO, RUNTIMES, \
    MODEL_CACHE_ENV, RUNTIME_MATCH_TOLERANCE, TORCH_RUNTIME
from objrel.errors import ConfigError
from objrel.models.classifier import Classifier, TorchClassifier
from objrel.models.devices import cuda_index, is_cpu, use_device
from objrel.models.threads import configure_inference_threads

# Where exported networks and runtime measurements are kept (MODEL_CACHE_ENV; one folder per user by default).
DEFAULT_MODEL_CACHE = Path.home() / ".cache" / "objrel" / "models"
# ONNX operator set of the exported graphs: 17 is read by every ONNX Runtime and OpenVINO release of the
# last three years and has every operator torchvision's and EfficientNet's classifiers use.
ONNX_OPSET = 17
# Largest difference between a runtime's probabilities and torch's on the same batch for it to count as
# the same model (``auto`` never picks a runtime outside it; the tests hold each runtime to it).  Stated once in
# objrel.constants, where the verdicts' TIE_TOLERANCE is derived from it.
MATCH_TOLERANCE = RUNTIME_MATCH_TOLERANCE
# ``auto``'s measurement: one warm-up batch, then this many timed batches per runtime, of this size.
CHOICE_TIMED_BATCHES = 3
CHOICE_BATCH_SIZE = DEFAULT_BATCH_SIZE
# Seed of the random images the runtimes' outputs are compared with torch's on, and how many every exported
# adapter is checked on when it is built (a faithful export differs by ~1e-6; a broken one by far more).
CHOICE_SEED = 0
CHECK_IMAGES = 4
# The runtimes that run an exported file, with the Python package each needs.
EXPORTED_RUNTIMES = {ONNXRUNTIME: "onnxruntime", OPENVINO: "openvino"}


class RuntimeUnavailable(ConfigError):
    """A runtime cannot run this model here (not installed, or the model cannot be exported)."""


def model_cache_dir() -> Path:
    """The folder of exported networks: ``$OBJREL_MODEL_CACHE`` or ``~/.cache/objrel/models`` (created)."""
    path = Path(os.environ.get(MODEL_CACHE_ENV) or DEFAULT_MODEL_CACHE)
    path.mkdir(parents=True, exist_ok=True)
    return path


def installed_runtimes() -> tuple[str, ...]:
    """The runtimes this Python can run: torch always, then each exported runtime whose package imports."""
    found = [TORCH_RUNTIME]
    for runtime, package in EXPORTED_RUNTIMES.items():
        try:
            importlib.import_module(package)
        except ImportError:
            continue
        found.append(runtime)
    return tuple(found)


def runtime_version(runtime: str) -> str:
    """The installed version of ``runtime``'s package."""
    package = "torch" if runtime == TORCH_RUNTIME else EXPORTED_RUNTIMES[runtime]
    return str(getattr(importlib.import_module(package), "__version__", "?"))


def _head(model: TorchClassifier) -> str:
    """What the exported graph applies to the network's output: softmax, sigmoid or nothing."""
    if model.outputs != "logits":
        return "identity"
    return "softmax" if model.task == "single" else "sigmoid"


# Memory layouts of an exported graph's input: ``nhwc`` (channel-last; the graph's first operation moves the
# axes) or ``nchw`` (the network's own input).  Same outputs either way; objrel's preprocessing writes either
# with no transposing copy (``Preprocess(..., planar=True)`` writes NCHW), so each runtime gets the layout it
# runs fastest, measured in objrel runs on the demo (EfficientNet-Lite0, 2 cores, interleaved pairs): OpenVINO
# ran NCHW at 1.023 of NHWC (median of 10 pairs; the bare sessions 1.004-1.040), ONNX Runtime at 0.996 (it
# folds the move into its own layout change), so it keeps NHWC.
NHWC, NCHW = "nhwc", "nchw"
INPUT_LAYOUTS = {ONNXRUNTIME: NHWC, OPENVINO: NCHW}


class _WithHead(torch.nn.Module):
    """The network and its output head, as one graph to export, taking ``layout`` input."""

    def __init__(self, module: torch.nn.Module, head: str, layout: str = NHWC):
        super().__init__()
        self.module = module
        self.head = head
        self.layout = layout

    def forward(self, x):
        out = self.module(x.permute(0, 3, 1, 2) if self.layout == NHWC else x)
        if self.head == "softmax":
            return out.softmax(dim=1)
        if self.head == "sigmoid":
            return out.sigmoid()
        return out


def network_key(module: torch.nn.Module, settings: str, tag: str = "") -> str:
    """A hash naming an exported graph in the model cache: ``tag``, the module's class and printed layers, every
    weight and buffer, and ``settings`` (what else shapes the graph: input size, head, opset, torch's version)."""
    h = hashlib.sha256()
    h.update(f"{tag}{type(module).__module__}.{type(module).__qualname__}\n{module!r}\n".encode())
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}\n".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    h.update(settings.encode())
    return h.hexdigest()[:24]


def export_key(model: TorchClassifier, layout: str = NHWC) -> str:
    """The cache name of ``model``'s exported graph: a hash of its architecture (the module's class and
    printed layers), every weight and buffer, the input size, the head, the input layout, the opset and torch's
    version."""
    return network_key(model.module, f"size={model.preprocess.size} head={_head(model)} layout={layout} "
                                     f"opset={ONNX_OPSET} torch={torch.__version__}")


@contextlib.contextmanager
def _silenced():
    """Standard output and error sent to nothing for the block, at the file-descriptor level (the exporter's
    C++ side prints the whole traced graph when it fails)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def export_graph(key: str, what: str, build: Callable[[], tuple[torch.nn.Module, torch.Tensor]], options: dict,
                 meta: dict) -> Path:
    """The ONNX file ``key`` in the model cache, exported on first use from the ``(graph, example input)`` that
    ``build()`` makes, with the exporter's ``options`` (names, dynamic axes); written atomically (two processes
    exporting at once each write their own file and the last rename wins), beside a JSON note of ``meta``.
    Raises ``RuntimeUnavailable`` naming ``what`` (``model NAME``) and why when it cannot be exported."""
    folder = model_cache_dir()
    path = folder / f"{key}.onnx"
    if path.is_file():
        return path
    graph, example = build()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}-", suffix=".onnx")
    os.close(fd)
    try:
        # the exporter's deprecation and tracer notes, and the graph it prints when it fails, are not the user's
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad(), _silenced():
            warnings.simplefilter("ignore")
            torch.onnx.export(graph, (example,), tmp, opset_version=ONNX_OPSET, dynamo=False, **options)
        os.replace(tmp, path)
    except Exception as exc:  # any failure of the tracer or exporter: one line, and the runtime that works
        Path(tmp).unlink(missing_ok=True)
        raise RuntimeUnavailable(f"{what} cannot be exported to ONNX ({type(exc).__name__}: {first_line(exc)}); "
                                 f"run it with --runtime {TORCH_RUNTIME}") from exc
    (folder / f"{key}.json").write_text(json.dumps(
        {**meta, "opset": ONNX_OPSET, "torch": torch.__version__,
         "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    return path


def export_onnx(model: TorchClassifier, layout: str = NHWC) -> Path:
    """``model``'s network and head as an ONNX file in the model cache (``export_graph``), exported on first
    use.  Raises ``RuntimeUnavailable`` naming why when the network cannot be exported.  ``layout``: the
    input's (``NHWC``, objrel's, or ``NCHW``)."""
    if layout not in (NHWC, NCHW):
        raise ValueError(f"layout must be {NHWC!r} or {NCHW!r}, got {layout!r}")
    size = model.preprocess.size

    def build() -> tuple[torch.nn.Module, torch.Tensor]:
        shape = (2, size, size, 3) if layout == NHWC else (2, 3, size, size)
        return (_WithHead(model.module, _head(model), layout).eval(),
                torch.zeros(*shape, dtype=torch.float32, device=model.device))

    options = {"input_names": ["input"], "output_names": ["probabilities"],
               "dynamic_axes": {"input": {0: "batch"}, "probabilities": {0: "batch"}}}
    return export_graph(export_key(model, layout), f"model {model.name}", build, options,
                        {"model": model.name, "size": size, "head": _head(model), "layout": layout})


# Folders inside a message (``/a/b/``): left out of what a run records, so no server path reaches a visitor.
_FOLDERS = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.\-~]+)+[/\\]")
# Longest part of a runtime's or exporter's message kept in a refusal line.
MESSAGE_CHARS = 200


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type name when it has none), without folders, at most
    ``MESSAGE_CHARS`` long: what a refusal line quotes of a library's error."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return _FOLDERS.sub("", line)[:MESSAGE_CHARS]


def _require(runtime: str) -> None:
    if runtime not in installed_runtimes():
        raise RuntimeUnavailable(f"runtime {runtime} is not installed (pip install {EXPORTED_RUNTIMES[runtime]}); "
                                 f"--runtime {TORCH_RUNTIME} works without it")


# ONNX Runtime's session settings: idle intra-op threads spin (1, its default) or sleep (0); and, with
# spinning, they stop spinning as soon as a run returns (1) rather than after their spin time (0, its default).
_ORT_SPINNING = "session.intra_op.allow_spinning"
_ORT_SPINNING_STOP = "session.force_spinning_stop"


# ONNX Runtime's GPU provider, and its settings: f32 convolutions and matrix products (its default lets cuDNN
# and cuBLAS use TF32, ~1e-3 from torch's f32), and cuDNN's heuristic choice of convolution algorithm, as torch
# makes it.  Its default, trying every algorithm, does so again for each new batch size, and a run with lazy
# votes sends batches of every size from 1 up, so the heuristic runs ResNet-50 about 10% faster on a data
# centre GPU (``benchmarks/gpu.py`` measures both).
_ORT_CUDA = "CUDAExecutionProvider"
_ORT_CUDA_OPTIONS = {"use_tf32": "0", "cudnn_conv_algo_search": "HEURISTIC"}


def _ort_providers(ort, device: str) -> list:
    """The providers of a session on ``device``: the CPU's, or the CUDA provider on that GPU (the CPU's after it,
    for the few operators it lacks); RuntimeUnavailable when this ONNX Runtime has no CUDA provider."""
    if is_cpu(device):
        return ["CPUExecutionProvider"]
    if _ORT_CUDA not in ort.get_available_providers():
        raise RuntimeUnavailable(f"onnxruntime {ort.__version__} here has no CUDA provider (pip install "
                                 f"onnxruntime-gpu); --runtime {TORCH_RUNTIME} runs on {device}")
    return [(_ORT_CUDA, {"device_id": str(cuda_index(device)), **_ORT_CUDA_OPTIONS}), "CPUExecutionProvider"]


class _OnnxRuntimeSession:
    """An ONNX Runtime session: ``threads`` intra-op threads, one inter-op thread, every graph optimisation, on
    the CPU or (``device`` ``cuda[:N]``) ONNX Runtime's CUDA provider."""

    def __init__(self, path: Path, threads: int, device: str = CPU_DEVICE):
        import onnxruntime as ort

        on_gpu = not is_cpu(device)
        options = ort.SessionOptions()
        # on a GPU the CPU threads only launch kernels: one, sleeping, leaves the cores to decoding and mutating
        options.intra_op_num_threads = 1 if on_gpu else threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: its notes about unused initialisers are not the user's
        # Intra-op threads spin between the operators of one run (ONNX Runtime's default: 3% faster than
        # sleeping on EfficientNet-Lite0 here) and stop spinning when the run returns: the engine's per-image
        # work (decode, resize, fills) runs on the same cores just after each forward pass, and threads left
        # spinning for their whole spin time would take the cores from it.
        options.add_session_config_entry(_ORT_SPINNING, "0" if on_gpu else "1")
        options.add_session_config_entry(_ORT_SPINNING_STOP, "1")
        self.session = ort.InferenceSession(str(path), options, providers=_ort_providers(ort, device))
        if on_gpu and self.session.get_providers()[0] != _ORT_CUDA:
            # ONNX Runtime falls back to the CPU, with a log line only, when its CUDA libraries fail to load
            raise RuntimeUnavailable(f"onnxruntime could not start its CUDA provider on {device} (CUDA or cuDNN "
                                     f"libraries not found); --runtime {TORCH_RUNTIME} runs on {device}")
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(f"the exported graph takes {len(inputs)} inputs, expected the image batch alone")
        self.input = inputs[0].name

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: x})[0]


class _OpenVinoSession:
    """An OpenVINO CPU model compiled for f32 inference with ``threads`` threads, latency-oriented."""

    def __init__(self, path: Path, threads: int, device: str = CPU_DEVICE):
        if not is_cpu(device):
            raise RuntimeUnavailable(f"objrel runs {OPENVINO} on the CPU only; for {device} use --runtime "
                                     f"{ONNXRUNTIME} or {TORCH_RUNTIME}")
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": int(threads),
                  "PERFORMANCE_HINT": "LATENCY"}
        self.compiled = core.compile_model(str(path), "CPU", config)
        self.request = self.compiled.create_infer_request()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.request.infer({0: x})
        return np.array(self.request.get_output_tensor(0).data, copy=True)


_SESSIONS = {ONNXRUNTIME: _OnnxRuntimeSession, OPENVINO: _OpenVinoSession}


class ExportedClassifier(TorchClassifier):
    """A ``TorchClassifier`` whose forward pass runs its exported network in ONNX Runtime or OpenVINO.

    Built by ``with_runtime``.  The session opens at the first forward pass, with the thread count
    ``configure_inference_threads`` settled on for the process (a Ray actor's one thread included); it is
    not pickled (a copy sent to another process opens its own)."""

    def __init__(self, model: TorchClassifier, runtime: str, choice: "RuntimeChoice | None" = None,
                 layout: str | None = None):
        if runtime not in EXPORTED_RUNTIMES:
            raise ValueError(f"runtime must be one of {tuple(EXPORTED_RUNTIMES)}, got {runtime!r}")
        _require(runtime)
        base = {k: v for k, v in model.config.items() if k not in ("preprocess", "outputs")}
        # the module stays where the torch model has it (its device: where the runtime runs the graph)
        super().__init__(model.module, model.class_names, model.preprocess, task=model.task,
                         threshold=model.threshold, name=model.name, outputs=model.outputs, device=model.device,
                         config=base, channels_last=False, threads=model.threads)
        # ``prepare`` hands over the batch in the graph's input layout (``INPUT_LAYOUTS``, or ``layout``: checked by
        # ``export_onnx``), as the preprocessing wrote it: no copy.  Set after the base's set-up, which would move
        # the shared module's weights.
        self.layout = layout or INPUT_LAYOUTS[runtime]
        self.channels_last = self.layout == NHWC
        self.runtime = runtime
        self.runtime_choice = choice
        self.onnx_path = export_onnx(model, self.layout)
        self.export_key = self.onnx_path.stem
        self._session = None
        self.max_difference = self._check_against(model)

    def _check_against(self, model: TorchClassifier) -> float:
        """The largest difference between this runtime's probabilities and torch's on ``CHECK_IMAGES`` seeded
        random images; raises ``RuntimeUnavailable`` above ``MATCH_TOLERANCE`` (a tracer that froze part of
        the network into a constant exports a graph that runs, but is another model)."""
        rng = np.random.default_rng(CHOICE_SEED)
        size = model.preprocess.size
        x = model.prepare([rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(CHECK_IMAGES)])
        try:
            got = self._forward(x)
        except RuntimeUnavailable:
            raise
        except Exception as exc:  # the runtime refused the graph: one line, and the runtime that works
            first = first_line(exc)
            raise RuntimeUnavailable(f"model {model.name} exported to ONNX cannot run on {self.runtime} "
                                     f"({type(exc).__name__}: {first}); run it with --runtime {TORCH_RUNTIME}") from exc
        difference = float(np.abs(got - model._forward(x)).max()) if got.shape == (len(x), model.num_classes) \
            else math.inf
        if not difference <= MATCH_TOLERANCE:
            raise RuntimeUnavailable(f"model {model.name} exported to ONNX gives other outputs on {self.runtime} "
                                     f"(differs from torch by {difference:.1e}, more than {MATCH_TOLERANCE:.0e}); "
                                     f"run it with --runtime {TORCH_RUNTIME}")
        return difference

    def enable_compile(self) -> None:
        """``torch.compile`` is torch's own: an exported runtime leaves it off."""
        self.compile = False

    @property
    def input_device(self) -> str:
        """The runtime takes the batch as a host array, whatever device it runs on."""
        return CPU_DEVICE

    def _open(self):
        if self._session is None:
            threads = configure_inference_threads(self.threads)
            self._session = _SESSIONS[self.runtime](self.onnx_path, threads, self.device)
        return self._session

    def _forward(self, x: torch.Tensor) -> np.ndarray:
        session = self._open()
        # the batch as the preprocessing wrote it, in the graph's layout: no copy (one only for a batch laid out
        # otherwise, such as a torch adapter's)
        x = x.detach().cpu()
        arr = np.ascontiguousarray((x.permute(0, 2, 3, 1) if self.layout == NHWC else x).numpy(), dtype=np.float32)
        return np.asarray(session(arr), dtype=np.float32)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_session"] = None
        return state

    def describe(self) -> dict:
        """The torch adapter's record plus the runtime's version, the precision, the export (and its input layout)
        and its difference."""
        return {**super().describe(), "runtime_version": runtime_version(self.runtime), "precision": "f32",
                "input_layout": self.layout,
                "onnx_export": self.export_key, "max_difference_from_torch": self.max_difference}


@dataclass(frozen=True)
class RuntimeChoice:
    """What ``auto`` measured for one model on this machine, and what it chose.

    runtime:        the chosen runtime;
    reason:         one line saying why;
    images_per_s:   each runtime's speed on the same batches (images/s), torch's included;
    max_difference: each exported runtime's largest probability difference from torch's;
    threads:        the intra-op threads every runtime was timed with.
    """

    runtime: str
    reason: str
    images_per_s: dict
    max_difference: dict
    threads: int

    def to_dict(self) -> dict:
        """The choice as a plain dict (the run's model record, the cache file)."""
        return asdict(self)


def remembered_choice(key: str, threads: int, measure: Callable[[], RuntimeChoice],
                      device_tag: str = "") -> RuntimeChoice:
    """The runtime choice for the exported network ``key`` at ``threads`` threads (``device_tag``: ``-cuda0`` for
    a GPU, empty for the CPU): read back from the model cache, or ``measure()``d now and written there
    (atomically) for every later run and process.  A choice of a runtime this Python cannot run (the cache
    shared with an installation that has the runtimes extra) is measured again."""
    path = model_cache_dir() / f"{key}.choice-{threads}t{device_tag}.json"
    if path.is_file():
        try:
            choice = RuntimeChoice(**json.loads(path.read_text()))
            if choice.runtime in installed_runtimes():
                return choice
        except (ValueError, TypeError):
            pass  # a damaged or older file: measure again
    choice = measure()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(choice.to_dict()))
    os.replace(tmp, path)
    return choice


def fastest_matching(threads: int, torch_speed: float, candidate: Callable[[str], tuple[float, Callable[[], float]]],
                     tolerance: float, digits: int) -> RuntimeChoice:
    """The fastest of torch (``torch_speed`` images/s) and every installed exported runtime that matches it.

    ``candidate(runtime)`` builds the runtime's adapter and returns its largest difference from torch and a
    function that times it (images/s), or raises ``RuntimeUnavailable``; a runtime whose difference is above
    ``tolerance`` is left out, saying so in the reason.  Speeds are kept to ``digits`` decimals."""
    speeds = {TORCH_RUNTIME: torch_speed}
    diffs: dict[str, float] = {}
    notes: list[str] = []
    for runtime in EXPORTED_RUNTIMES:
        if runtime not in installed_runtimes():
            notes.append(f"{runtime} not installed")
            continue
        try:
            diffs[runtime], timed = candidate(runtime)
        except RuntimeUnavailable as exc:
            notes.append(str(exc))
            continue
        if diffs[runtime] > tolerance:
            notes.append(f"{runtime} differs from torch by {diffs[runtime]:.1e} (> {tolerance:.0e})")
            continue
        speeds[runtime] = timed()
    best = max(speeds, key=speeds.get)
    ranked = ", ".join(f"{r} {v:.{digits}f}" for r, v in sorted(speeds.items(), key=lambda kv: -kv[1]))
    reason = f"fastest matching runtime at {threads} threads (images/s: {ranked})"
    if notes:
        reason += "; " + "; ".join(notes)
    return RuntimeChoice(best, reason, {k: round(v, digits + 1) for k, v in speeds.items()}, diffs, threads)


def _timed(fn, batches: list) -> float:
    """images/s of ``fn`` over ``batches`` after one warm-up call."""
    fn(batches[0])
    start = time.perf_counter()
    for b in batches:
        fn(b)
    return sum(len(b) for b in batches) / (time.perf_counter() - start)


def choose_runtime(model: TorchClassifier) -> RuntimeChoice:
    """The fastest installed runtime whose probabilities match torch's within ``MATCH_TOLERANCE`` for
    ``model`` here, measured once per (model, thread count) and then read back from the model cache."""
    threads = configure_inference_threads(model.threads)

    def measure() -> RuntimeChoice:
        rng = np.random.default_rng(CHOICE_SEED)
        size = model.preprocess.size
        images = [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(CHOICE_BATCH_SIZE)]
        x = model.prepare(images)
        batches = [x] * CHOICE_TIMED_BATCHES
        reference = model._forward(x)

        def candidate(runtime: str) -> tuple[float, Callable[[], float]]:
            exported = ExportedClassifier(model, runtime)
            # timed on the batch as its own ``prepare`` lays it out (its input layout, on the host), as in a run
            host = [exported.prepare(images)] * CHOICE_TIMED_BATCHES
            return float(np.abs(exported._forward(x) - reference).max()), lambda: _timed(exported._forward, host)

        return fastest_matching(threads, _timed(model._forward, batches), candidate, MATCH_TOLERANCE, digits=0)

    tag = "" if is_cpu(model.device) else f"-cuda{cuda_index(model.device)}"
    layouts = ",".join(f"{r}={lay}" for r, lay in sorted(INPUT_LAYOUTS.items()))  # a choice made on other layouts
    return remembered_choice(f"{export_key(model)}-{hashlib.sha256(layouts.encode()).hexdigest()[:8]}", threads,
                             measure, tag)


def with_runtime(model: Classifier, runtime: str) -> Classifier:
    """``model`` run by ``runtime`` (one of ``RUNTIMES``).

    ``torch`` returns the model itself; ``onnxruntime`` / ``openvino`` an ``ExportedClassifier`` (raises
    ``RuntimeUnavailable`` naming why when the model cannot be exported or the runtime is missing); ``auto``
    the fastest matching runtime (``choose_runtime``), or torch for a model that is not a plain
    ``TorchClassifier`` or asks for ``torch.compile``.  The returned adapter's ``describe()`` names the
    runtime that runs it."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    if isinstance(model, ExportedClassifier):
        if runtime in (AUTO_RUNTIME, model.runtime):
            return model
        raise ConfigError(f"model {model.name} already runs on {model.runtime}; load it again for {runtime}")
    if runtime == TORCH_RUNTIME:
        return model
    plain = type(model) is TorchClassifier
    if plain and not is_cpu(model.device):
        use_device(str(model.device))  # a model put on a GPU outside load_classifier: f32 there too
    if runtime == AUTO_RUNTIME:
        if not plain or model.compile:
            return model
        choice = choose_runtime(model)
        if choice.runtime == TORCH_RUNTIME:
            model.runtime_choice = choice
            return model
        return ExportedClassifier(model, choice.runtime, choice)
    if not plain:
        raise RuntimeUnavailable(f"model {model.name} is {type(model).__name__}, not a plain torch network: objrel "
                                 f"cannot export it for {runtime}; run it with --runtime {TORCH_RUNTIME}")
    return ExportedClassifier(model, runtime)
