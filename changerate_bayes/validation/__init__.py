"""Monte Carlo and real-trace validation studies of changerate_bayes.

Each study is a module with ``TITLE``, ``KEYS``, ``run(preset, *, seed, progress)``
returning ``{key: tidy JSON-able data}`` and ``render(result) -> str`` (HTML).
``STUDIES`` lists them in report order; :func:`run_validation` runs them.
"""

from ._preset import PRESETS, Preset, Progress
from .runner import STUDIES, run_validation

__all__ = ["PRESETS", "Preset", "Progress", "STUDIES", "run_validation"]
