"""The app's page icon, drawn here: no emoji or icon font that a browser would fetch from outside."""

from __future__ import annotations

from functools import lru_cache

from PIL import Image, ImageDraw

ICON_SIDE = 64
# A target object outlined on a background: objrel's subject.
BACKGROUND = (236, 240, 244)
OUTLINE = (200, 40, 40)
OBJECT = (40, 90, 160)


@lru_cache(maxsize=1)
def page_icon() -> Image.Image:
    """A small RGB image: a filled disc (the object) inside a red box (its annotation)."""
    im = Image.new("RGB", (ICON_SIDE, ICON_SIDE), BACKGROUND)
    d = ImageDraw.Draw(im)
    m = ICON_SIDE // 8
    d.rectangle((m, m, ICON_SIDE - m, ICON_SIDE - m), outline=OUTLINE, width=max(2, ICON_SIDE // 16))
    c = ICON_SIDE // 4
    d.ellipse((c, c, ICON_SIDE - c, ICON_SIDE - c), fill=OBJECT)
    return im
