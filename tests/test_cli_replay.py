"""The ``changerate-bayes replay`` command."""

import json

import pandas as pd

from changerate_bayes.cli import main


def _files(tmp_path):
    ch = tmp_path / "changes.csv"
    pd.DataFrame(
        {"page": ["a", "a", "b"], "timestamp": ["2024-01-02T10:00:00Z", "2024-01-05T00:00:00Z", "2024-01-03T12:00:00Z"]}
    ).to_csv(ch, index=False)
    win = tmp_path / "windows.csv"
    pd.DataFrame({"page": ["a", "b", "c"], "start": "2024-01-01", "end": "2024-01-20"}).to_csv(win, index=False)
    return str(ch), str(win)


def test_replay_command_writes_a_report(tmp_path, capsys):
    ch, win = _files(tmp_path)
    out = tmp_path / "rep"
    code = main(
        [
            "replay",
            ch,
            "--windows",
            win,
            "--budget",
            "0.5",
            "2",
            "--policies",
            "uniform",
            "stormcrawler",
            "oracle",
            "--n-boot",
            "20",
            "--report",
            str(out),
            "--csv",
            str(tmp_path / "t.csv"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "stormcrawler" in printed and "spent by stormcrawler" in printed
    html = (out / "index.html").read_text()
    assert "data:image/png;base64" in html and "<script src" not in html  # self-contained
    rows = json.loads((out / "results.json").read_text())["replay"]
    assert {r["policy"] for r in rows} == {"uniform", "stormcrawler", "oracle"}
    assert len(pd.read_csv(tmp_path / "t.csv")) == len(rows)


def test_replay_command_bad_input_leaves_nothing(tmp_path, capsys):
    ch, win = _files(tmp_path)
    out = tmp_path / "rep"
    assert main(["replay", ch, "--windows", win, "--budget", "-1", "--report", str(out)]) == 2
    assert "budget" in capsys.readouterr().err
    assert main(["replay", ch, "--windows", win, "--budget", "1", "--policies", "nope", "--report", str(out)]) == 2
    assert "valid policies" in capsys.readouterr().err
    assert main(["replay", ch, "--budget", "1", "--report", str(out)]) == 2  # no windows at all
    assert "start and end" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.csv"), "--budget", "1"]) == 2
    assert not (out / "index.html").exists() and not (out / "results.json").exists()


def test_replay_command_refuses_a_budget_beyond_what_it_counts(tmp_path, capsys):
    """Budgets are counted in int64 crawls: above 1e12 crawls per day an error names
    --budget (no traceback), and nothing is written."""
    ch, win = _files(tmp_path)
    out = tmp_path / "rep"
    for budget in ("1e300", "1e20", "inf", "nan"):
        assert main(["replay", ch, "--windows", win, "--budget", "1", budget, "--report", str(out)]) == 2
        err = capsys.readouterr().err
        assert "--budget must" in err and "Traceback" not in err
    assert not out.exists()
    code = main(
        ["replay", ch, "--windows", win, "--budget", "1e12", "--policies", "uniform", "oracle", "--n-boot", "20"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "1.000000e+12" in printed


def test_unreadable_inputs_are_named(tmp_path, capsys):
    ch, win = _files(tmp_path)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert main(["replay", str(empty), "--windows", win, "--budget", "1"]) == 2
    assert "CHANGES.csv 'empty.csv'" in capsys.readouterr().err.replace(str(tmp_path) + "/", "")
    assert main(["replay", ch, "--windows", str(empty), "--budget", "1"]) == 2
    assert "--windows 'empty.csv'" in capsys.readouterr().err.replace(str(tmp_path) + "/", "")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("page,timestamp\ncaf\xe9,2024-01-02T00:00:00Z\n".encode("latin-1"))
    assert main(["replay", str(latin), "--windows", win, "--budget", "1"]) == 2
    assert "CHANGES.csv 'latin.csv': not UTF-8" in capsys.readouterr().err.replace(str(tmp_path) + "/", "")


def test_replay_command_with_signals_prints_the_gap_shares(tmp_path, capsys):
    ch, win = _files(tmp_path)
    sig = tmp_path / "signals.csv"
    pd.DataFrame(
        {"page": ["a", "b", "c"], "timestamp": ["2024-01-02T10:00:00Z", "2024-01-03T12:00:00Z", "2024-01-09T00:00:00Z"]}
    ).to_csv(sig, index=False)
    args = ["replay", ch, "--windows", win, "--budget", "0.5", "--step", "6h", "--n-boot", "20", "--signals", str(sig)]
    assert main(args + ["--policies", "paced_on_signal", "paced_index_signals"]) == 0
    printed = capsys.readouterr().out
    assert "share of the freshness gap from round robin (uniform) to clairvoyant" in printed
    gap = printed.split("clairvoyant, paired page bootstrap:")[1]
    assert "gap_share_lo" in gap and "paced_on_signal" in gap and "paced_index_signals" in gap
    assert "note: uniform and clairvoyant added to --policies" in printed
    # the signals file of estimate and schedule (page,signal_time), as CSV or Parquet: the same replay
    frame = pd.read_csv(sig).rename(columns={"timestamp": "signal_time"})
    as_csv, as_parquet = tmp_path / "sig2.csv", tmp_path / "sig2.parquet"
    frame.to_csv(as_csv, index=False)
    frame.to_parquet(as_parquet)
    for other in (as_csv, as_parquet):
        args[-1] = str(other)
        assert main(args + ["--policies", "paced_on_signal", "paced_index_signals"]) == 0
        assert capsys.readouterr().out == printed


def test_replay_command_names_the_line_of_a_bad_signal(tmp_path, capsys):
    ch, win = _files(tmp_path)
    sig = tmp_path / "signals.csv"
    pd.DataFrame({"page": ["a", "zz"], "timestamp": ["2024-01-02T10:00:00Z", "2024-01-03T12:00:00Z"]}).to_csv(
        sig, index=False
    )
    assert main(["replay", ch, "--windows", win, "--budget", "0.5", "--signals", str(sig)]) == 2
    err = capsys.readouterr().err
    assert f"line 3 of {sig}, column 'page': page 'zz' is not among the replayed pages" in err
