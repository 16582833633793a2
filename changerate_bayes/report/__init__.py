"""Self-contained HTML reports: figures embedded as PNG data URIs, no network; verdict boxes and summary rows."""

from ._html import (VERDICT_KINDS, check_output_dir, figure_context, figure_to_html, format_pvalue, format_value,
                    html_table, render_page, summary_row, verdict_html, write_report)

__all__ = ["VERDICT_KINDS", "check_output_dir", "figure_context", "figure_to_html", "format_pvalue", "format_value",
           "html_table", "render_page", "summary_row", "verdict_html", "write_report"]
