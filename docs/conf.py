"""Sphinx configuration of the changerate_bayes documentation.

Build: ``uv run --locked --extra docs sphinx-build -W --keep-going -b html docs docs/_build/html``.
The site opens from disk with no network: formulas are shown as text (no MathJax), and
no inventory of another project is fetched (no intersphinx).
"""

import changerate_bayes

project = "changerate_bayes"
copyright = "the changerate_bayes authors"
author = "the changerate_bayes authors"
version = release = changerate_bayes.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}

# API reference: one generated page per public object (autosummary stubs under
# api/generated/, rebuilt on every build), docstrings read as numpydoc.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# the doctest flags (``# doctest: +ELLIPSIS``) of the examples are not shown
trim_doctest_flags = True

html_theme = "alabaster"
html_theme_options = {
    "description": "How often do web pages change?",
    "fixed_sidebar": False,
    "show_relbars": True,
}
html_static_path = []
html_math_renderer = "plaintext"
html_show_sourcelink = False
html_copy_source = False


def _math_as_text_inline(self, node):
    """Inline math as text in code font: no MathJax, so the pages open with no network."""
    self.body.append(f'<code class="math">{self.encode(node.astext())}</code>')
    raise __import__("docutils").nodes.SkipNode


def _math_as_text_block(self, node):
    """Displayed math as a preformatted block of text."""
    self.body.append(f'<pre class="math">{self.encode(node.astext())}</pre>\n')
    raise __import__("docutils").nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("plaintext", (_math_as_text_inline, None), (_math_as_text_block, None))
