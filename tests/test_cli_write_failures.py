"""A write that fails midway (a full disk): one line naming the file and the reason, status 2, no partial file."""

import errno
import os

import pandas as pd
import pytest

from changerate_bayes.cli import main

T0 = pd.Timestamp("2024-01-01T00:00:00Z")


@pytest.fixture()
def log_csv(tmp_path):
    times = [(T0 + pd.Timedelta(hours=6 * i)).strftime("%Y-%m-%dT%H:%M:%SZ") for i in range(9)]
    frame = pd.concat(
        [
            pd.DataFrame({"page": "https://a.example/", "fetch_time": times, "changed": [0, 1, 0, 1, 1, 0, 0, 1, 0]}),
            pd.DataFrame({"page": "https://b.example/", "fetch_time": times, "changed": [0] * 9}),
        ]
    )
    path = tmp_path / "logs" / "log.csv"
    path.parent.mkdir()
    frame.to_csv(path, index=False)
    return path


@pytest.fixture()
def disk_full(monkeypatch):
    """Every table writer writes a few bytes, then fails as a full disk does."""

    def half_written(self, path_or_buf=None, *args, **kwargs):
        if hasattr(path_or_buf, "write"):
            path_or_buf.write(b"PAR1 partial")
        elif path_or_buf is not None:  # (None: the text is built, then written by the caller)
            with open(path_or_buf, "wb") as fh:
                fh.write(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_written)
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda self, *a, **k: half_written(self, a[0] if a else None))


@pytest.mark.parametrize("command", ["schedule", "estimate"])
def test_a_full_disk_is_one_line_and_leaves_no_file(tmp_path, log_csv, capsys, disk_full, command):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "table.parquet"
    assert main([command, str(log_csv), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"--out {str(out)!r}" in err and "No space left on device" in err, err
    assert os.listdir(out_dir) == []  # neither the file nor a temporary one


def test_a_full_disk_under_a_new_folder_removes_the_folder(tmp_path, log_csv, capsys, disk_full):
    out = tmp_path / "new" / "seeds.txt"
    assert main(["schedule", str(log_csv), "--out", str(out), "--format", "nutch-seeds"]) == 0  # text: no pandas writer
    out = tmp_path / "new2" / "s.csv"
    assert main(["schedule", str(log_csv), "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not out.parent.exists()
