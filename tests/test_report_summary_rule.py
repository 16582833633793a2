"""A summary row is never kinder than the worst verdict box of its section."""

import numpy as np
import pytest

from changerate_bayes.report import render_page, section_outcome, summary_row, verdict_boxes, verdict_html

META = {
    "preset": "quick",
    "seed": 1,
    "generated": "today",
    "total_seconds": 0.25,
    "version": "0",
    "versions": {"python": "3"},
    "studies": ["a"],
}


def _boxes(*kinds):
    return "".join(str(verdict_html(f"box {i}", kind=k)) for i, k in enumerate(kinds))


@pytest.mark.parametrize(
    "row_kind, boxes, expected",
    [
        ("holds", ("holds", "fails"), "fails"),  # the closed-loop case: row "holds", a "Does not hold" box
        ("finding", ("finding", "fails"), "fails"),  # the dynamic-rate case: row "finding", a red box
        ("holds", ("mixed", "holds"), "mixed"),
        ("mixed", ("fails", "fails"), "fails"),
        ("fails", ("holds",), "fails"),  # never made kinder either
        ("mixed", ("holds", "finding"), "mixed"),
        ("holds", ("finding",), "holds"),  # a finding about the data is no failure
        ("finding", ("holds",), "finding"),
        ("holds", (), "holds"),
    ],
)
def test_row_takes_the_worst_box(row_kind, boxes, expected):
    row = summary_row(verdict="the claim", key_number="1", kind=row_kind)
    out = section_outcome(row, _boxes(*boxes))
    assert out["kind"] == expected
    assert out["key_number"] == "1" and row["kind"] == row_kind  # the input row is not changed
    if expected != row_kind:
        n = boxes.count(expected)
        assert out["verdict"].startswith("the claim. But ") and f"{n} check" in out["verdict"]
    else:
        assert out["verdict"] == "the claim"


def test_boxes_are_read_from_the_html_in_order():
    assert verdict_boxes(_boxes("finding", "fails", "holds", "mixed")) == ["finding", "fails", "holds", "mixed"]
    assert verdict_boxes("<p class='verdict mixed'>not a verdict_html box</p>") == []


def test_the_summary_table_shows_the_capped_outcome():
    sec = {
        "id": "a",
        "title": "A",
        "seconds": 1.0,
        "html": _boxes("holds", "fails"),
        "summary": summary_row(verdict="plug-in rates hold", key_number="0.9", kind="holds"),
    }
    html = render_page(title="t", sections=[sec], meta=META)
    table = html[html.index('<table class="summary">') : html.index("</table>")]
    assert '<span class="kind fail">does not hold</span>' in table and "kind ok" not in table
    assert "But 1 check in this section does not hold." in table
    assert "in 250 ms;" in html  # the header's run time, not "in 0 s"


def test_monte_carlo_counts_what_it_lists():
    from changerate_bayes.validation import monte_carlo

    recs = [
        {"claim": c, "holds": h}
        for c, h in [
            ("A: x", False),
            ("A: y", False),
            ("B: x", False),
            ("C: x", False),
            ("D: x", False),
            ("E: x", True),
        ]
    ]
    row = monte_carlo.summarize({"monte_carlo": {"recommendations": recs}})
    assert "5 statements not supported here, from 4 recommendations (A; B; C; D)" in row["verdict"]
    assert row["key_number"] == "1 / 6 statements hold" and row["kind"] == "mixed"


def test_predictive_check_rejects_at_its_stated_level():
    from changerate_bayes.validation.calibration import PPP_ALPHA, ppc_fits

    assert PPP_ALPHA == 0.01
    assert not ppc_fits(0.010) and not ppc_fits(0.0)  # p <= alpha: misfit
    assert ppc_fits(0.0101) and ppc_fits(1.0)


def test_tuned_schedule_at_the_search_bound_did_not_reach_its_budget():
    from changerate_bayes.replay._replay import _INC_BOUNDS
    from changerate_bayes.validation.scheduling_replay import tuned_outcome, tuned_reached

    # 12 bisection steps that never left the lower end stop one step above it
    lowest = _INC_BOUNDS[0] * np.exp(np.log(_INC_BOUNDS[1] / _INC_BOUNDS[0]) / 2**12)
    for rate in (lowest, _INC_BOUNDS[1]):
        at_bound = {"within_budget": True, "inc_rate": rate, "freshness_weighted": 0.0097}
        assert not tuned_reached(at_bound)
        assert tuned_outcome(at_bound).startswith("no: increase rate at the search's bound")
    inside = {"within_budget": True, "inc_rate": 0.37}
    over = {"within_budget": False, "inc_rate": 0.37}
    assert tuned_reached(inside) and tuned_outcome(inside) == "yes"
    assert not tuned_reached(over) and tuned_outcome(over) == "no"


def test_replay_command_notes_a_tuned_schedule_at_its_bound(tmp_path, capsys):
    from changerate_bayes.cli import main

    path = tmp_path / "ch.csv"  # Nutch's first interval is longer than this window: no crawl at any rate
    path.write_text("page,timestamp\na,2024-01-01T05:00:00Z\na,2024-01-02T05:00:00Z\nb,2024-01-01T07:00:00Z\n")
    assert (
        main(
            [
                "replay",
                str(path),
                "--window",
                "2024-01-01",
                "2024-01-05",
                "--budget",
                "1",
                "--policies",
                "nutch_tuned",
                "--n-boot",
                "0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "note: nutch_tuned at 1 crawls/day: the increase rate stopped at the search's bound" in out
