"""Tables fit their container: a frame whose columns would be wider than the budget gets widths that fit."""

from __future__ import annotations

import pandas as pd

from objrel.app.tables import CELL_PADDING_PX, CHAR_PX, MIN_COLUMN_PX, TEXT_COLUMN_MAX_PX, fitted_columns


def _widths(cfg: dict) -> dict:
    return {c: v.get("width") for c, v in cfg.items() if isinstance(v, dict)}


def test_a_wide_table_gets_widths_that_sum_within_the_budget():
    # 12 columns of 30-character text: 12 x (30 x 7.5 + 24) = 2,988 px left to themselves
    df = pd.DataFrame({f"column {i}": ["x" * 30, "y" * 30] for i in range(12)})
    widths = _widths(fitted_columns(df, budget_px=900))
    assert len(widths) == 12 and all(isinstance(w, int) for w in widths.values())
    assert sum(widths.values()) <= 900
    # the budget is shared evenly when every column is as wide: 900 // 12 = 75
    assert set(widths.values()) == {75}


def test_narrow_columns_keep_their_width_and_the_wide_ones_share_the_rest():
    df = pd.DataFrame({"run": [1, 2], "name": ["n" * 100, "m" * 100], "path": ["p" * 100, "q" * 100]})
    widths = _widths(fitted_columns(df, budget_px=300))
    # 'run' is drawn at its label's width (3 x 7.5 + 24 = 46.5 -> 46 px); the two text columns share 254 px
    assert widths["run"] == int(3 * CHAR_PX + CELL_PADDING_PX)
    assert widths["name"] == widths["path"] == (300 - widths["run"]) // 2


def test_a_table_within_the_budget_is_left_alone_except_for_long_text():
    df = pd.DataFrame({"a": [1, 2], "b": ["short", "text"]})
    assert _widths(fitted_columns(df, budget_px=900)) == {}
    long = pd.DataFrame({"a": [1], "b": ["z" * 80]})
    assert _widths(fitted_columns(long, budget_px=900)) == {"b": TEXT_COLUMN_MAX_PX}


def test_columns_are_never_squeezed_below_the_floor():
    df = pd.DataFrame({f"c{i}": ["w" * 20] for i in range(40)})
    widths = _widths(fitted_columns(df, budget_px=900))
    assert set(widths.values()) == {MIN_COLUMN_PX}


def test_a_missing_number_shows_the_missing_mark_not_none():
    from objrel.app.formats import MISSING
    from objrel.app.tables import missing_numbers_as_text, percent_columns, share_columns

    # a precision with nothing decided yet (NaN) beside a decided one: 62.5% and 0.25 as a share
    df = pd.DataFrame({"run": [1, 2], "precision": [float("nan"), 62.5], "share": [0.25, None]})
    shown, cfg = missing_numbers_as_text(df, {**percent_columns(df, ["precision"]), **share_columns(df, ["share"])})
    assert list(shown["precision"]) == [MISSING, "62.5%"]
    assert list(shown["share"]) == ["25.0%", MISSING]
    assert list(shown["run"]) == [1, 2] and cfg["precision"]["type_config"]["type"] == "text"
    assert not df["precision"].isna().sum() == 0     # the frame given is left as it was (the CSV keeps numbers)
