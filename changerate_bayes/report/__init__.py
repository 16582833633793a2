"""Self-contained HTML reports: figures embedded as PNG data URIs, no network."""

from ._html import check_output_dir, figure_context, figure_to_html, html_table, render_page, verdict_html, write_report

__all__ = ["check_output_dir", "figure_context", "figure_to_html", "html_table", "render_page", "verdict_html", "write_report"]
