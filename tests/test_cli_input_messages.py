"""Messages for inputs that were mis-read or mis-worded: numbers, flags, formats, files given twice."""

import pandas as pd
import pytest

from changerate_bayes.cli import main
from changerate_bayes.io import CrawlLogError, read_log, read_parquet
from changerate_bayes.replay import pages_from_table

LOG = "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-01T06:00Z,y\na,2024-01-01T12:00Z,y\n"


def _estimate(tmp_path, *args):
    return main(["estimate", *map(str, args), "--out", str(tmp_path / "out.csv")])


def test_numbers_are_shown_plainly(tmp_path):
    path = tmp_path / "log.parquet"
    # a number is seconds since 1970; milliseconds are refused, the number shown as written
    pd.DataFrame({"page": ["a", "a"], "fetch_time": [1704067000000, 1704068000000], "digest": ["x", "y"]}).to_parquet(
        path
    )
    with pytest.raises(CrawlLogError, match=r"row 1, column 'fetch_time': the number 1704067000000 is too large"):
        read_parquet(path)
    win = pd.DataFrame({"page": ["a"], "start": [2.0], "end": [2.0]})
    with pytest.raises(ValueError, match=r"empty window: end 2\.0 is not after start 2\.0$"):
        pages_from_table(pd.DataFrame({"page": ["a"], "timestamp": [2.5]}), window=win)
    changes = pd.DataFrame({"page": ["a", "a"], "timestamp": [3.0, 1.5]})
    with pytest.raises(ValueError, match=r"timestamp 1\.5 of page 'a' is earlier"):
        pages_from_table(changes, window=(0.0, 5.0))


def test_ota_changed_is_refused_on_other_logs(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    assert _estimate(tmp_path, log, "--ota-changed", "raw") == 2
    assert "--ota-changed applies to Open Terms Archive logs" in capsys.readouterr().err
    ota = tmp_path / "ota.csv"
    ota.write_text(
        "page,fetch_time,changed_raw,changed_filtered\n"
        + "".join(f"a,2024-01-0{d}T00:00Z,{r},{f}\n" for d, r, f in [(1, 0, 0), (2, 1, 0), (3, 1, 1), (4, 0, 0)])
    )
    assert _estimate(tmp_path, ota, "--ota-changed", "raw") == 0
    raw = pd.read_csv(tmp_path / "out.csv")
    assert _estimate(tmp_path, ota) == 0  # filtered by default
    filtered = pd.read_csv(tmp_path / "out.csv")
    assert raw["n_changes"].tolist() == [2] and filtered["n_changes"].tolist() == [1]


def test_files_of_two_formats_must_share_one(tmp_path, capsys):
    csv = tmp_path / "a.csv"
    csv.write_text(LOG)
    pq = tmp_path / "b.parquet"
    pd.read_csv(csv).to_parquet(pq)
    with pytest.raises(
        CrawlLogError,
        match=r"must share one format, but .*a\.csv is 'csv' and .*b\.parquet is "
        r"'parquet'; read each format separately$",
    ):
        read_log([csv, pq])
    for engine in ("pandas", "dask"):
        assert _estimate(tmp_path, csv, pq, "--engine", engine) == 2
        err = capsys.readouterr().err
        assert "the files must share one format" in err and "--format" not in err


def test_a_file_given_twice_is_refused(tmp_path, capsys, monkeypatch):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    with pytest.raises(CrawlLogError, match=r"log\.csv: the same file is given twice; give each log once"):
        read_log([log, log])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CrawlLogError, match=r"the same file is given twice \(as 'log\.csv' and 'sub/\.\./log\.csv'\)"):
        (tmp_path / "sub").mkdir()
        read_log(["log.csv", "./sub/../log.csv"])
    for engine in ("pandas", "dask"):
        assert _estimate(tmp_path, log, log, "--engine", engine) == 2
        assert "the same file is given twice" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_diagnose_names_the_report_folder_only_after_reading_the_input(tmp_path, capsys):
    bad = tmp_path / "events.csv"
    bad.write_text("page,time\na,2024-01-01T00:00Z\na,\n")
    assert main(["diagnose", str(bad), "--report", str(tmp_path / "r")]) == 2
    out = capsys.readouterr()
    assert "missing time" in out.err and "the report goes to" not in out.out
    good = tmp_path / "good.csv"
    good.write_text("page,time\n" + "".join(f"a,{t}\n" for t in (0.5, 1.7, 2.1, 4.0, 4.4, 6.9, 8.0, 9.3)))
    assert main(["diagnose", str(good), "--report", str(tmp_path / "g"), "--n-resamples", "19"]) == 0
    assert "the report goes to" in capsys.readouterr().out


def test_each_command_offers_only_the_engines_it_runs(capsys):
    """schedule runs on pandas and Dask only: its help and its choices say so (estimate has three)."""
    with pytest.raises(SystemExit) as exc:
        main(["schedule", "log.csv", "--engine", "buckets", "--out", "s.csv"])
    assert exc.value.code == 2
    assert "invalid choice: 'buckets' (choose from 'pandas', 'dask')" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    assert "{pandas,buckets,dask}" in capsys.readouterr().out
