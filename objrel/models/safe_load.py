"""Load weights without unpickling arbitrary objects."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import torch

from objrel.errors import ConfigError, UnsafeWeightsError

# Characters of torch's key-mismatch report kept in a WeightsMismatchError (it lists every key).
MISMATCH_REPORT_CHARS = 400
# A weights archive may declare at most this many times its own size in unpacked members.  torch.save stores
# every member uncompressed (about 1x); torch.load would allocate whatever a compressed member declares, so a
# 4 MiB file of DEFLATE members could make it allocate 4 GiB.  Checked from the zip's directory before loading.
MAX_WEIGHTS_EXPANSION = 4
# The first bytes of a zip archive (torch.save's format since torch 1.6; torch.load reads it as a zip then).
ZIP_MAGIC = b"PK\x03\x04"


def check_archive(path) -> None:
    """Refuse a zip-format weights file whose members declare more than ``MAX_WEIGHTS_EXPANSION`` times the
    file's size, from the zip's directory alone (nothing is unpacked).  Files in torch's older pickle format
    pass: their tensors are read from the file itself."""
    p = Path(path)
    with open(p, "rb") as fh:
        if fh.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
            return
    size = p.stat().st_size
    try:
        with zipfile.ZipFile(p) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise UnsafeWeightsError(f"weights file {p.name} is not a readable torch archive: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    declared = sum(i.file_size for i in infos)
    if declared > MAX_WEIGHTS_EXPANSION * size:
        biggest = max(infos, key=lambda i: i.file_size)
        raise UnsafeWeightsError(
            f"weights file {p.name} ({size} bytes) declares {declared} bytes unpacked ({declared / size:.0f}x; member "
            f"{biggest.filename!r}: {biggest.file_size} bytes from {biggest.compress_size}); at most "
            f"{MAX_WEIGHTS_EXPANSION}x is accepted, since torch.save stores tensors uncompressed")


class WeightsMismatchError(ConfigError, RuntimeError):
    """A state-dict file whose tensors do not fit the network (torch reports this as a RuntimeError)."""


def load_state_dict(path) -> dict:
    """Read a state dict with ``torch.load(weights_only=True)``.

    Checkpoints that wrap the state dict (``{"state_dict": ...}`` or ``{"model": ...}``)
    are unwrapped.  A zip archive is first checked from its directory (``check_archive``): members that
    unpack to far more than the file's size are refused before torch allocates them.  A file that needs
    full unpickling (a pickled ``nn.Module`` or custom classes) is refused with ``UnsafeWeightsError``: unpickling
    can run any code the file's author chose.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"weights file {p} does not exist")
    if p.stat().st_size == 0:
        raise UnsafeWeightsError(f"weights file {p} is empty (0 bytes); expected a state dict saved with "
                                 f"torch.save(model.state_dict(), path)")
    check_archive(p)
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError, EOFError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "weights_only" in str(exc) or isinstance(exc, pickle.UnpicklingError):
            raise UnsafeWeightsError(
                f"refusing to load {p}: it needs full unpickling, which can execute arbitrary code "
                f"({msg}). Save the model's weights with torch.save(model.state_dict(), path) and load "
                f"that file instead."
            ) from exc
        raise UnsafeWeightsError(f"cannot read weights file {p}: {msg}") from exc
    for key in ("state_dict", "model_state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise UnsafeWeightsError(
            f"{p} holds a {type(obj).__name__}, not a state dict of tensors; expected torch.save(model.state_dict())"
        )
    # Strip the 'module.' prefix DataParallel adds.
    if obj and all(k.startswith("module.") for k in obj):
        obj = {k[len("module."):]: v for k, v in obj.items()}
    return obj


def load_weights_into(module: torch.nn.Module, path, what: str) -> torch.nn.Module:
    """Load the state-dict file ``path`` into ``module`` (every key must match) and return the module.

    what: the network as the error should name it (``"resnet18 with 3 classes"``).
    """
    try:
        module.load_state_dict(load_state_dict(path), strict=True)
    except RuntimeError as exc:
        report = " ".join(line.strip() for line in str(exc).splitlines())
        if len(report) > MISMATCH_REPORT_CHARS:
            report = report[:MISMATCH_REPORT_CHARS] + " ..."
        raise WeightsMismatchError(f"weights file {path} does not fit {what}: {report}") from exc
    return module
