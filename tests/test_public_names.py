"""The names users imported before the crawl-log product moved into ``changerate_bayes.crawllog``
still work: from the package (unchanged), and from the old module paths (deprecated aliases
that warn and resolve to the same objects)."""

import importlib

import pytest

import changerate_bayes
import changerate_bayes.bayes as bayes
import changerate_bayes.crawllog as crawllog
import changerate_bayes.replay as replay
import changerate_bayes.scheduling as scheduling
from changerate_bayes.crawllog import allocate, dask_engine, out_of_core, table
from changerate_bayes.crawllog import fetch_schedule as schedule

# name -> the object it must be, for every name the package exported before the move
TOP_LEVEL = {
    "estimate_pages": table.estimate_pages,
    "estimate_log": out_of_core.estimate_log,
    "LogEstimates": table.LogEstimates,
    "schedule_pages": schedule.schedule_pages,
    "write_schedule": schedule.write_schedule,
    "allocate_crawls": allocate.allocate_crawls,
}

# old module -> {name: the object it must resolve to}
OLD_MODULES = {
    "changerate_bayes.pages": {
        "estimate_pages": table.estimate_pages,
        "allocate_crawls": allocate.allocate_crawls,
        "recommend_rate": table.recommend_rate,
        "merge_notes": table.merge_notes,
        "one_note_per_check": table.one_note_per_check,
        "page_table": table.page_table,
        "concat_part_tables": table.concat_part_tables,
        "PAGE_COLUMNS": table.PAGE_COLUMNS,
        "RATE_COLUMNS": table.RATE_COLUMNS,
        "IDENTIFIED_MIN": table.IDENTIFIED_MIN,
        "RECOMMENDED_POLICY": allocate.RECOMMENDED_POLICY,
        "MAX_INTERVAL_FACTOR": allocate.MAX_INTERVAL_FACTOR,
    },
    "changerate_bayes.cluster": {
        "ClusterEstimates": table.LogEstimates,
        "estimate_files_dask": dask_engine.estimate_files_dask,
        "estimate_pages_dask": dask_engine.estimate_pages_dask,
        "per_page_partitions": dask_engine.per_page_partitions,
    },
    "changerate_bayes.crawl_schedule": {
        "MAX_INTERVAL_H": schedule.MAX_INTERVAL_H,
        "SCHEDULE_COLUMNS": schedule.SCHEDULE_COLUMNS,
        "SCHEDULE_FORMATS": schedule.SCHEDULE_FORMATS,
        "crawl_schedule": schedule.crawl_schedule,
        "nutch_seed_lines": schedule.nutch_seed_lines,
        "schedule_pages": schedule.schedule_pages,
        "write_schedule": schedule.write_schedule,
        "schedule_files_dask": dask_engine.schedule_files_dask,
        "schedule_pages_dask": dask_engine.schedule_pages_dask,
        "change_probability": bayes.change_probability,
        "posterior_history": bayes.posterior_history,
    },
}


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_the_package_names_are_the_crawllog_implementation(name, recwarn):
    assert getattr(changerate_bayes, name) is TOP_LEVEL[name]
    assert getattr(crawllog, name) is TOP_LEVEL[name]
    assert name in changerate_bayes.__all__
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]  # not deprecated


@pytest.mark.parametrize("module,name", [(m, n) for m, names in OLD_MODULES.items() for n in sorted(names)])
def test_an_old_module_path_warns_and_gives_the_new_object(module, name):
    old = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"^{module}\.{name} is deprecated; use changerate_bayes\."):
        value = getattr(old, name)
    assert value is OLD_MODULES[module][name]
    assert name in dir(old)


@pytest.mark.parametrize("module", sorted(OLD_MODULES))
def test_an_old_module_path_has_only_its_old_names(module):
    old = importlib.import_module(module)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        old.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec(f"from {module} import no_such_name", {})


def test_the_two_result_types_are_one():
    assert dask_engine.ClusterEstimates is crawllog.LogEstimates is changerate_bayes.LogEstimates
    res = crawllog.LogEstimates(table=None, audit=None, engine="dask", n_parts=3, shuffled=True)
    assert (res.n_partitions, res.n_buckets, res.shuffled, res.spilled_bytes) == (3, 3, True, 0)


def test_the_moved_predictive_and_index_keep_their_old_homes():
    # the freshness index lives in scheduling; replay re-exports the same functions
    assert replay.freshness_index is scheduling.freshness_index
    assert replay.predictive_freshness_index is scheduling.predictive_freshness_index
    assert bayes.change_probability.__module__ == "changerate_bayes.bayes._predictive"
    assert scheduling.freshness_index.__module__ == "changerate_bayes.scheduling._freshness_index"


def test_the_entry_points_choose_the_engine_by_the_input(tmp_path):
    import pandas as pd

    visits = pd.DataFrame(
        {
            "page": ["a"] * 4 + ["b"] * 4,
            "changed": [0, 1, 0, 0, 0, 0, 1, 1],
            "fetch_time": list(pd.date_range("2024-01-01", periods=4, freq="6h", tz="UTC")) * 2,
        }
    )
    path = tmp_path / "log.csv"
    visits.to_csv(path, index=False)
    in_memory = crawllog.estimate(visits, budget=2.0)
    from_file = crawllog.estimate(path, budget=2.0)
    kept = crawllog.estimate(path, budget=2.0, keep_log=True)
    assert (in_memory.engine, from_file.engine, kept.engine) == ("pandas", "buckets", "pandas")
    assert from_file.format == "csv" and kept.log is not None and from_file.log is None
    pd.testing.assert_frame_equal(in_memory.table, from_file.table)
    pd.testing.assert_frame_equal(from_file.table, kept.table)
    assert crawllog.schedule(path, budget=2.0).engine == "pandas"
    with pytest.raises(ValueError, match=r"`engine` must be None or one of \['pandas', 'dask'\]; got 'buckets'"):
        crawllog.schedule(path, engine="buckets")
    with pytest.raises(ValueError, match="a DataFrame is estimated by the pandas engine"):
        crawllog.estimate(visits, engine="buckets")
    with pytest.raises(ValueError, match="`ota_changed` applies to Open Terms Archive logs"):
        crawllog.estimate(path, ota_changed="raw")


def _tiny_log_files(tmp_path):
    """Two CSV files of one log (three pages, rows dealt alternately, so every page is in both)."""
    import pandas as pd

    times = pd.date_range("2024-01-01", periods=6, freq="6h", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    visits = pd.DataFrame(
        {
            "page": [p for p in "abc" for _ in range(6)],
            "changed": [0, 1, 0, 0, 1, 0] + [1] * 6 + [0] * 6,
            "fetch_time": list(times) * 3,
        }
    )
    paths = [tmp_path / f"log-{j}.csv" for j in range(2)]
    for j, path in enumerate(paths):
        visits.iloc[j::2].to_csv(path, index=False)
    return paths


def test_the_old_dask_entry_points_warn_and_give_the_new_calls_results(tmp_path):
    import dask.dataframe as dd
    import pandas as pd
    from _helpers import local_dask_client

    paths = _tiny_log_files(tmp_path)
    frame = dd.read_csv([str(p) for p in paths], dtype=str, keep_default_na=False)
    assert frame.npartitions == 2  # the new call's shuffle: max(partitions, 2)
    options = dict(budget=4.0, prior=None, level=0.8)
    # (old name, its input, its own keyword arguments, the new call's)
    cases = [
        ("estimate_pages_dask", frame, dict(methods=("mle",), npartitions=2), dict(methods=("mle",))),
        ("estimate_files_dask", paths, dict(methods=("mle",), partitioned="auto"), dict(methods=("mle",))),
        ("schedule_pages_dask", frame, dict(npartitions=2, max_interval_h=48.0), dict(max_interval_h=48.0)),
        ("schedule_files_dask", paths, dict(max_interval_h=48.0), dict(max_interval_h=48.0)),
    ]
    with local_dask_client(processes=False) as client:
        for name, source, own, new in cases:
            job = name.split("_")[0]
            with pytest.warns(DeprecationWarning, match=rf"^{name} is deprecated; use crawllog\.{job}\("):
                old = getattr(dask_engine, name)(source, client=client, **options, **own)
            want = getattr(crawllog, job)(source, engine="dask", client=client, **options, **new)
            assert want.engine == "dask"
            if job == "estimate":  # a LogEstimates, as before
                assert isinstance(old, crawllog.LogEstimates) and old.engine == "dask"
                pd.testing.assert_frame_equal(old.table, want.table)
                assert (old.audit, old.n_parts, old.shuffled) == (want.audit, want.n_parts, want.shuffled)
            else:  # (schedule, audit), as before
                table, audit = old
                pd.testing.assert_frame_equal(table, want.schedule)
                assert audit == want.audit
    with pytest.raises(TypeError, match=r"schedule_files_dask\(\) got an unexpected keyword argument 'methods'"):
        dask_engine.schedule_files_dask(paths, methods=("mle",))
