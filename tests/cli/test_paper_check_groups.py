"""``objrel paper-check`` sorts what it cannot reproduce: errors in EMSE21 itself, errors that only carry one of
those into a sum, and figures that rest on an assumption the paper does not state (named in the note)."""

from __future__ import annotations

import json

import pytest

from objrel.cli import paper
from objrel.cli.main import main


def test_paper_check_prints_the_mismatches_in_three_named_groups(capsys):
    assert main(["paper-check"]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("36 of 42 published figures reproduced; 6 not:"):].splitlines()
    heads = [n for n, line in enumerate(tail) if not line.startswith("  - ")]
    assert [tail[n] for n in heads] == [
        "36 of 42 published figures reproduced; 6 not:",
        "Errors in the paper (its own figures disagree): 2",
        "Errors carried over (a figure that sums an error above): 1",
        "Figures that rest on an assumption the paper does not state: 3",
    ]
    errors, carried, assumed = tail[heads[1] + 1:heads[2]], tail[heads[2] + 1:heads[3]], tail[heads[3] + 1:]
    # 351 + 0 + 16 = 367 calls for a sample of 364; 8 / 1069 = 0.75%, printed 0.07%
    assert errors == ["  - Table 2, MobileNet: tp + fp + uncertain = sample size: 351 + 0 + 16 = 367, "
                      "not the sample size 364",
                      "  - Table 2, Total: false positive %: 8 of 1069 is 0.75%, printed as 0.07%"]
    # the Total's 1072 - 1069 = 3 extra calls are MobileNet's 367 - 364
    assert len(carried) == 1 and carried[0].startswith("  - Table 2, Total: tp + fp + uncertain = sample size: ")
    assert carried[0].endswith("the 3 extra calls are those of MobileNet (+3) summed into the Total")
    assert [line.split(":")[0] for line in assumed] == ["  - Table 1, NASNetLarge", "  - Table 1, ResNet101",
                                                        "  - Table 1, MobileNet"]
    assert all("states 95% confidence but not e = 0.05, p = 0.5" in line for line in assumed)


def test_each_mismatch_carries_its_group_and_the_json_says_it(capsys):
    rows = {(c.table, c.row, c.quantity): c for c in paper.checks()}
    calls = "tp + fp + uncertain = sample size"
    assert rows[("Table 2", "MobileNet", calls)].group == paper.PAPER_ERROR
    assert rows[("Table 2", "Total", "false positive %")].group == paper.PAPER_ERROR
    assert rows[("Table 2", "Total", calls)].group == paper.CARRIED
    cochran = "sample size (Cochran, 95%, e = 0.05, p = 0.5)"
    assert {rows[("Table 1", m, cochran)].group for m in ("NASNetLarge", "ResNet101", "MobileNet")} \
        == {paper.ASSUMPTION}
    assert all(c.group == "" for c in rows.values() if c.status == paper.OK)
    assert main(["paper-check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(d["group"] for d in data if d["status"] == paper.MISMATCH) == sorted(
        [paper.PAPER_ERROR, paper.PAPER_ERROR, paper.CARRIED] + [paper.ASSUMPTION] * 3)


@pytest.mark.parametrize(("population", "sample", "margin"), [(826, 311, 0.0439), (344, 194, 0.0465),
                                                             (222, 149, 0.0461), (3634, 348, 0.05)])
def test_the_margin_a_table_1_sample_would_need(population, sample, margin):
    """n0 = n (N - 1) / (N - n), e = 1.96 sqrt(0.25 / n0): 311 of 826 gives n0 = 311 * 825 / 515 = 498.2 and
    e = 0.0439; Table 2's NASNetLarge (348 of 3634) comes back to about the 0.05 its Cochran size rests on."""
    assert paper.implied_margin(population, sample) == pytest.approx(margin, abs=5e-4)
