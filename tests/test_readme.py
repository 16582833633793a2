"""Every Python example in README.md runs as written."""

import re
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_examples_and_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(BLOCKS) >= 5
    assert "changerate-bayes validate --quick" in text
    assert "python -m pytest -q" in text


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    matplotlib.use("Agg")
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip()  # every example prints what it shows
