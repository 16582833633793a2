"""Check that the built documentation opens from disk with no network.

Usage: ``python docs/check_offline.py docs/_build/html``. Exits with status 1, listing
the pages, when a page loads a script, a stylesheet, an image or a font from the
network (``http://``, ``https://`` or protocol-relative ``//host/...``), or when a
stylesheet imports one; links to other sites (``<a href="https://...">``) are fine.
"""

import re
import sys
from pathlib import Path

#: an element that makes the browser fetch what its attribute names
_LOADING = re.compile(
    r"<(?:script|img|iframe|source|link)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?\s*((?:https?:)?//[^\"'\s>]+)",
    re.I,
)
#: a stylesheet's @import or url(...) of the network
_CSS_REMOTE = re.compile(r"(?:@import\s+(?:url\()?|url\()\s*[\"']?\s*((?:https?:)?//[^\"')\s]+)", re.I)


def remote_loads(html: str, *, css: bool = False) -> list[str]:
    """The network addresses a page (or, with ``css=True``, a stylesheet) would load.

    ``<link>`` elements count only as stylesheets, icons or preloads: a ``<link
    rel="canonical">`` or ``rel="search"`` does not load anything.
    """
    if css:
        return _CSS_REMOTE.findall(html)
    found = []
    for match in _LOADING.finditer(html):
        tag = match.group(0)
        if tag.lower().startswith("<link") and not re.search(
            r"rel\s*=\s*[\"']?[^\"'>]*\b(stylesheet|icon|preload|modulepreload)\b", tag, re.I
        ):
            continue
        found.append(match.group(1))
    # inline <style> blocks
    for block in re.findall(r"<style\b[^>]*>(.*?)</style>", html, flags=re.I | re.S):
        found += _CSS_REMOTE.findall(block)
    return found


def check_site(root) -> dict[str, list[str]]:
    """Every page and stylesheet under ``root`` that loads something from the network."""
    root = Path(root)
    problems = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in {".html", ".css"} and path.is_file():
            found = remote_loads(path.read_text(encoding="utf-8", errors="replace"), css=path.suffix == ".css")
            if found:
                problems[str(path.relative_to(root))] = found
    return problems


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python docs/check_offline.py BUILT_HTML_FOLDER", file=sys.stderr)
        return 2
    pages = list(Path(args[0]).rglob("*.html"))
    if not pages:
        print(f"{args[0]}: no HTML page (build the site first)", file=sys.stderr)
        return 1
    problems = check_site(args[0])
    for page, urls in problems.items():
        print(f"{page}: loads {', '.join(urls)}")
    if not problems:
        print(f"{len(pages)} pages: nothing is loaded from the network")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
