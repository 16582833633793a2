"""Self-contained HTML reports: figures embedded as PNG data URIs, no network; verdict boxes and summary rows."""

from . import _html
from ._html import *  # noqa: F403 (the names of _html.__all__, listed once there)
from ._html import _REPORT_FILES as REPORT_FILES

__all__ = ["REPORT_FILES"]
__all__ += _html.__all__
