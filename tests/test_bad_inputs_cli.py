"""Refusals of bad crawl logs and replay inputs: a clear message, and nothing left on disk."""

import pytest
from _helpers import replay_cli

from changerate_bayes.cli import main
from changerate_bayes.io import CrawlLogError, read_csv, read_log

GOOD = "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-02T00:00Z,y\na,2024-01-03T00:00Z,y\n"


@pytest.mark.parametrize(
    "text",
    [
        "page,digest\na,x\na,y\n",  # missing fetch_time
        "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,notatime,y\n",  # unparsable time
        "page,fetch_time,digest\n",  # header only
    ],
)
def test_estimate_failure_leaves_no_new_folders(tmp_path, capsys, text):
    log = tmp_path / "log.csv"
    log.write_text(text)
    out = tmp_path / "new" / "deeper" / "est.csv"
    report = tmp_path / "rep" / "sub"
    rc = main(["estimate", str(log), "--methods", "lln", "--out", str(out), "--report", str(report)])
    assert rc == 2
    assert "error" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]


def test_estimate_failure_keeps_existing_folders(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("page,digest\na,x\n")
    (tmp_path / "rep").mkdir()
    assert main(["estimate", str(log), "--out", str(tmp_path / "e.csv"), "--report", str(tmp_path / "rep")]) == 2
    assert (tmp_path / "rep").is_dir() and list((tmp_path / "rep").iterdir()) == []


def test_non_utf8_csv_names_file_and_encoding(tmp_path):
    log = tmp_path / "latin1.csv"
    log.write_bytes(GOOD.replace("a,", "\xe9t\xe9,").encode("latin-1"))
    with pytest.raises(CrawlLogError, match=r"latin1\.csv: .*line 2: not UTF-8 text .*0xe9"):
        read_csv(log)


def test_folder_instead_of_file_is_named(tmp_path):
    with pytest.raises(CrawlLogError, match="is a folder, not a log file"):
        read_log(tmp_path, format="csv")


CHANGES = "page,timestamp\na,2024-01-02T00:00Z\na,2024-01-05T00:00Z\nb,2024-01-03T00:00Z\n"


@pytest.mark.parametrize(
    "budget, changes",
    [
        ("0", CHANGES),
        ("nan", CHANGES),
        ("2", "page,timestamp\na,2024-01-05T00:00Z\na,2024-01-02T00:00Z\n"),  # unsorted change times
    ],
)
def test_replay_failure_leaves_no_new_folders(tmp_path, capsys, budget, changes):
    path = tmp_path / "ch.csv"
    path.write_text(changes)
    rc = replay_cli(
        path, "--report", str(tmp_path / "rep" / "sub"), "--csv", str(tmp_path / "tab" / "t.csv"), budget=budget
    )
    assert rc == 2
    assert "replay: error:" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ch.csv"]


def test_replay_non_utf8_input_is_refused(tmp_path, capsys):
    path = tmp_path / "ch.csv"
    path.write_bytes(b"page,timestamp\n\xe9,2024-01-02T00:00Z\n")
    rc = replay_cli(path)
    assert rc == 2
    assert "not UTF-8 text" in capsys.readouterr().err


def test_replay_csv_into_new_folder(tmp_path, capsys):
    path = tmp_path / "ch.csv"
    path.write_text(CHANGES)
    out = tmp_path / "tab" / "t.csv"
    rc = replay_cli(path, "--csv", str(out))
    assert rc == 0
    assert out.read_text().startswith("policy,") and [p.name for p in out.parent.iterdir()] == ["t.csv"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("time\n1.0\nabc\n3.0\n", r"mixes numbers \(line 2: '1.0'\) and non-numbers \(line 3: 'abc'\)"),
        ("page,time\na,1.0\na,\na,3.0\n", r"line 3, column 'time': missing time"),
        ("when\n1.0\n2.0\n", r"missing time column 'time'"),
    ],
)
def test_diagnose_bad_times(tmp_path, capsys, text, message):
    path = tmp_path / "ev.csv"
    path.write_text(text)
    rc = main(["diagnose", str(path), "--report", str(tmp_path / "rep" / "sub"), "--n-resamples", "19"])
    err = capsys.readouterr().err
    assert rc == 2
    import re

    assert re.search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.csv"]


@pytest.mark.parametrize("page", ["", "  "])
def test_csv_row_without_page_is_refused(tmp_path, page):
    log = tmp_path / "log.csv"
    log.write_text(GOOD.replace("\na,2024-01-02", f"\n{page},2024-01-02"))
    with pytest.raises(CrawlLogError, match=r"log\.csv: line 3, column 'page': missing page"):
        read_csv(log)


@pytest.mark.parametrize(
    "text, message",
    [
        # page a's times are on lines 2, 4 and 5; line 5 goes back in time
        (
            "page,time\na,2024-01-01T00:00Z\nb,2024-01-01T01:00Z\na,2024-01-03T00:00Z\na,2024-01-02T00:00Z\n",
            r"page 'a' \(lines 2\.\.5 of the file\), column 'time': line 5: is earlier than line 4; event times",
        ),
        ("page,time\nb,2024-01-01T01:00Z\na,2024-01-01T00:00Z\na,banana\n", r"line 4: cannot parse 'banana'"),
        ("time\n1.0\n2.0\ninf\n", r"line 4: is inf; times must be finite"),
    ],
)
def test_diagnose_errors_name_file_lines(tmp_path, capsys, text, message):
    import re

    path = tmp_path / "ev.csv"
    path.write_text(text)
    rc = main(["diagnose", str(path), "--report", str(tmp_path / "rep"), "--n-resamples", "19"])
    err = capsys.readouterr().err
    assert rc == 2
    assert re.search(message, err), err
    assert "row" not in err, err


def test_diagnose_says_when_no_test_can_run(tmp_path, capsys):
    path = tmp_path / "ev.csv"
    path.write_text("page,time\nx,2024-01-01T00:00Z\n")
    assert main(["diagnose", str(path), "--report", str(tmp_path / "rep"), "--n-resamples", "19"]) == 0
    out = capsys.readouterr().out
    assert "x: 1 events: too few for any test." in out
    assert "rejected" not in out


def test_diagnose_refuses_too_few_resamples_before_reading(tmp_path, capsys):
    path = tmp_path / "ev.csv"
    path.write_text("page,time\nx,2024-01-01T00:00Z\nx,2024-01-02T00:00Z\n")
    assert main(["diagnose", str(path), "--report", str(tmp_path / "rep"), "--n-resamples", "9"]) == 2
    err = capsys.readouterr().err
    assert "error: --n-resamples must be >= 19; got 9" in err and "page" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.csv"]


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            "page,timestamp\na,2024-01-02T00:00Z\nb,2024-01-03T00:00Z\na,2024-01-12T00:00Z\n",
            r"line 4 of \S+ch\.csv: timestamp '2024-01-12T00:00Z' of page 'a' lies outside its window",
        ),
        (
            "page,timestamp\na,2024-01-05T00:00Z\nb,2024-01-03T00:00Z\na,2024-01-02T00:00Z\n",
            r"line 4 of \S+ch\.csv: timestamp '2024-01-02T00:00Z' of page 'a' is earlier than",
        ),
        ("page,timestamp\na,2024-01-02T00:00Z\na,soon\n", r"timestamp of line 3 of \S+ch\.csv is not a parsable time"),
    ],
)
def test_replay_errors_name_file_lines(tmp_path, capsys, changes, message):
    import re

    path = tmp_path / "ch.csv"
    path.write_text(changes)
    windows = tmp_path / "w.csv"
    windows.write_text("page,start,end\na,2024-01-01T00:00Z,2024-01-10T00:00Z\nb,2024-01-01T00:00Z,2024-01-10T00:00Z\n")
    rc = main(
        ["replay", str(path), "--windows", str(windows), "--budget", "2", "--policies", "uniform", "--n-boot", "0"]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert re.search(message, err), err


def _read_only_folders(monkeypatch):
    """Make every folder refuse new files, as a read-only mount does (even for root)."""
    import errno

    from changerate_bayes.cli import _common as _outputs

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(_outputs.tempfile, "NamedTemporaryFile", refuse)


def test_estimate_refuses_an_unwritable_out_folder_before_work(tmp_path, capsys, monkeypatch):
    log = tmp_path / "log.csv"
    log.write_text(GOOD)
    _read_only_folders(monkeypatch)
    assert main(["estimate", str(log), "--methods", "lln", "--out", str(tmp_path / "e.parquet")]) == 2
    captured = capsys.readouterr()
    assert "error: --out" in captured.err and "is not writable (Read-only file system)" in captured.err
    assert "read " not in captured.out  # refused before the log was read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]


def test_replay_refuses_an_unwritable_csv_folder_before_work(tmp_path, capsys, monkeypatch):
    path = tmp_path / "ch.csv"
    path.write_text(CHANGES)
    _read_only_folders(monkeypatch)
    rc = replay_cli(path, "--csv", str(tmp_path / "t.csv"))
    captured = capsys.readouterr()
    assert rc == 2
    assert "error: --csv" in captured.err and "is not writable (Read-only file system)" in captured.err
    assert "policy" not in captured.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ch.csv"]
