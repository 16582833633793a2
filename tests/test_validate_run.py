"""``validate`` as a run: processes (--jobs), the progress bar, Ctrl-C and partial runs."""

import io
import json
import os
import signal
import subprocess
import sys
import time
import types

import matplotlib.pyplot as plt
import pytest
from _helpers import AT_A_TERMINAL

import changerate_bayes.validation as validation
import changerate_bayes.validation.runner as runner
from changerate_bayes.cli import main
from changerate_bayes.report import figure_to_html
from changerate_bayes.validation import Progress

FAST = ["scheduling_sampling", "scheduling_whittle"]  # two quick real studies; the second starts first (longer)


def _study(name, title):
    mod = types.ModuleType(f"changerate_bayes.validation.{name}")
    mod.TITLE, mod.KEYS = title, (name,)

    def run(preset, *, seed, progress):
        progress("working")
        return {name: {"seed": seed}}

    def render(result):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        assert fig.get_layout_engine() is not None  # made with constrained layout
        return figure_to_html(fig, alt="a line")

    mod.run, mod.render = run, render
    return mod


@pytest.fixture
def two_studies(monkeypatch):
    for name, title in (("fake_a", "Study A"), ("fake_b", "Study B")):
        monkeypatch.setitem(sys.modules, f"changerate_bayes.validation.{name}", _study(name, title))
    monkeypatch.setattr(runner, "STUDIES", ("fake_a", "fake_b"))


def _numbers(path):
    data = json.loads((path / "results.json").read_text())
    meta = data.pop("meta")
    return meta, data


def test_only_marks_the_run_partial_and_names_its_studies(tmp_path, two_studies):
    runner.run_validation(tmp_path / "part", preset="quick", only=["fake_b"], progress=Progress(quiet=True))
    meta, data = _numbers(tmp_path / "part")
    assert meta["partial"] is True and meta["studies"] == ["fake_b"] and list(data) == ["fake_b"]
    runner.run_validation(tmp_path / "all", preset="quick", progress=Progress(quiet=True))
    meta, data = _numbers(tmp_path / "all")
    assert meta["partial"] is False and meta["studies"] == ["fake_a", "fake_b"]
    # naming every study is not partial; the seeds follow the study, not its position
    runner.run_validation(tmp_path / "rev", preset="quick", only=["fake_b", "fake_a"], progress=Progress(quiet=True))
    meta_rev, data_rev = _numbers(tmp_path / "rev")
    assert meta_rev["partial"] is False and data_rev == data


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_processes(tmp_path):
    quiet = Progress(quiet=True)
    runner.run_validation(tmp_path / "one", preset="quick", seed=11, only=FAST, jobs=1, progress=quiet)
    runner.run_validation(tmp_path / "two", preset="quick", seed=11, only=FAST, jobs=2, progress=quiet)
    meta1, one = _numbers(tmp_path / "one")
    meta2, two = _numbers(tmp_path / "two")
    assert (meta1["jobs"], meta2["jobs"]) == (1, 2)
    assert meta1["studies"] == meta2["studies"] == FAST
    assert one == two and set(one) == {k for s in FAST for k in runner.load_study(s).KEYS}
    html1 = (tmp_path / "one" / "index.html").read_text()
    html2 = (tmp_path / "two" / "index.html").read_text()
    assert html1.index(runner.load_study(FAST[0]).TITLE) < html1.index(runner.load_study(FAST[1]).TITLE)
    assert html2.index(runner.load_study(FAST[0]).TITLE) < html2.index(runner.load_study(FAST[1]).TITLE)


def test_bad_jobs_are_refused(tmp_path, two_studies, capsys):
    with pytest.raises(ValueError, match="`jobs` must be >= 1; got 0"):
        runner.run_validation(tmp_path, jobs=0)
    with pytest.raises(TypeError, match="`jobs` must be an int"):
        runner.run_validation(tmp_path, jobs=2.0)
    assert main(["validate", "--quick", "--jobs", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and list(tmp_path.iterdir()) == []


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bar_with_eta_on_a_terminal_and_plain_lines_otherwise(tmp_path, two_studies):
    term = _Terminal()
    runner.run_validation(tmp_path / "t", preset="quick", progress=Progress(stream=term))
    out = term.getvalue()
    assert "\r" in out and "validate: 100%" in out and "2/2" in out
    assert "<00:00" in out  # tqdm's elapsed<remaining: an ETA is shown
    assert "fake_a: working" in out  # study lines are printed above the bar
    log = io.StringIO()
    runner.run_validation(tmp_path / "p", preset="quick", progress=Progress(stream=log))
    lines = log.getvalue()
    assert "\r" not in lines and "\x1b" not in lines and "%|" not in lines
    assert "[1/2] fake_a done in" in lines and "fake_b: working" in lines


def test_ctrl_c_prints_one_line_returns_130_and_removes_the_new_folder(tmp_path, monkeypatch, capsys):
    def interrupted(out_dir, **kwargs):
        assert os.path.isdir(out_dir)  # made (and checked) before the studies run
        raise KeyboardInterrupt

    monkeypatch.setattr(validation, "run_validation", interrupted)
    out = tmp_path / "new" / "deeper"
    assert main(["validate", "--quick", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert err == "changerate-bayes: interrupted; no report written\n"
    assert list(tmp_path.iterdir()) == []  # both folders made for the report are gone
    kept = tmp_path / "kept"  # a folder that existed before is left in place, as it was
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert main(["validate", "--quick", "--out", str(kept)]) == 130
    assert [p.name for p in kept.iterdir()] == ["notes.txt"]


def test_every_study_has_a_cost_hint_so_that_the_longest_start_first():
    # a study without a hint counts as cheap and is handed out last, where a long one
    # leaves one process working alone at the end of a parallel run
    assert set(runner._COST_HINT) == set(runner.STUDIES)
    assert all(v > 0 for v in runner._COST_HINT.values())


@pytest.mark.slow
def test_ctrl_c_in_a_real_run_with_two_processes(tmp_path):
    out = tmp_path / "report"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            AT_A_TERMINAL,
            "validate",
            "--quick",
            "--jobs",
            "2",
            "--out",
            str(out),
            "--only",
            *FAST,
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in proc.stderr:  # wait until the worker processes are being started
        lines.append(line)
        if "running 2 studies in 2 processes" in line:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130
    tail = rest.strip().splitlines()
    assert tail[-1] == "changerate-bayes: interrupted; no report written"
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest
    assert not out.exists()


@pytest.mark.parametrize("processes", [1, 2, 3, 64])
def test_a_worker_runs_numba_on_its_share_of_the_cores(processes):
    import numba

    before_threads, before_handler = numba.get_num_threads(), signal.getsignal(signal.SIGINT)
    try:
        runner._worker_init(None, processes)
        cores = os.cpu_count() or 1
        assert numba.get_num_threads() == max(1, min(numba.config.NUMBA_NUM_THREADS, cores // processes))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        numba.set_num_threads(before_threads)
        signal.signal(signal.SIGINT, before_handler)
