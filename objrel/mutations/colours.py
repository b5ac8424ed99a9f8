"""Fill colours (RGB, 0-255)."""

# The three colours of EMSE21 s4.3.
THREE_COLOURS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "gray": (127, 127, 127),
    "white": (255, 255, 255),
}

# The 15-colour palette of EMSE21 s5.2.1: the three above plus twelve more.
PALETTE_15: dict[str, tuple[int, int, int]] = {
    **THREE_COLOURS,
    "red": (255, 0, 0),
    "maroon": (128, 0, 0),
    "yellow": (255, 255, 0),
    "olive": (128, 128, 0),
    "lime": (0, 255, 0),
    "green": (0, 128, 0),
    "aqua": (0, 255, 255),
    "teal": (0, 128, 128),
    "blue": (0, 0, 255),
    "navy": (0, 0, 128),
    "fuchsia": (255, 0, 255),
    "purple": (128, 0, 128),
}

# Nine common colours for RmvObjByRGB (ORMR Table I says "9 common RGB colors"
# without listing them; these are the primaries, secondaries and three grays).
NINE_COLOURS: dict[str, tuple[int, int, int]] = {
    k: PALETTE_15[k] for k in ("black", "gray", "white", "red", "lime", "blue", "yellow", "aqua", "fuchsia")
}


def parse_colour(colour) -> tuple[int, int, int]:
    """A colour name from PALETTE_15 or an ``[r, g, b]`` list of ints in 0..255."""
    if isinstance(colour, str):
        if colour not in PALETTE_15:
            raise ValueError(f"unknown colour {colour!r}; expected [r, g, b] or one of {sorted(PALETTE_15)}")
        return PALETTE_15[colour]
    try:
        r, g, b = (int(c) for c in colour)
    except (TypeError, ValueError):
        raise ValueError(f"colour must be a name or [r, g, b], got {colour!r}") from None
    if not all(0 <= c <= 255 for c in (r, g, b)):
        raise ValueError(f"colour components must be in 0..255, got {colour!r}")
    return r, g, b
