"""Self-contained HTML reports: figures embedded as PNG data URIs, no network; verdict boxes and summary rows."""

from ._html import _REPORT_FILES as REPORT_FILES
from ._html import (
    VERDICT_KINDS,
    VERDICT_SEVERITY,
    check_output_dir,
    figure_context,
    figure_to_html,
    folder_lock,
    format_duration,
    format_pvalue,
    format_value,
    html_table,
    render_page,
    section_outcome,
    summary_row,
    verdict_boxes,
    verdict_html,
    write_report,
)

__all__ = [
    "REPORT_FILES",
    "VERDICT_KINDS",
    "VERDICT_SEVERITY",
    "check_output_dir",
    "figure_context",
    "figure_to_html",
    "folder_lock",
    "format_duration",
    "format_pvalue",
    "format_value",
    "html_table",
    "render_page",
    "section_outcome",
    "summary_row",
    "verdict_boxes",
    "verdict_html",
    "write_report",
]
