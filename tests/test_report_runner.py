"""The report writer and the validation runner, with a small stand-in study."""

import json
import sys
import types

import matplotlib.pyplot as plt
import pytest

import validation.runner as runner
from changerate_bayes.cli import main
from changerate_bayes.report import figure_to_html, html_table, verdict_html, write_report
from changerate_bayes.report._html import format_value


def _fake_study(keys=("fake",), fail=False, payload=None):
    mod = types.ModuleType("validation.fake_study")
    mod.TITLE = "A stand-in study"
    mod.KEYS = keys

    def run(preset, *, seed, progress):
        progress("working")
        if fail:
            raise RuntimeError("study failed on purpose")
        return payload if payload is not None else {"fake": [{"preset": preset.name, "seed": seed}]}

    def render(result):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        return figure_to_html(fig, alt="a line") + html_table(result["fake"], ["preset", "seed"])

    mod.run, mod.render = run, render
    return mod


@pytest.fixture
def fake(monkeypatch):
    def install(**kw):
        monkeypatch.setitem(sys.modules, "validation.fake_study", _fake_study(**kw))
        monkeypatch.setattr(runner, "STUDIES", ("fake_study",))

    return install


def test_runner_writes_self_contained_report(tmp_path, fake, capsys):
    fake()
    path = runner.run_validation(tmp_path, preset="quick", seed=3)
    html = path.read_text()
    assert 'src="data:image/png;base64,' in html and "http://" not in html and "https://" not in html
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["fake"][0]["preset"] == "quick"
    assert results["meta"]["seed"] == 3 and results["meta"]["studies"] == ["fake_study"]
    assert "working" in capsys.readouterr().err  # progress is shown


def test_study_seed_is_reproducible(tmp_path, fake):
    fake()
    runner.run_validation(tmp_path / "a", preset="quick", seed=3)
    runner.run_validation(tmp_path / "b", preset="quick", seed=3)
    a = json.loads((tmp_path / "a" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    assert a["fake"] == b["fake"]


def test_failing_study_leaves_no_partial_report(tmp_path, fake):
    fake(fail=True)
    with pytest.raises(RuntimeError, match="on purpose"):
        runner.run_validation(tmp_path, preset="quick")
    assert list(tmp_path.iterdir()) == []


def test_study_must_return_its_keys(tmp_path, fake):
    fake(payload={"other": 1})
    with pytest.raises(RuntimeError, match="expected"):
        runner.run_validation(tmp_path, preset="quick")


def test_nan_in_results_is_refused(tmp_path):
    with pytest.raises(ValueError):
        write_report(tmp_path, html="<html></html>", results={"x": float("nan")})
    assert not (tmp_path / "results.json").exists()


def test_unknown_preset_and_study(tmp_path):
    with pytest.raises(ValueError, match="`name` must be one of"):
        runner.run_validation(tmp_path, preset="huge")
    with pytest.raises(ValueError, match="unknown study 'nope'"):
        runner.run_validation(tmp_path, only=["nope"])


def test_cli_validate_runs_the_fake_study(tmp_path, fake):
    fake()
    assert main(["validate", "--quick", "--out", str(tmp_path), "--seed", "5"]) == 0
    assert json.loads((tmp_path / "results.json").read_text())["meta"]["preset"] == "quick"


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    assert main(["validate", "--only", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown study" in capsys.readouterr().err
    assert main(["validate", "--seed", "-1", "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit):
        main(["validate", "--quick", "--full"])


def test_format_and_verdict():
    assert format_value(None) == "—"
    assert format_value(0.00012) == "1.200e-04"
    assert format_value(123.456789) == "123.5"
    assert format_value(float("inf")) == "∞"
    assert format_value(True) == "yes"
    assert 'class="verdict fail"' in verdict_html("rate not reached", False)
    assert "&lt;b&gt;" in html_table([{"a": "<b>"}], ["a"])  # cells are escaped
