"""How many boxes an annotation file may hold: per image and in all.

A run holds every box of an image (and its mask) while it tests that image, and the loader holds every record
of the file; a hand-made file with a million boxes on one image once took a run to 5.7 GB.  An image with more
than ``MAX_BOXES_PER_IMAGE`` annotations becomes a skipped sample (``TOO_MANY_BOXES``, its reason saying how many
and the limit) and the run goes on; a file with more than ``MAX_BOXES_TOTAL`` annotations is refused whole,
before it is parsed where its bytes show it (``count_box_keys``), else right after.
"""

from __future__ import annotations

from objrel.errors import AnnotationError

# Most annotations one image may have (COCO's busiest image has under 100; LVIS under 800).
MAX_BOXES_PER_IMAGE = 1_000
# Most annotations one file may have (COCO train2017 has 860,001).
MAX_BOXES_TOTAL = 1_000_000
# The skip code of an image over MAX_BOXES_PER_IMAGE.
TOO_MANY_BOXES = "too-many-boxes"
# The key every COCO box record carries, as it appears in the file's bytes.
BOX_KEY = b'"bbox"'


def per_image_reason(n: int) -> str:
    """Why an image with ``n`` annotations is skipped."""
    return f"the image has {n:,} annotations; at most {MAX_BOXES_PER_IMAGE:,} per image are tested"


def check_total(n: int, what: str) -> None:
    """AnnotationError when ``what`` (the file, as messages name it) holds more than ``MAX_BOXES_TOTAL`` boxes."""
    if n > MAX_BOXES_TOTAL:
        raise AnnotationError(f"{what} holds {n:,} annotations; at most {MAX_BOXES_TOTAL:,} are read from one file")


def count_box_keys(raw: bytes) -> int:
    """How many times the box key appears in the raw bytes: at least the number of box records written plainly
    (a key spelled with escapes is counted after parsing instead)."""
    return raw.count(BOX_KEY)
