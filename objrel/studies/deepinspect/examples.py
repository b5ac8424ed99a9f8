"""Example images of an inspected class, rebuilt from the references an ``InspectResult`` keeps."""

from __future__ import annotations

from objrel.data import load_rgb, resolve_inside
from objrel.errors import BadSampleError
from objrel.studies.deepinspect.result import InspectResult


def example_images(result: InspectResult, class_name: str, limit: int = 4) -> list:
    """Up to ``limit`` example images ``(H, W, 3) uint8`` the model labelled ``class_name``.

    Rebuilt from their references: planted images from their recipe, dataset images from
    the dataset root (a file that is gone or unreadable is left out).
    """
    idx = result.class_index[result.position(class_name)]
    refs = list(result.examples.get(int(idx), ()))[:limit]
    kind = result.source.get("kind")
    if kind == "planted":
        # here, not at the top: the planted benchmark's module loads torch, which a dataset result never needs
        from objrel.studies.deepinspect.planted import PlantedSpec, example_image

        spec = PlantedSpec.from_dict(result.source.get("spec", {}))
        return [example_image(spec, r) for r in refs]
    out = []
    if kind == "dataset":
        root = result.source.get("root")
        for r in refs:
            try:
                out.append(load_rgb(resolve_inside(root, r)))
            except BadSampleError:
                continue
    return out
