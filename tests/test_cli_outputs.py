"""Files the commands write: never an input, created as the umask says, written through links, paired."""

import json
import os
import stat

import pandas as pd
import pytest
from _helpers import TWO_PAGE_LOG, replay_cli

from changerate_bayes.cli import main

LOG = TWO_PAGE_LOG
CHANGES = "page,timestamp\na,2024-01-02T00:00Z\na,2024-01-05T00:00Z\nb,2024-01-03T00:00Z\n"
WINDOW = ["--window", "2024-01-01T00:00Z", "2024-01-10T00:00Z"]


def _estimate(*args):
    return main(["estimate", *map(str, args), "--methods", "lln"])


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_estimate_refuses_to_overwrite_its_input(tmp_path, capsys, link):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    out = log
    if link != "same":
        out = tmp_path / "alias.csv"
        (os.symlink if link == "symlink" else os.link)(log, out)
    assert _estimate(log, "--out", out) == 2
    err = capsys.readouterr().err
    assert f"--out {str(out)!r} is the input file {str(log)!r}" in err and "choose another --out" in err
    assert log.read_text() == LOG


def test_estimate_refuses_an_input_named_like_the_default_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.read_csv(pd.io.common.StringIO(LOG)).to_parquet("estimates.parquet")
    before = (tmp_path / "estimates.parquet").read_bytes()
    assert _estimate("estimates.parquet") == 2
    assert "--out 'estimates.parquet' is the input file 'estimates.parquet'" in capsys.readouterr().err
    assert (tmp_path / "estimates.parquet").read_bytes() == before


def test_estimate_refuses_an_input_inside_the_report(tmp_path, capsys):
    rep = tmp_path / "rep"
    rep.mkdir()
    log = rep / "results.json"  # an odd name for a log, but --report would replace it
    log.write_text(LOG)
    assert _estimate(log, "--format", "csv", "--out", tmp_path / "e.csv", "--report", rep) == 2
    assert "--report" in capsys.readouterr().err and log.read_text() == LOG


@pytest.mark.parametrize("flag", ["--csv", "--windows"])
def test_replay_refuses_to_overwrite_its_input(tmp_path, capsys, flag):
    ch = tmp_path / "CHANGES.csv"
    ch.write_text(CHANGES)
    args = ["replay", str(ch), "--budget", "2", "--policies", "uniform", "--n-boot", "0", "--csv", str(ch)]
    if flag == "--windows":
        win = tmp_path / "w.csv"
        win.write_text("page,start,end\na,2024-01-01,2024-01-10\nb,2024-01-01,2024-01-10\n")
        args[-1] = str(win)
        args += ["--windows", str(win)]
    else:
        args += WINDOW
    assert main(args) == 2
    assert "is the input file" in capsys.readouterr().err
    assert ch.read_text() == CHANGES


def test_diagnose_refuses_to_overwrite_its_input(tmp_path, capsys):
    rep = tmp_path / "rep"
    rep.mkdir()
    ev = rep / "index.html"
    ev.write_text("time\n1.0\n2.0\n4.0\n")
    assert main(["diagnose", str(ev), "--report", str(rep), "--n-resamples", "9"]) == 2
    assert "--report" in capsys.readouterr().err and ev.read_text() == "time\n1.0\n2.0\n4.0\n"


@pytest.mark.parametrize("umask", [0o022, 0o027])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_tables_are_created_as_the_umask_says(tmp_path, umask, suffix):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    out = tmp_path / f"est{suffix}"
    old = os.umask(umask)
    try:
        assert _estimate(log, "--out", out) == 0
        ch = tmp_path / "ch.csv"
        ch.write_text(CHANGES)
        assert replay_cli(ch, "--csv", tmp_path / "replay.csv") == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "replay.csv").stat().st_mode) == 0o666 & ~umask
    # a table written over an existing file keeps that file's mode
    out.chmod(0o600)
    assert _estimate(log, "--out", out) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_symlink_at_out_is_written_through(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "today.csv"
    target.write_text("old table\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    assert _estimate(log, "--out", link) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert pd.read_csv(target)["page"].tolist() == ["a", "b"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["today.csv"]  # no temporary file left


_RUN = """
import os, sys, time
import changerate_bayes.crawllog.report as log_report
import changerate_bayes.report as report_module
from changerate_bayes.cli import main

log, out, report, folder, first = sys.argv[1:]
table_written, second_ready = os.path.join(folder, "table-written"), os.path.join(folder, "second-ready")


def wait_for(path):
    deadline = time.monotonic() + 300
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


if first == "1":  # writes its table, then its report only once the second run is ready to write
    real = report_module.write_report

    def write_report(*args, **kwargs):
        open(table_written, "w").close()
        wait_for(second_ready)
        time.sleep(3.0)  # the second run's table and report could both be written meanwhile
        return real(*args, **kwargs)

    report_module.write_report = write_report
else:  # builds its report, then writes while the first run is between its table and its report
    real = log_report.estimate_report

    def estimate_report(*args, **kwargs):
        result = real(*args, **kwargs)
        open(second_ready, "w").close()
        wait_for(table_written)
        return result

    log_report.estimate_report = estimate_report
sys.exit(main(["estimate", log, "--methods", "lln", "--out", out, "--report", report]))
"""


@pytest.mark.slow
def test_two_runs_never_pair_one_table_with_the_other_report(tmp_path):
    import subprocess
    import sys

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(LOG)
    b.write_text(LOG.replace("a,", "pa,").replace("b,", "pb,"))
    out, report = tmp_path / "est.csv", tmp_path / "rep"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _RUN, str(log), str(out), str(report), str(tmp_path), slow],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for log, slow in ((a, "1"), (b, "0"))
    ]
    for run in runs:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    table_pages = pd.read_csv(out)["page"].tolist()
    report_pages = [p["page"] for p in json.loads((report / "results.json").read_text())["pages"]]
    assert sorted(table_pages) == sorted(report_pages) == ["pa", "pb"]
