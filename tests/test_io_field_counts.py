"""A CSV row with more or fewer fields than the header is refused, naming the file and line."""

import pytest
from _helpers import assert_read_csv_refuses, write_log

from changerate_bayes.cli import main
from changerate_bayes.io import CrawlLogError, _fields, read_csv

HEAD = "page,fetch_time,status,digest\n"
GOOD = "a,2024-01-01T00:00Z,200,x\na,2024-01-01T06:00Z,200,y\na,2024-01-01T12:00Z,200,y\n"


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
    path = write_log(tmp_path, HEAD + "a,2024-01-01T00:00Z,200,x\n" + row + "\na,2024-01-01T12:00Z,200,y\n", name)
    assert_read_csv_refuses(path, rf"^{path}: line 3: {got} fields, but the header \(line 1\) has 4 \({what}\)")


def test_quotes_blank_lines_and_crlf_are_followed(tmp_path):
    plain = read_csv(write_log(tmp_path, HEAD + GOOD, "plain.csv"))
    odd = (
        HEAD.replace("\n", "\r\n") + '\r\n"a",2024-01-01T00:00Z,200,"x,1"\r\n\r\na,2024-01-01T06:00Z,200,"y\n2"\r\n'
        'a,2024-01-01T12:00Z,200,"y\n2"\r\n'
    )
    log = read_csv(write_log(tmp_path, odd, "odd.csv"))
    assert log.history.flat_changed.tolist() == plain.history.flat_changed.tolist() == [1, 0]
    # a quoted separator is one field; the bad record starts on physical line 6
    bad = HEAD + 'a,2024-01-01T00:00Z,200,"x,\n1"\n\na,2024-01-01T06:00Z,200,y\na,2024-01-01T09:00Z,"200",y,z\n'
    assert_read_csv_refuses(write_log(tmp_path, bad, "bad.csv"), r"line 6: 5 fields")


@pytest.mark.parametrize("block", [1, 2, 5, 7, 64])
def test_lines_split_across_blocks_are_counted_whole(tmp_path, monkeypatch, block):
    monkeypatch.setattr(_fields, "_BLOCK", block)
    _fields.check_field_counts(write_log(tmp_path, HEAD + GOOD), src="x")  # no error
    _fields.check_field_counts(write_log(tmp_path, HEAD + GOOD.rstrip("\n"), "nolast.csv"), src="x")
    path = write_log(tmp_path, HEAD + GOOD + "\nb,2024-01-02T00:00Z,200\n" + GOOD, "bad.csv")
    with pytest.raises(CrawlLogError, match=r"^x: line 6: 3 fields"):
        _fields.check_field_counts(path, src="x")
    with pytest.raises(CrawlLogError, match=r"^x: line 5: 5 fields"):
        _fields.check_field_counts(write_log(tmp_path, HEAD + GOOD + "a,1,2,3,4", "last.csv"), src="x")


@pytest.mark.parametrize("engine", ["pandas", "dask"])
def test_both_engines_refuse_the_row(tmp_path, capsys, engine):
    path = write_log(tmp_path, HEAD + "a,2024-01-01T00:00Z,200,x\na,2024-01-01T06:00Z,200,y,EXTRA\n")
    code = main(["estimate", str(path), "--engine", engine, "--out", str(tmp_path / "out.csv")])
    assert code == 2
    assert f"{path}: line 3: 5 fields, but the header (line 1) has 4 (a field too many)" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()
