import subprocess
import sys

import pytest

import changerate_bayes


def test_every_public_name_resolves_and_is_listed():
    for name in changerate_bayes.__all__:
        value = getattr(changerate_bayes, name)
        assert value is not None
        assert name in dir(changerate_bayes)
    assert changerate_bayes.posterior is changerate_bayes.bayes.posterior
    assert changerate_bayes.CrawlHistory is changerate_bayes.history.CrawlHistory
    assert changerate_bayes.diagnostics.__name__ == "changerate_bayes.diagnostics"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        changerate_bayes.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from changerate_bayes import no_such_name", {})


def test_the_package_and_the_command_line_start_without_the_heavy_libraries():
    # the names are imported on first use, so the command line and a validate run's
    # parent process start without pandas, PyMC or the compiled kernels' modules
    # building the parser takes every sub-command's choices (log formats, estimator names)
    code = (
        "import sys, changerate_bayes, changerate_bayes.cli, changerate_bayes.validation.runner, changerate_bayes.report; "
        "changerate_bayes.cli._parser(); "
        "print(sorted(m for m in ('pandas', 'pymc', 'arviz', 'numba', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys; from changerate_bayes import posterior; print('pymc' in sys.modules or 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_the_log_readers_resolve_on_first_use():
    import changerate_bayes.io as io

    for name in io.__all__:
        assert getattr(io, name) is not None
        assert name in dir(io)
    assert io.read_csv.__module__ == "changerate_bayes.io._tabular"
    assert io.FORMATS == ("csv", "parquet", "cdx", "warc", "ota", "auto")
    with pytest.raises(AttributeError, match="has no attribute 'read_html'"):
        io.read_html  # noqa: B018
    code = "import sys; from changerate_bayes.io import FORMATS; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
