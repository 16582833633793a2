"""Harmless upstream output is silenced where it arises, and only that."""

import logging
import os
import subprocess
import sys
import warnings

from changerate_bayes._upstream import quiet_dask_logs, quiet_nutpie_compile, silence_harmless_upstream_output

_IMPORT_ARVIZ = "import arviz"


def _import_arviz(tmp_path, silence: bool) -> str:
    code = (
        "from changerate_bayes._upstream import silence_harmless_upstream_output as s; s(); " if silence else ""
    ) + _IMPORT_ARVIZ
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / ("s" if silence else "n"))}  # ArviZ's daily stamp
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_arviz_daily_refactor_warning_is_silenced(tmp_path):
    assert "ArviZ is undergoing a major refactor" in _import_arviz(tmp_path, silence=False)  # it is there
    assert "ArviZ is undergoing" not in _import_arviz(tmp_path, silence=True)


def test_only_the_listed_warnings_are_ignored():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        silence_harmless_upstream_output()
        warnings.warn("\nArviZ is undergoing a major refactor to improve flexibility", FutureWarning)
        warnings.warn("PyTensor could not link to a BLAS installation. Operations ...", UserWarning)
        warnings.warn("some other deprecation", FutureWarning)
        warnings.warn("PyTensor could not link to a BLAS installation.", RuntimeWarning)  # other category
    assert [str(w.message) for w in rec] == [
        "some other deprecation",
        "PyTensor could not link to a BLAS installation.",
    ]
    assert logging.getLogger("pytensor.tensor.blas").getEffectiveLevel() == logging.ERROR


def test_dask_shuffle_and_nanny_lines_are_hidden_inside_the_block_only(caplog):
    shuffle = logging.getLogger("distributed.shuffle._scheduler_plugin")
    before = logging.getLogger("distributed.shuffle").level
    with caplog.at_level(logging.WARNING):
        with quiet_dask_logs():
            shuffle.warning("Shuffle abc initialized by task x")
            logging.getLogger("distributed.nanny").warning("Worker process still alive after 4.0 seconds, killing")
            shuffle.error("a real error")
        assert logging.getLogger("distributed.shuffle").level == before
        shuffle.warning("outside")
    assert [r.getMessage() for r in caplog.records] == ["a real error", "outside"]


def test_numba_performance_warnings_are_hidden_while_nutpie_compiles():
    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with quiet_nutpie_compile():
            warnings.warn("'@' is faster on contiguous arrays", NumbaPerformanceWarning)
        warnings.warn("after", NumbaPerformanceWarning)
    assert [str(w.message) for w in rec] == ["after"]
