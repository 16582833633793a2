"""Nutch's and StormCrawler's adaptive schedules in the replay, against their sources.

The scenarios of Nutch's own unit test ``TestAdaptiveFetchSchedule`` (releases 1.21 and
1.22), hand-derived fetch sequences over many crawl cycles, and a short per-cycle
reference written from the Java definitions (AdaptiveFetchSchedule.setFetchSchedule,
CrawlDbReducer's forceRefetch, Generator's shouldFetch; StormCrawler's
AdaptiveScheduler.schedule)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.replay import (
    NUTCH_DEFAULTS,
    NUTCH_MODIFIED,
    NUTCH_NOTMODIFIED,
    NUTCH_UNKNOWN,
    STORMCRAWLER_DEFAULTS,
    NutchPolicy,
    StormCrawlerPolicy,
    nutch_update,
    pages_from_table,
    run_replay,
    stormcrawler_update,
)

DAY_S = 86_400
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
NUTCH = {k: v for k, v in NUTCH_DEFAULTS.items() if k != "initial_interval"}
STORM = {k: v for k, v in STORMCRAWLER_DEFAULTS.items() if k != "initial_interval"}
F03 = float(np.float32(0.3))  # Nutch reads sync_delta_rate as a float, then uses it as a double


def a(x):
    return np.array([x], dtype=float)


# ----------------------------------------------------------------------------- TestAdaptiveFetchSchedule
@pytest.mark.parametrize("version", ["1.22", "1.21"])
def test_interval_of_100_seconds_as_in_nutchs_core_test(version):
    # testAdaptiveFetchSchedule: interval 100 s, nutch-default.xml rates (inc 0.4, dec 0.2)
    for state, want in [(NUTCH_UNKNOWN, 100), (NUTCH_MODIFIED, 80), (NUTCH_NOTMODIFIED, 140)]:
        iv, _, _, reset = nutch_update(a(100 / DAY_S), a(np.nan), 0.0, np.array([state]), version=version, **NUTCH)
        assert iv[0] * DAY_S == pytest.approx(want, abs=1e-9) and not reset[0]


@pytest.mark.parametrize("max_days, interval_max_days, changed_days_ago", [(7, 7, 30), (2, 7, 10), (10, 10, 180)])
def test_set_fetch_schedule_1_to_3_of_nutchs_test(max_days, interval_max_days, changed_days_ago):
    # testSetFetchSchedule1-3: sync_delta_rate 0.3, min 1 d, the adaptive max and
    # db.fetch.interval.max as given, the page last changed ``changed_days_ago``; the test
    # passes a state that is none of the three (CrawlDatum.STATUS_DB_NOTMODIFIED), so the
    # interval (100 s) is unchanged before the sync: δ > 100 s, so interval = δ, then capped
    # at the max. 1.22: the offset 0.3·δ exceeds the max, so it is 0 -> next = t + max.
    # 1.21: next = t - round(0.3f·δ) + max, in the past by (0.3·δ - max).
    par = dict(NUTCH, min_interval=1.0, max_interval=float(max_days), max_fetch_interval=float(interval_max_days))
    t = 20_000.0
    for version, want_ms in [
        ("1.22", max_days * DAY_MS),
        ("1.21", max_days * DAY_MS - math.floor(changed_days_ago * DAY_S * F03 * 1000 + 0.5)),
    ]:
        iv, nxt, mod, reset = nutch_update(
            a(100 / DAY_S), a(t - changed_days_ago), t, np.array([NUTCH_UNKNOWN]), version=version, **par
        )
        assert round((nxt[0] - t) * DAY_MS) == want_ms
        assert iv[0] == max_days and mod[0] == t - changed_days_ago and not reset[0]
    # the summary: +7, +2, +10 days under 1.22; -2, -1, -44 days under 1.21
    assert round(max_days - F03 * changed_days_ago) == {30: -2, 10: -1, 180: -44}[changed_days_ago]


def test_nutch_update_rules_and_force_refetch():
    t = 100.0
    # a change: × 0.8 and modified = t, so δ = 0 and the reference time is t
    iv, nxt, mod, reset = nutch_update(a(10.0), a(50.0), t, np.array([NUTCH_MODIFIED]), **NUTCH)
    assert (iv[0], nxt[0], mod[0], reset[0]) == (8.0, 108.0, 100.0, False)
    # no change, last change 20 days ago: × 1.4 = 14 d < δ = 20 d, so the interval is δ; offset
    # round(0.3f · 20 d) in ms; the modified time stays
    iv, nxt, mod, reset = nutch_update(a(10.0), a(80.0), t, np.array([NUTCH_NOTMODIFIED]), **NUTCH)
    off = math.floor(20 * DAY_MS * F03 + 0.5)
    assert (iv[0], mod[0], reset[0]) == (20.0, 80.0, False)
    assert round(nxt[0] * DAY_MS) == round(t * DAY_MS) - off + 20 * DAY_MS
    # without sync_delta: × 1.4 from t
    iv, nxt, _, _ = nutch_update(a(10.0), a(80.0), t, np.array([NUTCH_NOTMODIFIED]), **{**NUTCH, "sync_delta": False})
    assert iv[0] * DAY_S == 14 * DAY_S and nxt[0] == pytest.approx(114.0, abs=1e-9)
    # the minimum, 60 s
    iv, _, _, _ = nutch_update(a(1e-4), a(np.nan), t, np.array([NUTCH_MODIFIED]), **NUTCH)
    assert iv[0] * DAY_S == pytest.approx(60.0)
    # past db.fetch.interval.max (90 d): 80 × 1.4 = 112 d > 90 d -> forceRefetch: interval
    # round(7776000 × 0.9f) = 6998400 s = 81 d, modified time cleared, the fetch time (t - 0.3f·10 d
    # + 112 d) kept
    iv, nxt, mod, reset = nutch_update(a(80.0), a(90.0), t, np.array([NUTCH_NOTMODIFIED]), **NUTCH)
    assert iv[0] * DAY_S == 6_998_400 and np.isnan(mod[0]) and reset[0]
    assert round(nxt[0] * DAY_MS) == round(t * DAY_MS) - math.floor(10 * DAY_MS * F03 + 0.5) + 112 * DAY_MS
    # UNKNOWN (no signature) leaves the interval as it is, and a missing modified time is t
    iv, nxt, mod, reset = nutch_update(a(81.0), a(np.nan), t, np.array([NUTCH_UNKNOWN]), **NUTCH)
    assert (iv[0], nxt[0], mod[0], reset[0]) == (81.0, 181.0, 100.0, False)


def test_nutch_update_validates_its_input():
    with pytest.raises(ValueError, match=r"`version` must be one of \('1.22', '1.21'\); got '1.20'"):
        nutch_update(a(1.0), a(0.0), 1.0, np.array([1]), version="1.20", **NUTCH)
    with pytest.raises(ValueError, match=r"`state` must hold 0 \(UNKNOWN\), 1 \(MODIFIED\) or 2"):
        nutch_update(a(1.0), a(0.0), 1.0, np.array([3]), **NUTCH)
    with pytest.raises(TypeError, match="`sync_delta` must be a bool; got str"):
        nutch_update(a(1.0), a(0.0), 1.0, np.array([1]), **{**NUTCH, "sync_delta": "yes"})
    with pytest.raises(ValueError, match="`version` must be one of"):
        NutchPolicy(version="2.4")


# ----------------------------------------------------------------------------- many cycles
class _Recording:
    """Mixin: record each page's fetch times (days), keeping the compiled path."""

    def reset(self, ctx):
        super().reset(ctx)
        self.fetches = [[] for _ in range(ctx.n_pages)]

    def observe(self, k, t, changed, interval, mask):
        for i in np.flatnonzero(mask):
            self.fetches[i].append(round(t * 24) / 24)
        super().observe(k, t, changed, interval, mask)


class RecordingNutch(_Recording, NutchPolicy):
    pass


class RecordingStorm(_Recording, StormCrawlerPolicy):
    pass


def _two_pages(days=1100.0):
    changes = pd.DataFrame({"page": ["changed_on_day_5"], "timestamp": [5.0]})
    win = pd.DataFrame({"page": ["never_changes", "changed_on_day_5"], "start": [0.0, 0.0], "end": [days, days]})
    return pages_from_table(changes, window=win)


# Hand derivation, nutch-default.xml, 1-hour cycles, the first fetch at day 0 (UNKNOWN: the
# interval stays 30 d, the modified time becomes 0). Never changes:
#   30     NOTMODIFIED 42 d; δ 30 < 42; next = 30 - 9 + 42 = 63
#   63     58.8 d < δ 63 -> 63 d; next = 63 - 18.9 + 63 = 107.1 -> the cycle at 107.125
#   107.125 δ = 107.125 > 88.2 -> 107.125 d > 90 d: forceRefetch (81 d, no signature, no
#          modified time); next = 107.125 - 32.1375 + 107.125 = 182.1125 (less than 90 d ahead:
#          no pull) -> 182.125
#   182.125 UNKNOWN: 81 d, δ = 0; next 263.125
#   263.125 NOTMODIFIED 113.4 d > 90 d: forceRefetch; next = 263.125 - 24.3 + 113.4 = 352.225
#   then every 81 d and 89.1 d in turn (to the next whole hour): 352.25, 433.25, 522.375, 603.375,
#   692.5, 773.5, 862.625, 943.625, 1032.75 (next 1113.75 > 1100): 14 fetches after day 0.
# Changed on day 5 (Nutch dates the change by the fetch that sees it):
#   30     MODIFIED 24 d, modified = 30; next 54
#   54     33.6 d, δ 24; next = 54 - 7.2 + 33.6 = 80.4 -> 80.417
#   80.417 47.04 < δ 50.417; next = 80.417 - 15.125 + 50.417 = 115.708
#   115.708 70.58 < δ 85.708; next = 115.708 - 25.7125 + 85.708 = 175.704 -> 175.708
#   175.708 119.99 < δ 145.708 > 90 d: forceRefetch; next = 175.708 + 0.7·145.708 = 277.7,
#          more than 90 d ahead of the next cycle: the Generator fetches it at 175.75
#   175.75 UNKNOWN 81 d -> 256.75; then 81 / 89.1 in turn: 345.875, 426.875, 516.0, 597.0,
#          686.125, 767.125, 856.25, 937.25, 1026.375 (next 1107.375): 16 fetches after day 0.
NEVER_CHANGES = [
    30.0,
    63.0,
    107.125,
    182.125,
    263.125,
    352.25,
    433.25,
    522.375,
    603.375,
    692.5,
    773.5,
    862.625,
    943.625,
    1032.75,
]
CHANGED_ON_DAY_5 = [
    30.0,
    54.0,
    80 + 10 / 24,
    115 + 17 / 24,
    175 + 17 / 24,
    175.75,
    256.75,
    345.875,
    426.875,
    516.0,
    597.0,
    686.125,
    767.125,
    856.25,
    937.25,
    1026.375,
]


@pytest.mark.parametrize("version", ["1.22", "1.21"])
def test_nutch_defaults_over_1100_days_of_hourly_cycles(version):
    pol = RecordingNutch(version=version)
    res = run_replay(_two_pages(), pol, dt_ms=HOUR_MS, rng=0)
    assert list(res.crawls) == [14, 16]
    assert pol.fetches[0] == pytest.approx(NEVER_CHANGES, abs=1e-9)
    assert pol.fetches[1] == pytest.approx(CHANGED_ON_DAY_5, abs=1e-9)


def _nutch_reference(
    change_days,
    days,
    dt_h,
    *,
    version,
    inc_rate=0.4,
    dec_rate=0.2,
    min_s=60.0,
    max_s=365.0 * DAY_S,
    max_fetch_s=90 * DAY_S,
    rate=0.3,
    initial_s=30 * DAY_S,
):
    """Fetch times (days) of one page under Nutch, cycle by cycle, from the Java definitions
    (float32 where Java uses float; times in ms since the start; ``None``: no modified time)."""
    cyc = dt_h * 3_600_000
    changes = sorted(round(c * DAY_MS) for c in change_days)
    interval, modified, signature, fetch_time = initial_s, 0, True, initial_s * 1000  # fetched at 0 (UNKNOWN)
    last = 0
    out = []
    k = 1
    while k * cyc <= days * DAY_MS:
        now = k * cyc
        if fetch_time - now > max_fetch_s * 1000:  # Generator.shouldFetch
            fetch_time = now
        if fetch_time <= now:
            changed = any(last < c <= now for c in changes)
            last = now
            out.append(now / DAY_MS)
            state = 0 if not signature else (1 if changed else 2)
            f = np.float32
            iv = f(interval)
            iv = iv * (f(1) - f(dec_rate)) if state == 1 else (iv * (f(1) + f(inc_rate)) if state == 2 else iv)
            mod = now if (modified is None or state == 1) else modified
            delta = now - mod
            if version == "1.22":
                if f(delta) > iv * f(1000):
                    iv = f(delta // 1000)
                offset = math.floor(delta * F03 + 0.5)
                if delta > 0 and offset > int(max_s) * 1000:
                    offset = (offset // delta) * int(max_s) * 1000
            else:
                if f(delta // 1000) > iv:
                    iv = f(delta // 1000)
                offset = math.floor((delta // 1000) * F03 * 1000 + 0.5)
            iv = min(max(iv, f(min_s)), f(max_s))
            interval = math.floor(float(iv) + 0.5)
            fetch_time = now - offset + math.floor(float(iv) * 1000 + 0.5)
            modified = modified if state == 2 else mod
            signature = True
            if interval > max_fetch_s:  # forceRefetch
                interval, signature, modified = math.floor(float(f(max_fetch_s) * f(0.9)) + 0.5), False, None
        k += 1
    return out


@pytest.mark.parametrize("version", ["1.22", "1.21"])
@pytest.mark.parametrize("settings_", [dict(), dict(inc_rate=1.0), dict(max_s=7 * DAY_S), dict(dec_rate=0.45)])
def test_nutch_replay_follows_the_per_cycle_reference(version, settings_):
    rng = np.random.default_rng(3)
    days = 400.0
    # bursts and quiet spells: 3 pages with changes at random days
    change_days = [np.sort(rng.uniform(0, days, n)) for n in (0, 6, 60)]
    rows = [(f"p{j}", c) for j, cs in enumerate(change_days) for c in cs]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": ["p0", "p1", "p2"], "start": 0.0, "end": days})
    pages = pages_from_table(changes, window=win)
    kw = dict(
        inc_rate=settings_.get("inc_rate", 0.4),
        dec_rate=settings_.get("dec_rate", 0.2),
        max_interval=settings_.get("max_s", 365 * DAY_S) / DAY_S,
    )
    pol = RecordingNutch(version=version, **kw)
    run_replay(pages, pol, dt_ms=6 * HOUR_MS, rng=0)
    for j in range(3):
        ref = _nutch_reference(change_days[j], days, 6, version=version, **settings_)
        assert pol.fetches[j] == pytest.approx(ref, abs=1e-9)


def test_nutch_1_21_refetches_every_cycle_where_1_22_waits_the_max():
    # adaptive max 7 d, db.fetch.interval.max 90 d, a page that never changes, daily cycles.
    # Day 30: NOTMODIFIED, 42 d, δ = 30 d, offset 0.3·δ = 9 d > 7 d. 1.22: offset 0, interval
    # capped at 7 d: next = 37, and so on every 7 days (0.3·δ only grows): 30, 37, ..., 338.
    # 1.21: next = 30 - 9 + 7 = 28, in the past: fetched the next day, and every day after
    # (δ grows, 0.3·δ stays > 7 d; the interval, 7 d, never reaches db.fetch.interval.max).
    pages = _two_pages(days=340.0)
    got = {}
    for version in ("1.22", "1.21"):
        res = run_replay(pages, NutchPolicy(version=version, max_interval=7.0), dt_ms=24 * HOUR_MS, rng=0)
        got[version] = int(res.crawls[0])
    assert got["1.22"] == 1 + (338 - 30) // 7  # days 30, 37, ..., 338
    assert got["1.21"] == 340 - 30 + 1  # every day from day 30


# ----------------------------------------------------------------------------- StormCrawler
def _storm_reference(iv, changed, inc, dec, lo, hi):
    """AdaptiveScheduler.schedule's interval (int minutes), Java float arithmetic."""
    f = np.float32
    if changed:
        return int((f(1.0) - f(dec)) * f(iv) + f(dec) * f(lo))
    return min(int(f(iv) * (f(1.0) + f(inc))), hi)


@settings(max_examples=200, deadline=None)
@given(iv=st.integers(1, 20_160), changed=st.booleans(), inc=st.floats(0.0, 3.0), dec=st.floats(0.0, 1.0))
def test_stormcrawler_update_is_the_java_integer_arithmetic(iv, changed, inc, dec):
    got, nxt = stormcrawler_update(
        a(iv / 1440), 10.0, np.array([changed]), inc_rate=inc, dec_rate=dec, min_interval=60 / 1440, max_interval=14.0
    )
    want = _storm_reference(iv, changed, inc, dec, 60, 20_160)
    assert round(got[0] * 1440) == want
    assert round(nxt[0] * DAY_MS) == 10 * DAY_MS + want * 60_000


def test_stormcrawler_whole_minutes():
    # truncation: 90 -> 135 -> 202 (202.5) unchanged; a change: (int)(0.5·135 + 0.5·60) = 97
    iv, _ = stormcrawler_update(np.array([90, 135, 135]) / 1440, 0.0, np.array([0, 0, 1]), **STORM)
    assert list(np.rint(iv * 1440)) == [135, 202, 97]
    # from the 60-minute minimum an increase rate below 1/60 never lengthens the interval:
    # a page that never changes, with inc 0.01 and the interval at the minimum, is fetched
    # every hour
    changes = pd.DataFrame({"page": pd.Series([], dtype=str), "timestamp": pd.Series([], dtype=float)})
    win = pd.DataFrame({"page": ["a"], "start": [0.0], "end": [10.0]})
    pages = pages_from_table(changes, window=win)
    res = run_replay(pages, StormCrawlerPolicy(inc_rate=0.01, initial_interval=1 / 24), dt_ms=HOUR_MS, rng=0)
    assert res.crawls[0] == 240
    # just above 1/60 it grows: (int)(60 · 1.017) = 61
    iv, _ = stormcrawler_update(
        np.full(2, 60 / 1440), 0.0, np.zeros(2, dtype=bool), **{**STORM, "inc_rate": np.array([0.0166, 0.017])}
    )
    assert list(np.rint(iv * 1440)) == [60, 61]


def test_stormcrawler_defaults_over_1100_days_of_hourly_cycles():
    # 1 d, then × 1.5 (whole minutes) until 14 d: 1440, 2160, 3240, 4860, 7290, 10935, 16402,
    # 20160 min. Never changes: fetches at day 1, then after each interval from 2160 min.
    pol = RecordingStorm()
    res = run_replay(_two_pages(), pol, dt_ms=HOUR_MS, rng=0)
    t, iv, want = 0.0, 1440, []
    while True:
        t += iv / 1440
        hour = math.ceil(round(t * 24, 9)) / 24  # fetched at the first cycle at or after its time
        if hour > 1100:
            break
        want.append(hour)
        t = hour
        iv = min(int(np.float32(iv) * np.float32(1.5)), 20_160)
    assert pol.fetches[0] == pytest.approx(want, abs=1e-9)
    assert want[:4] == [1.0, 2.5, 4.75, 8.125] and res.crawls[0] == len(want)
