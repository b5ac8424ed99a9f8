"""Image preprocessing owned by the model adapter (ARCHITECTURE.md decision 3)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

from objrel.models.threads import parallel_each

RESIZE_MODES = ("stretch", "shorter-crop")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# EfficientNet-Lite (TF reference): (x - 127) / 128 in 0-255 units.
LITE_MEAN = (127.0 / 255.0,) * 3
LITE_STD = (128.0 / 255.0,) * 3


@dataclass(frozen=True)
class Preprocess:
    """RGB uint8 ``(H, W, 3)`` images -> float tensor ``(N, 3, size, size)``.

    size:   side of the square network input, in pixels.
    resize: ``stretch`` scales the whole image to size x size (no pixel of the object
            or background is cut away: the default, since the relations reason about
            the whole picture); ``shorter-crop`` scales the shorter side to
            ``size / crop_fraction`` and takes the centre crop (the usual ImageNet eval).
    mean, std: per-channel normalisation in 0..1 units.
    """

    size: int = 224
    resize: str = "stretch"
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    crop_fraction: float = 0.875

    def __post_init__(self):
        if self.resize not in RESIZE_MODES:
            raise ValueError(f"resize must be one of {RESIZE_MODES}, got {self.resize!r}")
        if self.size < 8:
            raise ValueError(f"input size must be >= 8 pixels, got {self.size}")

    def resize_one(self, image: np.ndarray) -> np.ndarray:
        s = self.size
        h, w = image.shape[:2]
        if self.resize == "stretch":
            interp = cv2.INTER_AREA if (h > s or w > s) else cv2.INTER_LINEAR
            return cv2.resize(image, (s, s), interpolation=interp)
        short = s / self.crop_fraction
        scale = short / min(h, w)
        nh, nw = max(s, round(h * scale)), max(s, round(w * scale))
        interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        big = cv2.resize(image, (nw, nh), interpolation=interp)
        y0, x0 = (nh - s) // 2, (nw - s) // 2
        return big[y0 : y0 + s, x0 : x0 + s]

    def __call__(self, images) -> torch.Tensor:
        """``(N, 3, size, size)`` float32, channels_last-strided (the NHWC buffer seen as NCHW, no copy).

        One resize per image, shared out over the cores (``parallel_each``), then torch's multithreaded
        ``x * scale + offset`` with ``scale = 1 / (255 std)`` and ``offset = -mean / std`` in float32
        (no float64 anywhere).
        """
        s = self.size
        batch = np.empty((len(images), s, s, 3), dtype=np.uint8)

        def resize_into(i: int) -> None:
            batch[i] = self.resize_one(images[i])

        parallel_each(resize_into, len(images))
        std = np.asarray(self.std, dtype=np.float32)
        scale = np.float32(1.0 / 255.0) / std
        offset = -np.asarray(self.mean, dtype=np.float32) / std
        x = torch.from_numpy(batch).permute(0, 3, 1, 2).float()  # keeps the NHWC strides
        return x.mul_(torch.from_numpy(scale).view(1, 3, 1, 1)).add_(torch.from_numpy(offset).view(1, 3, 1, 1))

    def to_dict(self) -> dict:
        return {"size": self.size, "resize": self.resize, "mean": list(self.mean), "std": list(self.std),
                "crop_fraction": self.crop_fraction}
