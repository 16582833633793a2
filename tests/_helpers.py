"""Helpers shared by several test modules (and by the scripts in tests/data/)."""

from __future__ import annotations

import contextlib
import gzip
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import special

from changerate_bayes.io import CrawlLogError, read_csv
from changerate_bayes.replay import pages_from_table

#: a small crawl log: page a changes twice in four visits 6 h apart, page b not in two visits a day apart
# The command as a shell at a terminal starts it: SIGINT unblocked and handled by Python. A
# child inherits its parent's signal mask and ignored signals, and the test process (a
# pytest-xdist worker that has run other tests) is not a terminal's shell. Run as
# ``[sys.executable, "-c", AT_A_TERMINAL, *command_arguments]``.
AT_A_TERMINAL = (
    "import signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from changerate_bayes.cli import main; sys.exit(main())"
)

TWO_PAGE_LOG = """page,fetch_time,digest
a,2024-01-01T00:00:00Z,x
a,2024-01-01T06:00:00Z,y
a,2024-01-01T12:00:00Z,y
a,2024-01-01T18:00:00Z,z
b,2024-01-01T00:00:00Z,k
b,2024-01-02T00:00:00Z,k
"""
#: the same log with other names of its columns (page=url, fetch_time=ts, digest=sha1)
TWO_PAGE_LOG_RENAMED = TWO_PAGE_LOG.replace("page,fetch_time,digest\n", "url,ts,sha1\n", 1)


def staggered_pages(seed: int, n_pages: int = 24, days: float = 40.0, n_quiet: int = 3):
    """Replay pages whose windows start and end at different times (some enter late, some
    leave early), log-normal change rates, ``n_quiet`` pages that never change."""
    rng = np.random.default_rng(seed)
    start = np.where(rng.random(n_pages) < 0.5, 0.0, rng.uniform(0.0, 0.6 * days, n_pages))
    end = np.where(rng.random(n_pages) < 0.5, days, start + rng.uniform(1.0, 0.4 * days, n_pages))
    rows = []
    for i in range(n_pages - n_quiet):
        rate = rng.lognormal(np.log(0.3), 1.2)
        t = np.sort(rng.uniform(start[i], end[i], rng.poisson(rate * (end[i] - start[i]))))
        rows += [(f"p{i}", x) for x in t]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(n_pages)], "start": start, "end": end})
    return pages_from_table(changes, window=win)


def gamma_moments(a, b, changed, tau):
    """Exact posterior mean, sd and CDF of Δ under a Gamma(a, b) prior (hand derivation).

    π(Δ | data) ∝ Δ^{a−1} e^{−(b + T0)Δ} Π_{I_j = 1} (1 − e^{−τ_j Δ})
                = Σ_{s ⊆ changed} (−1)^{|s|} Δ^{a−1} e^{−β_s Δ},  β_s = b + T0 + Σ_{j∈s} τ_j,
    a signed mixture of Gamma(a, β_s) kernels: Z = Γ(a) Σ ± β_s^{−a},
    E[Δ^r] = Γ(a + r)/Γ(a) Σ ± β_s^{−a−r} / Σ ± β_s^{−a},
    P(Δ <= x) = Σ ± β_s^{−a} P(a, β_s x) / Σ ± β_s^{−a}.
    (The alternating sum cancels catastrophically when T0 dwarfs the changed τ_j.)
    """
    changed, tau = np.asarray(changed), np.asarray(tau, dtype=float)
    t0, ones = tau[changed == 0].sum(), tau[changed == 1]
    signs, betas = [], []
    for subset in itertools.product((0, 1), repeat=ones.size):
        s = np.array(subset, dtype=bool)
        signs.append((-1) ** int(s.sum()))
        betas.append(b + t0 + ones[s].sum())
    signs, betas = np.array(signs, float), np.array(betas)
    z = np.sum(signs * betas**-a)
    m1 = a * np.sum(signs * betas ** (-a - 1)) / z
    m2 = a * (a + 1) * np.sum(signs * betas ** (-a - 2)) / z

    def cdf(x):
        return np.sum(signs * betas**-a * special.gammainc(a, betas * x)) / z

    return m1, np.sqrt(m2 - m1 * m1), cdf


@contextlib.contextmanager
def local_dask_client(*, processes: bool):
    """A distributed.Client on a local cluster of two one-thread workers, closed on exit."""
    import distributed  # imported by the tests that use it, not at collection

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def dask_flags(client):
    """The command-line flags that run a command on the Dask cluster of the distributed.Client ``client``."""
    return ["--engine", "dask", "--scheduler", client.scheduler.address]


def assert_same_page_table(table, expect):
    """The same pages in the same order; counts, visits, rate methods and bounds equal; numbers to 1e-12."""
    assert table["page"].tolist() == expect["page"].tolist()
    for c in ("n_crawls", "n_changes", "first_visit", "last_visit", "rate_method", "rate_bound"):
        assert table[c].tolist() == expect[c].tolist(), c
    num = [c for c in expect.columns if c not in ("page", "first_visit", "last_visit", "rate_method", "rate_bound")]
    np.testing.assert_allclose(table[num].to_numpy(float), expect[num].to_numpy(float), rtol=1e-12, atol=0)


def replay_cli(changes, *args, budget="2"):
    """The exit code of ``changerate-bayes replay`` on the change history in the file ``changes``
    over 2024-01-01 to 2024-01-10, for the uniform policy at ``budget`` crawls a day, without bootstrap,
    with more arguments ``args`` (made text)."""
    from changerate_bayes.cli import main

    window = ["--window", "2024-01-01T00:00Z", "2024-01-10T00:00Z"]
    return main(
        ["replay", str(changes), *window, "--budget", budget, "--policies", "uniform", "--n-boot", "0", *map(str, args)]
    )


def write_log(tmp_path, text, name="log.csv"):
    """The crawl log ``text`` written to ``tmp_path / name`` (gzip-compressed when the name ends
    in .gz, UTF-8); its path."""
    path = tmp_path / name
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def assert_read_csv_refuses(path, match, **kwargs):
    """``read_csv(path, **kwargs)`` raises a CrawlLogError whose message matches the regular
    expression ``match``."""
    with pytest.raises(CrawlLogError, match=match):
        read_csv(path, **kwargs)


def daily_log(header, visits, pages=("a",)):
    """The text of a CSV crawl log: ``header`` (with its newline), then for each page of ``pages``
    one row per visit ``(day, field, ...)`` of ``visits``: the page, midnight UTC of 2024-01-<day>,
    the fields. ``visits`` may be a function of the page's position in ``pages`` giving them."""
    return header + "".join(
        f"{page},2024-01-{day:02d}T00:00Z,{','.join(map(str, fields))}\n"
        for i, page in enumerate(pages)
        for day, *fields in (visits(i) if callable(visits) else visits)
    )


def replay_learners(make, name, changes):
    """Replay a learner under the plug-in and the Thompson policy (named ``name`` and
    ``name + "_ts"``): pages a, b, c in the windows [0, 5], [0.5, 5] and [1, 4] days with the
    changes of the table ``changes`` (page, timestamp in days), 3 crawls a day, 1-hour steps,
    seed 0; every learner is ``make(n_pages)``. Returns the table of replay_policies and the
    learners made, in order."""
    from changerate_bayes.replay import PlugInPolicy, ThompsonPolicy, replay_policies

    made = []

    def factory(n):
        made.append(make(n))
        return made[-1]

    win = pd.DataFrame({"page": ["a", "b", "c"], "start": [0.0, 0.5, 1.0], "end": [5.0, 5.0, 4.0]})
    df = replay_policies(
        changes,
        window=win,
        budget=3.0,
        policies=[PlugInPolicy(factory, name=name), ThompsonPolicy(factory, name=f"{name}_ts")],
        step="1h",
        rng=0,
    )
    return df, made


def dask_frame_estimates(visits, *, npartitions=None, source="<dask dataframe>", client=None, **options):
    """The Dask engine's per-page estimates of the Dask DataFrame ``visits`` (as
    ``crawllog.estimate(visits, engine="dask", ...)``), with the engine's own settings the tests
    vary: ``npartitions`` after the shuffle, the ``source`` named in messages, and ``client``
    (default: the current Dask scheduler, e.g. the synchronous one)."""
    from changerate_bayes.crawllog.dask_engine import _estimate_frame
    from changerate_bayes.crawllog.table import LogOptions

    res, _ = _estimate_frame(visits, LogOptions(**options), npartitions=npartitions, source=source, client=client)
    return res


def dask_files_estimates(paths, *, partitioned="auto", npartitions=None, chunk_rows=None, client=None, **options):
    """The Dask engine's per-page estimates of the log files ``paths`` read one file per task (as
    ``crawllog.estimate(paths, engine="dask", ...)`` of several files, its table's warnings issued),
    with the engine's own settings the tests vary: ``partitioned``, ``npartitions`` of a shuffle,
    ``chunk_rows`` and ``client`` (default: the current client)."""
    from changerate_bayes.crawllog.dask_engine import _estimate_files
    from changerate_bayes.crawllog.table import LogOptions, warn_table_notes
    from changerate_bayes.io import log_files

    files, buckets = log_files(paths)
    res, _ = _estimate_files(
        files,
        buckets,
        LogOptions(**options),
        partitioned=partitioned,
        npartitions=npartitions,
        chunk_rows=chunk_rows,
        client=client,
    )
    warn_table_notes(res.table)
    return res
