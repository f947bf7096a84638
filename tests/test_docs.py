"""The docs stay usable: every setting has a row, relative links resolve, no page outgrows 20 KB, the map is whole."""

import re

from indexing.settings import Settings
from tests.helpers import ROOT


def test_every_setting_has_a_row_in_the_configuration_page():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(HINDSIGHT_[A-Z0-9_]+)` \|", page, flags=re.M))
    missing = [(name, f) for name, f in Settings.model_fields.items() if f"HINDSIGHT_{name.upper()}" not in documented]
    rows = "\n".join(f"| `HINDSIGHT_{name.upper()}` | ... | `{f.default}` | {f.description or ''} |"
                     for name, f in missing)
    assert not missing, f"docs/configuration.md lacks these settings:\n{rows}"
    assert documented <= {f"HINDSIGHT_{name.upper()}" for name in Settings.model_fields}, "a row names no setting"


FENCE = re.compile(r"^(```|~~~).*?^\1", flags=re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
MAX_PAGE_BYTES = 20 * 1024


def _prose(text: str) -> str:
    """The page without fenced code blocks and inline code, where brackets are not links."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def _anchors(page) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, a repeat numbered."""
    ids: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", page.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in ids:
            n += 1
            unique = f"{slug}-{n}"
        ids.add(unique)
    return ids


def _pages():
    """README.md, the docs and the benchmark logs beside the scripts (moved out of docs/, they link back)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench/results").glob("*.md"))]


def test_every_relative_link_in_the_docs_resolves():
    broken = []
    for page in _pages():
        for target in LINK.findall(_prose(page.read_text())):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_no_docs_page_is_over_20_kb():
    big = {p.name: p.stat().st_size for p in (ROOT / "docs").glob("*.md") if p.stat().st_size > MAX_PAGE_BYTES}
    assert not big, f"split these pages (limit {MAX_PAGE_BYTES} bytes): {big}"


def test_the_docs_map_links_every_docs_page():
    linked = {t.partition("#")[0] for t in LINK.findall(_prose((ROOT / "docs" / "README.md").read_text()))}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert not pages - linked, f"docs/README.md does not point to: {sorted(pages - linked)}"
