"""Every Python example in README.md runs as written."""

import re
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


MAIN_JOB = "uv run --locked changerate-bayes validate --quick"
TESTS = "uv run --locked --extra test pytest -q -n auto"


def test_readme_has_examples_and_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(BLOCKS) >= 5
    shell = "\n".join(re.findall(r"```bash\n(.*?)```", text, flags=re.S)).splitlines()
    assert MAIN_JOB in shell and TESTS in shell


def test_ci_runs_the_readme_test_command():
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TESTS in ci


# an example fitting the pooled model runs in the worker of the pooled NUTS tests, which
# has compiled that model already, and one sampling a page model by NUTS in the worker of
# the other NUTS tests (see tests/conftest.py)
def _param(index, block):
    if "pooled_posterior(" in block:
        return pytest.param(index, marks=pytest.mark.xdist_group("nuts_pooled"))
    if 'method="nuts"' in block:
        return pytest.param(index, marks=pytest.mark.xdist_group("nuts_posterior"))
    return index


_INDICES = [_param(i, b) for i, b in enumerate(BLOCKS)]


@pytest.mark.slow
@pytest.mark.parametrize("index", _INDICES)
def test_readme_example_runs(index, capsys):
    matplotlib.use("Agg")
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip()  # every example prints what it shows
