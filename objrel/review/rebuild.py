"""Rebuild a source image and its mutants from stored rows (the store keeps recipes, not pixels)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from objrel.data import load_rgb, resolve_inside
from objrel.data.sample import TargetObject
from objrel.mutations import Mutation, Plan, Target, build_target, derive_seed, make_mutant
from objrel.store import Store
from objrel.store import detections as D


@dataclass(frozen=True)
class Rebuilt:
    image: np.ndarray          # (H, W, 3) uint8 RGB
    target: Target
    mutant: np.ndarray | None  # None when the mutation key is "source"
    mutation: Mutation | None
    seed: int | None


def source_of(store: Store, run_id: int, sample_id: str) -> tuple[np.ndarray, Target]:
    """Decode the stored sample's source image (inside the dataset root) and its target."""
    run = store.get_run(run_id)
    row = store.sample(run_id, sample_id)
    if row["status"] == "skipped":
        raise ValueError(f"sample {sample_id!r} of run {run_id} was skipped ({row['skip_reason']}); nothing to rebuild")
    path = resolve_inside(run.dataset_config["root"], row["rel_path"])
    image = load_rgb(path, (row["width"], row["height"]))
    objects = tuple(TargetObject.from_dict(o) for o in row["objects"])
    plan = Plan.from_dict(run.plan)
    return image, build_target(objects, row["width"], row["height"], plan.dilate)


def rebuild_mutant(store: Store, run_id: int, sample_id: str, mutation_key: str) -> Rebuilt:
    """The exact mutant the run fed to the model: same pixels, target, operator, params and seed."""
    image, target = source_of(store, run_id, sample_id)
    if mutation_key == "source":
        return Rebuilt(image, target, None, None, None)
    run = store.get_run(run_id)
    plan = Plan.from_dict(run.plan)
    mutation = next((m for m in plan.mutations if m.key == mutation_key), None)
    if mutation is None:
        raise KeyError(f"run {run_id} has no mutation {mutation_key!r}; its plan has {[m.key for m in plan.mutations]}")
    seed = derive_seed(run.seed, sample_id, mutation_key)
    return Rebuilt(image, target, make_mutant(image, target, mutation, seed), mutation, seed)


def unit_source_of(store: Store, run_id: int, unit_id: str) -> tuple[np.ndarray, Target]:
    """A detection unit's source image (its image's row, inside the dataset root) and its target: the unit's
    associated object alone (``objrel.store.detections``)."""
    run = store.get_run(run_id)
    unit = D.unit(store, run_id, unit_id)
    row = store.sample(run_id, unit.image_id)
    image = load_rgb(resolve_inside(run.dataset_config["root"], row["rel_path"]), (row["width"], row["height"]))
    plan = Plan.from_dict(run.plan)
    return image, build_target((TargetObject.from_dict(unit.object),), row["width"], row["height"], plan.dilate)


def rebuild_unit_mutant(store: Store, run_id: int, unit_id: str, mutation_key: str) -> Rebuilt:
    """The exact mutant a detection run fed to the detector for one unit (seed from run seed, unit id, key)."""
    image, target = unit_source_of(store, run_id, unit_id)
    if mutation_key == "source":
        return Rebuilt(image, target, None, None, None)
    run = store.get_run(run_id)
    mutations = Plan.from_dict(run.plan).mutations
    mutation = next((m for m in mutations if m.key == mutation_key), None)
    if mutation is None:
        raise KeyError(f"run {run_id} has no mutation {mutation_key!r}; its plan has {[m.key for m in mutations]}")
    seed = derive_seed(run.seed, unit_id, mutation_key)
    return Rebuilt(image, target, make_mutant(image, target, mutation, seed), mutation, seed)
