"""Refusals of bad crawl logs and replay inputs: a clear message, and nothing left on disk."""

import pytest

from changerate_bayes.cli import main
from changerate_bayes.io import CrawlLogError, read_csv, read_log

GOOD = "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-02T00:00Z,y\na,2024-01-03T00:00Z,y\n"


@pytest.mark.parametrize("text", [
    "page,digest\na,x\na,y\n",                                                   # missing fetch_time
    "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,notatime,y\n",             # unparsable time
    "page,fetch_time,digest\n",                                                  # header only
])
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
