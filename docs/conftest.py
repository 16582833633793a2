"""pytest runs the examples of the documentation's pages as doctests.

Every ``.rst`` page is one doctest (``--doctest-glob`` in pyproject.toml), run in a fresh
temporary folder, so that an example that writes a file leaves nothing behind. Pages
whose examples take more than about 10 s are marked ``slow``.
"""

import matplotlib
import pytest

matplotlib.use("Agg")

collect_ignore = ["conf.py", "_build"]
collect_ignore_glob = ["_build/*", "api/generated/*"]

#: pages whose examples take more than about 10 s on a busy machine (a NUTS fit, a local
#: Dask cluster, a replay of every document, 10^4 pages of posterior draws)
SLOW_PAGES = {"pooled.rst", "replay.rst", "common_crawl.rst", "diagnostics.rst", "bursts.rst", "posteriors.rst"}

#: pages that start a local Dask cluster run in the worker of the other Dask tests
DASK_PAGES = {"common_crawl.rst"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.path.name in SLOW_PAGES:
            item.add_marker(pytest.mark.slow)
        if isinstance(item, pytest.DoctestItem) and item.path.name in DASK_PAGES:
            item.add_marker(pytest.mark.xdist_group("dask_cluster"))


@pytest.fixture(autouse=True)
def _in_a_temporary_folder(request, tmp_path, monkeypatch):
    if isinstance(request.node, pytest.DoctestItem):
        monkeypatch.chdir(tmp_path)
