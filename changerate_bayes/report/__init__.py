"""Self-contained HTML reports: figures embedded as PNG data URIs, no network."""

from ._html import figure_to_html, html_table, render_page, verdict_html, write_report

__all__ = ["figure_to_html", "html_table", "render_page", "verdict_html", "write_report"]
