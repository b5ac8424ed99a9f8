"""``objrel paper-check``: seed 000 Tables 1-3 through objrel's precision and Cochran code."""

from __future__ import annotations

import json

from objrel.cli import paper
from objrel.cli.main import main


def test_paper_check_runs_and_flags_the_papers_inconsistencies(capsys):
    assert main(["paper-check"]) == 0
    out = capsys.readouterr().out
    # Table 1's sample sizes do not follow Cochran: 384.15 / (1 + 383.15 / 826) = 262.4 -> 263, not 311
    assert "Cochran's formula gives 263 of 826, the paper drew 311" in out
    # Table 2's totals do not add up: 1,030 + 8 + 34 = 1,072, not 1,069
    assert "1030 + 8 + 34 = 1072, not the sample size 1069" in out
    assert "the totals do not add up" in out


def test_paper_check_figures():
    rows = {(c.table, c.row, c.quantity): c for c in paper.checks()}
    cochran = "sample size (Cochran, 95%, e = 0.05, p = 0.5)"
    # Tables 2 and 3 follow Cochran: 3,634 -> 384.15 / (1 + 383.15 / 3634) = 347.5 -> 348
    assert rows[("Table 2", "NASNetLarge", cochran)].status == paper.OK
    assert rows[("Table 3", "MR-1", cochran)].reproduced == 275
    # every Table 1 row misses it (263, 182, 141 against 311, 194, 149)
    assert [rows[("Table 1", m, cochran)].reproduced for m in ("NASNetLarge", "ResNet101", "MobileNet")] \
        == [263, 182, 141]
    assert all(rows[("Table 1", m, cochran)].status == paper.MISMATCH
               for m in ("NASNetLarge", "ResNet101", "MobileNet"))
    # the published precisions are reproduced: 202 / 311 = 65.0%, 1,030 / 1,069 = 96.4%
    assert rows[("Table 1", "NASNetLarge", "true positive %")].reproduced == 65.0
    assert rows[("Table 2", "Total", "true positive %")].status == paper.OK
    # Table 2's MobileNet row: 351 + 0 + 16 = 367 != 364; its 0.07% is 0.75%
    assert rows[("Table 2", "MobileNet", "tp + fp + uncertain = sample size")].reproduced == 367
    assert rows[("Table 2", "Total", "false positive %")].reproduced == 0.75
    bad = {(c.table, c.row) for c in rows.values() if c.status == paper.MISMATCH}
    assert bad == {("Table 1", "NASNetLarge"), ("Table 1", "ResNet101"), ("Table 1", "MobileNet"),
                   ("Table 2", "MobileNet"), ("Table 2", "Total")}


def test_paper_check_json(capsys):
    assert main(["paper-check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sum(d["status"] == "MISMATCH" for d in data) == 6
