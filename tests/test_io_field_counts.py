"""A CSV row with more or fewer fields than the header is refused, naming the file and line."""

import gzip

import pytest

from changerate_bayes.cli import main
from changerate_bayes.io import CrawlLogError, _fields, read_csv

HEAD = "page,fetch_time,status,digest\n"
GOOD = "a,2024-01-01T00:00Z,200,x\na,2024-01-01T06:00Z,200,y\na,2024-01-01T12:00Z,200,y\n"


def _write(tmp_path, text, name="log.csv"):
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


@pytest.mark.parametrize(
    "row, got, what",
    [
        ("a,2024-01-01T06:00Z,200,y,EXTRA", 5, "a field too many"),
        ("a,2024-01-01T06:00Z,200,y,", 5, "a field too many"),
        ("a,2024-01-01T06:00Z,200", 3, "a field too few"),
        ("a,2024-01-01T06:00Z", 2, "fields too few"),
    ],
)
@pytest.mark.parametrize("name", ["log.csv", "log.csv.gz"])
def test_a_row_with_fields_too_many_or_too_few_is_refused(tmp_path, row, got, what, name):
    path = _write(tmp_path, HEAD + "a,2024-01-01T00:00Z,200,x\n" + row + "\na,2024-01-01T12:00Z,200,y\n", name)
    with pytest.raises(
        CrawlLogError,
        match=rf"^{path}: line 3: {got} fields, but the header \(line 1\) has 4 "
        rf"\({what}\)",
    ):
        read_csv(path)


def test_quotes_blank_lines_and_crlf_are_followed(tmp_path):
    plain = read_csv(_write(tmp_path, HEAD + GOOD, "plain.csv"))
    odd = (
        HEAD.replace("\n", "\r\n") + '\r\n"a",2024-01-01T00:00Z,200,"x,1"\r\n\r\na,2024-01-01T06:00Z,200,"y\n2"\r\n'
        'a,2024-01-01T12:00Z,200,"y\n2"\r\n'
    )
    log = read_csv(_write(tmp_path, odd, "odd.csv"))
    assert log.history.flat_changed.tolist() == plain.history.flat_changed.tolist() == [1, 0]
    # a quoted separator is one field; the bad record starts on physical line 6
    bad = HEAD + 'a,2024-01-01T00:00Z,200,"x,\n1"\n\na,2024-01-01T06:00Z,200,y\na,2024-01-01T09:00Z,"200",y,z\n'
    with pytest.raises(CrawlLogError, match=r"line 6: 5 fields"):
        read_csv(_write(tmp_path, bad, "bad.csv"))


@pytest.mark.parametrize("block", [1, 2, 5, 7, 64])
def test_lines_split_across_blocks_are_counted_whole(tmp_path, monkeypatch, block):
    monkeypatch.setattr(_fields, "_BLOCK", block)
    _fields.check_field_counts(_write(tmp_path, HEAD + GOOD), src="x")  # no error
    _fields.check_field_counts(_write(tmp_path, HEAD + GOOD.rstrip("\n"), "nolast.csv"), src="x")
    path = _write(tmp_path, HEAD + GOOD + "\nb,2024-01-02T00:00Z,200\n" + GOOD, "bad.csv")
    with pytest.raises(CrawlLogError, match=r"^x: line 6: 3 fields"):
        _fields.check_field_counts(path, src="x")
    with pytest.raises(CrawlLogError, match=r"^x: line 5: 5 fields"):
        _fields.check_field_counts(_write(tmp_path, HEAD + GOOD + "a,1,2,3,4", "last.csv"), src="x")


@pytest.mark.parametrize("engine", ["pandas", "dask"])
def test_both_engines_refuse_the_row(tmp_path, capsys, engine):
    path = _write(tmp_path, HEAD + "a,2024-01-01T00:00Z,200,x\na,2024-01-01T06:00Z,200,y,EXTRA\n")
    code = main(["estimate", str(path), "--engine", engine, "--out", str(tmp_path / "out.csv")])
    assert code == 2
    assert f"{path}: line 3: 5 fields, but the header (line 1) has 4 (a field too many)" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()
