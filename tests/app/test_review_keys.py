"""The Review page's key listener: a constant script that survives Streamlit's sanitiser."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from objrel.app import review_keys


def body() -> str:
    script = review_keys.key_script()
    assert script.startswith("<script>") and script.endswith("</script>")
    return script[len("<script>"):-len("</script>")]


def test_the_script_holds_no_markup_the_sanitiser_would_drop_it_for():
    # DOMPurify removes an element whose text matches <[/\w] (markup inside text): the listener would be gone
    assert not re.search(r"<[/\w]", body())


def test_every_placeholder_is_filled_with_the_pages_keys():
    text = body()
    assert not re.search(r"__[A-Z]+__", text)
    for key in (review_keys.DECISION_KEY, review_keys.CALL_KEY_PREFIX, review_keys.REASON_KEY_PREFIX,
                review_keys.VALIDITY_KEY_PREFIX, review_keys.NOTE_KEY_PREFIX, review_keys.NEXT_KEY_PREFIX,
                review_keys.PREV_KEY_PREFIX, review_keys.SKIP_KEY_PREFIX, review_keys.UNDO_KEY_PREFIX,
                review_keys.EVIDENCE_KEY):
        assert key in text


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("node") is None, reason="node checks the script's syntax where it is installed")
def test_the_script_is_valid_javascript(tmp_path):
    path = tmp_path / "keys.js"
    path.write_text(body())
    subprocess.run(["node", "--check", str(path)], check=True)


def test_the_legend_names_every_key_the_listener_handles():
    legend = review_keys.legend_markdown()
    for key in ("T / F / U", "1 2 3", "V / I / Q", "/", "N / P", "S", "Z", "M L H B"):
        assert f"`{key}`" in legend


def test_an_items_keys_are_plain_and_its_own_whatever_its_sample_id():
    """Streamlit turns a key into a CSS class with every other character made ``-``: ids that differ only there
    (or that spell another control's key) must still give each item keys of its own, in plain characters."""
    ids = ["img 1", "img/1", "img.1", "cat st.key.judge_fp_", "</script><script>alert(1)</script>", "x" * 300]
    tails = [review_keys.item_suffix(7, "MR-2", sid) for sid in ids]
    assert len(set(tails)) == len(ids)
    assert all(re.fullmatch(r"7_MR-2_[0-9a-f]{16}", t) for t in tails)
    assert review_keys.item_suffix(7, "MR-2", "img 1") == tails[0]          # the same item, the same keys
