"""The report writer and the validation runner, with a small stand-in study."""

import json
import sys
import types

import matplotlib.pyplot as plt
import pytest

import changerate_bayes.validation.runner as runner
from changerate_bayes.cli import main
from changerate_bayes.report import figure_to_html, html_table, verdict_html, write_report
from changerate_bayes.report._html import format_value


def _fake_study(keys=("fake",), fail=False, payload=None):
    mod = types.ModuleType("changerate_bayes.validation.fake_study")
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
        monkeypatch.setitem(sys.modules, "changerate_bayes.validation.fake_study", _fake_study(**kw))
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


def test_output_dir_is_checked_before_any_study(tmp_path, monkeypatch, capsys):
    ran = []
    mod = _fake_study()
    mod.run = lambda preset, *, seed, progress: ran.append(1) or {"fake": []}
    monkeypatch.setitem(sys.modules, "changerate_bayes.validation.fake_study", mod)
    monkeypatch.setattr(runner, "STUDIES", ("fake_study",))
    a_file = tmp_path / "afile.txt"
    a_file.write_text("x")
    for bad in (str(a_file), str(a_file / "sub"), ""):
        assert main(["validate", "--quick", "--out", bad]) == 2
        assert "--out" in capsys.readouterr().err
        with pytest.raises(ValueError, match="`out_dir`"):
            runner.run_validation(bad, preset="quick")
    (tmp_path / "rep" / "index.html").mkdir(parents=True)
    with pytest.raises(ValueError, match="holds a folder named 'index.html'"):
        runner.run_validation(tmp_path / "rep", preset="quick")
    assert ran == [] and sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["index.html"]


def test_failed_move_keeps_the_previous_report(tmp_path, monkeypatch):
    write_report(tmp_path, html="<p>old</p>", results={"v": 1})
    real_replace = __import__("os").replace

    failures = []

    def flaky(src, dst):  # the move of the new results.json fails, once
        if str(dst).endswith("results.json") and "old-" not in str(src + dst) and not failures:
            failures.append(dst)
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr("changerate_bayes.report._html.os.replace", lambda a, b: flaky(str(a), str(b)))
    with pytest.raises(OSError, match="disk full"):
        write_report(tmp_path, html="<p>new</p>", results={"v": 2})
    assert (tmp_path / "index.html").read_text() == "<p>old</p>"
    assert json.loads((tmp_path / "results.json").read_text()) == {"v": 1}


def test_a_study_named_twice_runs_once(tmp_path, fake):
    fake()
    runner.run_validation(tmp_path, preset="quick", only=["fake_study", "fake_study"])
    assert json.loads((tmp_path / "results.json").read_text())["meta"]["studies"] == ["fake_study"]


def test_concurrent_writers_leave_one_complete_pair(tmp_path, monkeypatch):
    """A second writer that starts while the first is between its two moves must not
    interleave: it waits for the lock, so the folder ends with one run's pair."""
    import os
    import threading

    real_replace = os.replace
    first_in_middle, second_done = threading.Event(), threading.Event()

    def slow(src, dst):
        real_replace(src, dst)
        if str(dst).endswith("index.html") and "old-" not in str(dst) and not first_in_middle.is_set():
            first_in_middle.set()  # writer A has moved index.html in, not yet results.json
            second_done.wait(0.5)  # without a lock, writer B completes right here

    monkeypatch.setattr("changerate_bayes.report._html.os.replace", slow)
    a = threading.Thread(target=write_report, args=(tmp_path,), kwargs={"html": "<p>A</p>", "results": {"run": "A"}})
    a.start()
    assert first_in_middle.wait(5)
    b = threading.Thread(
        target=lambda: (write_report(tmp_path, html="<p>B</p>", results={"run": "B"}), second_done.set())
    )
    b.start()
    a.join(10)
    b.join(10)
    html = (tmp_path / "index.html").read_text()
    run = json.loads((tmp_path / "results.json").read_text())["run"]
    assert html == f"<p>{run}</p>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html", "results.json"]  # the lock leaves no file


def test_cli_version_and_study_list(capsys):
    from changerate_bayes import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"changerate-bayes {__version__}"
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    out = capsys.readouterr().out
    assert all(f"\n  {name}\n" in out + "\n" for name in runner.STUDIES)


def test_verdict_kinds_and_pvalue_format():
    from changerate_bayes.report import format_pvalue, summary_row

    assert 'class="verdict ok"' in verdict_html("x", True) and 'class="verdict mixed"' in verdict_html("x")
    finding = verdict_html("Poisson rejected on this trace", kind="finding")
    assert 'class="verdict finding"' in finding and "Finding about the data" in finding
    assert 'class="verdict fail"' in verdict_html("x", True, kind="fails")  # kind overrides ok
    with pytest.raises(ValueError, match="`kind`"):
        verdict_html("x", kind="great")
    assert [format_pvalue(p) for p in (0.0, 4.612e-242, 9.99e-5, 1e-4, 0.012345, 0.5, 1.0, None)] == [
        "< 1e-4",
        "< 1e-4",
        "< 1e-4",
        "0.0001",
        "0.0123",
        "0.5",
        "1",
        "—",
    ]
    html = html_table(
        [{"test": "KS", "pvalue": 0.0, "p": 4.612e-242, "stat": 12.3456}],
        [("test", "test"), ("pvalue", "p-value"), ("p", "p"), ("stat", "statistic")],
    )
    assert html.count("&lt; 1e-4") == 2 and "4.612e-242" not in html and ">0<" not in html
    assert '<td class="t">KS</td>' in html and '<td class="n">12.35</td>' in html
    assert summary_row(verdict="v", key_number="1 / 2", kind="finding") == {
        "verdict": "v",
        "key_number": "1 / 2",
        "kind": "finding",
    }
    with pytest.raises(ValueError):
        summary_row(verdict="v", key_number="1", kind="ok")


def test_report_opens_with_the_summary_and_marks_partial_runs(tmp_path, fake, monkeypatch):
    fake()
    mod = sys.modules["changerate_bayes.validation.fake_study"]
    mod.summarize = lambda result: {"verdict": "the stand-in holds", "key_number": "42 / 42", "kind": "holds"}
    path = runner.run_validation(tmp_path, preset="quick", seed=3)
    html = path.read_text()
    assert html.index('id="summary"') < html.index('<section id="fake_study"')
    assert "the stand-in holds" in html and "42 / 42" in html and 'href="#fake_study"' in html
    assert 'href="#top"' in html and "Partial report" not in html
    from changerate_bayes.report import render_page

    meta = json.loads((tmp_path / "results.json").read_text())["meta"]
    partial = render_page(title="t", sections=[], meta=dict(meta, partial=True, studies=["convergence", "pooling"]))
    assert "Partial report" in partial and "convergence, pooling" in partial


def test_every_study_summarizes_its_result():
    import importlib

    for name in runner.STUDIES:
        mod = importlib.import_module(f"changerate_bayes.validation.{name}")
        assert callable(getattr(mod, "summarize", None)), name
