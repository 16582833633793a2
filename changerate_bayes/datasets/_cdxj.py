"""Synthetic Common Crawl URL-index shards (CDXJ), in the exact format of the real ones."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path

import numpy as np

__all__ = ["surt", "write_cdxj_shards"]

_HOSTS = ("www.example{}.com", "news{}.example.org", "shop{}.example.net")


def surt(url: str) -> str:
    """The SURT key of a URL as Common Crawl's index writes it (scheme and ``www.`` dropped).

    Examples
    --------
    >>> surt("https://www.Example.com/a/b?x=1")
    'com,example)/a/b?x=1'
    """
    rest = url.split("://", 1)[-1]
    host, _, path = rest.partition("/")
    host = host.lower()
    if host.startswith("www."):
        host = host[4:]
    return ",".join(reversed(host.split("."))) + ")/" + path.lower()


def write_cdxj_shards(
    path,
    n_urls: int,
    n_crawls: int,
    rng=None,
    *,
    n_shards: int = 4,
    crawl_interval_days: float = 30.0,
    crawl_days: float = 10.0,
    median_rate: float = 0.02,
    capture_probability: float = 0.9,
    failed_probability: float = 0.01,
) -> list[Path]:
    """Write a synthetic Common Crawl URL index: ``n_crawls`` crawls, each as ``n_shards`` CDXJ shards.

    The layout and lines are Common Crawl's: ``PATH/CC-MAIN-SYNTH-CC/indexes/cdx-NNNNN.gz``,
    gzip, one capture per line, ``SURT-key 14-digit-UTC-timestamp {JSON}`` with the JSON
    keys ``url``, ``mime``, ``mime-detected``, ``status`` (a string), ``digest`` (base-32
    SHA-1 of the payload), ``length``, ``offset``, ``filename``, ``languages``,
    ``encoding``; lines sorted by SURT key then time; the key space is cut into
    ``n_shards`` ranges, so a URL lies in the same-numbered shard of every crawl.

    Each URL has a change rate drawn from a log-normal (median ``median_rate`` changes
    per day, log-sd 1.5), is captured in each crawl with probability
    ``capture_probability``, at a time uniform in the crawl's first ``crawl_days`` days
    (crawl c starts ``c * crawl_interval_days`` days after 2024-01-01), and changes as a
    Poisson process (the payload digest is that of the URL and its version number). A
    fraction ``failed_probability`` of captures are HTTP 404 (no usable content).

    Parameters
    ----------
    path : path
        Folder to write into (created if missing).
    n_urls, n_crawls : int
        URLs (>= 1) and monthly crawls (>= 1).
    rng : int or numpy.random.Generator, optional
        Seed or generator (normalised by ``numpy.random.default_rng``).
    n_shards : int, default 4
        Shards per crawl (>= 1).
    crawl_interval_days, crawl_days, median_rate : float
        Days between crawl starts, days a crawl lasts (<= the interval), median
        changes per day.
    capture_probability, failed_probability : float
        In (0, 1] and [0, 1).

    Returns
    -------
    list of pathlib.Path
        The shards written, crawl by crawl, shard by shard.

    Raises
    ------
    TypeError
        If a count is not an int.
    ValueError
        For a count < 1 or a probability, duration or rate out of range.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     shards = write_cdxj_shards(d, n_urls=5, n_crawls=2, rng=0, n_shards=1, capture_probability=1.0)
    ...     line = gzip.open(shards[0], "rt").readline()
    >>> [s.name for s in shards]
    ['cdx-00000.gz', 'cdx-00000.gz']
    >>> line.split(" ", 2)[0], len(line.split(" ", 2)[1]), sorted(json.loads(line.split(" ", 2)[2]))[:3]
    ('com,example0)/page/0', 14, ['digest', 'encoding', 'filename'])
    """
    for name, val in (("n_urls", n_urls), ("n_crawls", n_crawls), ("n_shards", n_shards)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
            raise TypeError(f"`{name}` must be an int; got {type(val).__name__}")
        if val < 1:
            raise ValueError(f"`{name}` must be >= 1; got {val}")
    if not 0 < capture_probability <= 1:
        raise ValueError(f"`capture_probability` must be in (0, 1]; got {capture_probability}")
    if not 0 <= failed_probability < 1:
        raise ValueError(f"`failed_probability` must be in [0, 1); got {failed_probability}")
    if not (crawl_interval_days > 0 and 0 < crawl_days <= crawl_interval_days):
        raise ValueError(f"need 0 < `crawl_days` <= `crawl_interval_days`; got {crawl_days}, {crawl_interval_days}")
    if not median_rate > 0:
        raise ValueError(f"`median_rate` must be > 0 changes per day; got {median_rate}")
    rng = np.random.default_rng(rng)
    out = Path(path)
    urls = [f"https://{_HOSTS[i % 3].format(i // 3 % 997)}/page/{i}" for i in range(n_urls)]
    keys = [surt(u) for u in urls]
    order = np.argsort(np.array(keys, dtype=object), kind="stable")
    cut = np.array_split(order, n_shards)
    rates = median_rate * np.exp(1.5 * rng.standard_normal(n_urls))  # per day
    captured = rng.random((n_crawls, n_urls)) < capture_probability
    days = np.arange(n_crawls)[:, None] * crawl_interval_days + rng.uniform(0, crawl_days, (n_crawls, n_urls))
    # versions: Poisson changes between successive capture times (in time order per URL)
    gaps = np.diff(np.vstack([np.zeros((1, n_urls)), days]), axis=0)
    version = rng.poisson(rates[None, :] * gaps).cumsum(axis=0)
    failed = rng.random((n_crawls, n_urls)) < failed_probability
    seconds = np.round(days * 86400).astype(np.int64)
    t0 = np.datetime64("2024-01-01T00:00:00", "s")
    written = []
    for c in range(n_crawls):
        crawl = f"CC-MAIN-SYNTH-{c:02d}"
        folder = out / crawl / "indexes"
        folder.mkdir(parents=True, exist_ok=True)
        stamps = np.datetime_as_string(t0 + seconds[c].astype("timedelta64[s]"), unit="s")
        for s, idx in enumerate(cut):
            lines = []
            for i in idx:
                if not captured[c, i]:
                    continue
                payload = f"{urls[i]}#{version[c, i]}".encode() if not failed[c, i] else b"not found"
                digest = base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")
                meta = {
                    "url": urls[i],
                    "mime": "text/html",
                    "mime-detected": "text/html",
                    "status": "404" if failed[c, i] else "200",
                    "digest": digest,
                    "length": str(1000 + int(i) % 5000),
                    "offset": str(int(i) * 7919),
                    "filename": f"crawl-data/{crawl}/segments/1/warc/{crawl}-{s:05d}.warc.gz",
                    "languages": "eng",
                    "encoding": "UTF-8",
                }
                stamp = stamps[i].replace("-", "").replace("T", "").replace(":", "")
                lines.append(f"{keys[i]} {stamp} {json.dumps(meta)}\n")
            shard = folder / f"cdx-{s:05d}.gz"
            tmp = shard.with_name(shard.name + ".part")
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                fh.writelines(lines)
            tmp.replace(shard)
            written.append(shard)
    return written
