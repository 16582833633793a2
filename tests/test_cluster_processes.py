"""The Dask engine on a scheduler and two workers started as separate processes by the ``dask`` command line.

The ``estimate`` command reaches them by ``--scheduler tcp://host:port`` and must give
the pandas engine's table (to 1e-12) and audit, also when a worker is killed mid-run;
logs already partitioned by page are estimated without moving rows between workers.
"""

import gzip
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_same_page_table, dask_files_estimates

from changerate_bayes import estimate_pages
from changerate_bayes.datasets import write_cdxj_shards
from changerate_bayes.io import read_log

# one pytest-xdist worker for the Dask tests (see tests/conftest.py)
pytestmark = [pytest.mark.xdist_group("dask_cluster"), pytest.mark.slow]

_DASK = str(Path(sys.executable).with_name("dask"))
_START_TIMEOUT = 90.0  # seconds for the scheduler file and the workers to appear


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=15)


def _start_cluster(folder: Path, request):
    """``dask scheduler`` and two ``dask worker`` processes; stopped by the test's finaliser."""
    from distributed import Client

    procs = []
    request.addfinalizer(lambda: _stop(procs))
    log = open(folder / "dask.log", "w")
    request.addfinalizer(log.close)
    sched_file = folder / "scheduler.json"
    popen = dict(stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # own process group: killable
    procs.append(
        subprocess.Popen(
            [
                _DASK,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            **popen,
        )
    )
    deadline = time.monotonic() + _START_TIMEOUT
    while not sched_file.exists():
        assert procs[0].poll() is None, (folder / "dask.log").read_text()
        assert time.monotonic() < deadline, "the scheduler did not start"
        time.sleep(0.1)
    client = Client(scheduler_file=str(sched_file), timeout=30)
    request.addfinalizer(client.close)
    address = client.scheduler.address
    for i in range(2):
        procs.append(
            subprocess.Popen(
                [
                    _DASK,
                    "worker",
                    address,
                    "--name",
                    f"w{i}",
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--death-timeout",
                    "60",
                ],
                **popen,
            )
        )
    client.wait_for_workers(2, timeout=_START_TIMEOUT)
    return address, client, procs


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    return _start_cluster(tmp_path_factory.mktemp("dask"), request)


def _estimate(*args) -> int:
    from changerate_bayes.cli import main

    return main(["estimate", *map(str, args)])


def _csv_log(path, n=4000, pages=80, seed=5):
    rng = np.random.default_rng(seed)
    page = rng.integers(0, pages, n)
    t = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 60 * 24 * 60, n), "min")
    modified = t - pd.to_timedelta(rng.integers(0, 40 * 60, n) * (rng.random(n) < 0.9), "min")  # 10% = "now"
    pd.DataFrame(
        {
            "page": "https://h" + pd.Series(page % 7).astype(str) + ".example/p" + pd.Series(page).astype(str),
            "fetch_time": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "last_modified": modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "status": rng.choice([200, 200, 200, 304, 404], n),
            "digest": ((rng.random(n) < 0.3).cumsum() % 5).astype(str),
        }
    ).to_csv(path, index=False)
    return path


def test_command_on_cluster_processes_equals_pandas(tmp_path, cluster, capsys):
    address, _, _ = cluster
    csv = _csv_log(tmp_path / "log.csv")
    shards = write_cdxj_shards(tmp_path / "cc", n_urls=300, n_crawls=4, rng=1, n_shards=2)
    for logs in ([csv], [tmp_path / "cc"]):  # one CSV read in blocks; CDXJ shards read one per task
        a, b = tmp_path / "pandas.parquet", tmp_path / "dask.parquet"
        assert _estimate(*logs, "--methods", "lln", "mle", "--out", a) == 0
        pandas_audit = capsys.readouterr().out.split("note:")[0].split("wrote")[0]
        assert _estimate(*logs, "--methods", "lln", "mle", "--out", b, "--engine", "dask", "--scheduler", address) == 0
        assert capsys.readouterr().out.split("note:")[0].split("wrote")[0] == pandas_audit
        assert_same_page_table(pd.read_parquet(b), pd.read_parquet(a))
    assert f"read {sum(len(gzip_lines(s)) for s in shards)} rows" in pandas_audit


def gzip_lines(path):
    with gzip.open(path, "rt") as fh:
        return fh.readlines()


def _ran(events) -> set:
    """Names of the functions whose tasks ran (the key's prefix before the token)."""
    names = set()
    for e in events:
        key = e["key"]
        key = key[0] if isinstance(key, tuple) else key
        names.add(str(key).rsplit("-", 1)[0])
    return names


def test_partitioned_files_are_not_shuffled(tmp_path, cluster):
    from distributed import get_task_stream

    _, client, _ = cluster
    frame = pd.read_csv(_csv_log(tmp_path / "all.csv", n=3000, pages=60, seed=8), dtype=str, keep_default_na=False)
    host = frame["page"].str.extract(r"https://(h\d)")[0]
    bucket = host.str[1].astype(int) % 3
    for k in range(3):  # hive-style page_bucket=K/ folders, two Parquet files in each
        folder = tmp_path / "hive" / f"page_bucket={k}"
        folder.mkdir(parents=True)
        part = frame[bucket == k]
        half = len(part) // 2
        part.iloc[:half].to_parquet(folder / "a.parquet", index=False)
        part.iloc[half:].to_parquet(folder / "b.parquet", index=False)
    for h in sorted(host.unique()):  # one CSV per host
        (tmp_path / "hosts").mkdir(exist_ok=True)
        frame[host == h].to_csv(tmp_path / "hosts" / f"{h}.csv", index=False)
    frame.iloc[::2].to_csv(tmp_path / "mixed-0.csv", index=False)  # every page in both files
    frame.iloc[1::2].to_csv(tmp_path / "mixed-1.csv", index=False)
    cases = [
        (tmp_path / "hive", False, 3),
        (tmp_path / "hosts", False, 7),
        ([tmp_path / "mixed-0.csv", tmp_path / "mixed-1.csv"], True, 2),
    ]
    for logs, shuffled, parts in cases:
        files = (
            sorted((tmp_path / "hive").rglob("*.parquet"))
            if logs == tmp_path / "hive"
            else (sorted(logs.glob("*.csv")) if isinstance(logs, Path) else logs)
        )
        log = read_log(files)
        with warnings.catch_warnings():  # the statistical notes are not what is tested here
            warnings.simplefilter("ignore")
            expect = estimate_pages(log, methods=("lln", "mle"))
            with get_task_stream(client) as ts:
                got = dask_files_estimates(logs, methods=("lln", "mle"), client=client)
        assert (got.shuffled, got.n_partitions) == (shuffled, parts)
        ran = _ran(ts.data)
        assert ("_split" in ran) == shuffled and ("_pick" in ran) == shuffled, ran
        # each group read and reduced by one task; files sharing a page are then read again and shuffled
        assert "_read_reduce_group" in ran and ({"_read_piece", "_pages_of"} <= ran) == shuffled, ran
        assert got.audit == log.audit and log.audit.last_modified_ignored > 0
        assert "lm_rate" in got.table
        assert_same_page_table(got.table, expect)


def test_warc_files_on_dask_equal_pandas(tmp_path, cluster):
    from test_io_archives import IPD, _write_warc

    _, client, _ = cluster
    rng = np.random.default_rng(2)
    for f in range(3):  # every page in every file: rows must meet across files
        caps = []
        for k in range(40):
            page = f"http://w{k % 9}.example/"
            day = f * 10 + int(rng.integers(0, 10))
            kind = "revisit" if rng.random() < 0.2 else "response"
            caps.append(
                (
                    kind,
                    page,
                    f"2024-03-{day + 1:02d}T{int(rng.integers(0, 24)):02d}:00:00Z",
                    int(rng.choice([200, 200, 500])),
                    str(rng.integers(0, 3)).encode(),
                    IPD,
                )
            )
        _write_warc(tmp_path / f"c{f}.warc.gz", caps)
    files = [tmp_path / f"c{f}.warc.gz" for f in range(3)]
    log = read_log(files)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect = estimate_pages(log, methods=("lln", "mle"))
        got = dask_files_estimates(files, methods=("lln", "mle"), client=client)
    assert got.shuffled and got.audit == log.audit
    assert_same_page_table(got.table, expect)


def test_no_visit_lost_when_a_worker_is_killed(tmp_path, request):
    address, client, procs = _start_cluster(tmp_path, request)
    write_cdxj_shards(tmp_path / "cc", n_urls=6000, n_crawls=4, rng=3, n_shards=3)
    a, b = tmp_path / "pandas.parquet", tmp_path / "dask.parquet"
    assert _estimate(tmp_path / "cc", "--out", a) == 0
    run = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("changerate-bayes")),
            "estimate",
            str(tmp_path / "cc"),
            "--out",
            str(b),
            "--engine",
            "dask",
            "--scheduler",
            address,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    request.addfinalizer(lambda: _stop([run]))
    names = {info["name"]: addr for addr, info in client.scheduler_info()["workers"].items()}
    victim, killed = names["w0"], False
    deadline = time.monotonic() + 300
    while run.poll() is None and time.monotonic() < deadline:
        busy = [str(k) for k in client.processing().get(victim, [])]
        if any(k.startswith("_pages_of") for k in busy):  # its reads are done and held there: they are lost
            os.killpg(procs[1].pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.005)
    out = run.communicate(timeout=300)[0]
    assert killed, "the run ended before the worker could be killed mid-run:\n" + out
    assert procs[1].wait(timeout=15) == -signal.SIGKILL
    assert run.returncode == 0, out
    assert_same_page_table(pd.read_parquet(b), pd.read_parquet(a))
    read = int(out.split("read ", 1)[1].split(" rows", 1)[0])
    assert read == sum(len(gzip_lines(s)) for s in sorted((tmp_path / "cc").rglob("cdx-*.gz")))


def test_bad_records_are_named_from_the_workers(tmp_path, cluster):
    from changerate_bayes.io import CrawlLogError

    _, client, _ = cluster
    shards = write_cdxj_shards(tmp_path / "cc", n_urls=30, n_crawls=2, rng=4, n_shards=1)
    lines = gzip_lines(shards[1])
    lines[2] = lines[2].replace('"status": "200"', '"status": "2o0"').replace('"status": "404"', '"status": "4o4"')
    with gzip.open(shards[1], "wt") as fh:
        fh.writelines(lines)
    with pytest.raises(
        CrawlLogError,
        match=r"CC-MAIN-SYNTH-01/indexes/cdx-00000\.gz: line 3, column 'statuscode': "
        r"expected a number; got '[24]o[04]'",
    ):
        dask_files_estimates(tmp_path / "cc", client=client)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("page,fetch_time,digest\nx,2024-01-01T00:00Z,1\nx,2024-01-02T00:00Z,2\n")
    b.write_text("page,fetch_time,digest\ny,2024-01-01T00:00,1\ny,2024-01-02T00:00,2\n")
    with pytest.raises(CrawlLogError) as pandas_error:
        read_log([a, b])
    with pytest.raises(CrawlLogError) as dask_error:
        dask_files_estimates([a, b], client=client)
    assert str(dask_error.value) == str(pandas_error.value)
    assert "b.csv: line 2, column 'fetch_time': naive times" in str(dask_error.value)
