"""The docs stay usable: every setting has a row, links resolve inside the repository, no page outgrows 20 KB, the map
is whole, and the pages stand alone."""

import re
from pathlib import Path

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from indexing.settings import MatcherSettings, Settings
from tests.helpers import ROOT


def variables(part: type[BaseSettings] = Settings) -> dict[str, FieldInfo]:
    """Every setting by the variable that sets it, through the components (HINDSIGHT_FETCH_ATTEMPTS: fetch.retry)."""
    out: dict[str, FieldInfo] = {}
    for name, f in part.model_fields.items():
        if isinstance(f.annotation, type) and issubclass(f.annotation, BaseSettings):
            out |= variables(f.annotation)
        else:
            out[f"{part.model_config.get('env_prefix', '')}{name}".upper()] = f
    return out


def test_every_setting_has_a_row_in_the_configuration_page():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(HINDSIGHT_[A-Z0-9_]+)` \|", page, flags=re.M))
    missing = [(name, f) for name, f in variables().items() if name not in documented]
    rows = "\n".join(f"| `{name}` | ... | `{f.default}` | {f.description or ''} |" for name, f in missing)
    assert not missing, f"docs/configuration.md lacks these settings:\n{rows}"
    assert documented <= set(variables()), "a row names no setting"


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


def _readable_pages():
    """What a user reads: the pages above and every README of the data, the migrations and the fixtures."""
    readmes = [p for d in ("data", "migrations", "tests/fixtures") for p in sorted((ROOT / d).rglob("README.md"))]
    return _pages() + readmes


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


def _outside(path: Path) -> bool:
    """Whether a path leaves the repository."""
    return not path.resolve().is_relative_to(ROOT.resolve())


# A path that starts by climbing a folder, as a command's argument or a link target writes it.
CLIMB = re.compile(r"(?<![\w.~/-])\.\./")
LINK_TARGET = re.compile(r"\]\(<?[^)\s>]+>?(?:\s+\"[^\"]*\")?\)")


def leaving_the_repository(page: Path, text: str) -> list[str]:
    """Links that resolve outside the repository, and commands or paths that start by leaving it (`../`)."""
    found = [f"link {t}" for t in LINK.findall(_prose(text))
             if not re.match(r"[a-z][a-z0-9+.-]*:", t) and _outside(page.parent / t.partition("#")[0])]
    # Link targets were judged above from the page's folder; anything else runs from the repository's root.
    for n, line in enumerate(LINK_TARGET.sub("]()", text).splitlines(), 1):
        if CLIMB.search(line):
            found.append(f"line {n}: {line.strip()[:120]}")
    return found


def test_no_link_or_command_leaves_the_repository():
    bad = [f"{page.relative_to(ROOT)}: {hit}" for page in _readable_pages()
           for hit in leaving_the_repository(page, page.read_text())]
    assert not bad, ("describe the input and take its path from the user (an argument or $VAR), instead of:\n"
                     + "\n".join(bad))


OUTSIDE_DOC = re.compile(r"\bDESIGN\.md\b")
SOURCES = ("docs", "data", "indexing", "service", "scripts", "bench", "tests")


def test_nothing_points_to_a_design_file_outside_the_repository():
    files = [*_readable_pages(), *(p for d in SOURCES for ext in ("py", "sh", "js", "html", "md")
                                   for p in (ROOT / d).rglob(f"*.{ext}"))]
    bad = sorted({str(p.relative_to(ROOT)) for p in files if OUTSIDE_DOC.search(p.read_text(errors="replace"))})
    assert not bad, f"define it here (the two decisions: docs/matching.md#the-two-decisions) instead of in: {bad}"


# Wording about who ran a figure or how the work was organised, each with the product's own uses of the word that
# stay (an ONNX Runtime session, the judge's `reviewers-v1` prompt, ReviewMT's reviewer i, tests/helpers.py).
WHO_RAN = [
    (re.compile(r"\bsessions?\b", re.I),
     re.compile(r"session[- ]per[- ]core|(?:single|multi)-thread session|onnx runtime session|one(?:-| more | )session"
                r"|session's output|sessionStorage", re.I)),
    (re.compile(r"\breviewers?\b", re.I),
     re.compile(r"expert reviewers?|reviewers-v\d|reviewer i\b|gold reviewer|per_reviewer|did reviewers judge"
                r"|careful reviewer|per reviewer|reviewers - paper", re.I)),
    (re.compile(r"\b(?:sub-?)?agents?\b", re.I), re.compile(r"multi-agent|user-agent", re.I)),
    (re.compile(r"\bhelpers?\b", re.I), re.compile(r"helpers\.py|helpers from", re.I)),
    (re.compile(r"\bH\d{1,2}\b"), None),
    (re.compile(r"\b(?:this|our) work\b", re.I), None),
]


def who_ran(text: str) -> list[str]:
    """The lines that say who ran a figure or how the work was organised, instead of the machine and the command."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for word, allowed in WHO_RAN:
            if word.search(allowed.sub("", line) if allowed else line):
                found.append(f"line {n}: {line.strip()[:120]}")
                break
    return found


def test_pages_name_machines_loads_and_commands_not_who_ran_them():
    bad = [f"{page.relative_to(ROOT)}: {hit}" for page in _readable_pages() for hit in who_ran(page.read_text())]
    assert not bad, "name the machine, its load and the command instead of:\n" + "\n".join(bad)


def test_the_wording_checks_catch_what_they_are_for():
    page = ROOT / "docs" / "x.md"
    assert leaving_the_repository(page, "run `hindsight ingest ../shared/data/a.json`")
    assert leaving_the_repository(page, "G=../shared/data/generators")
    assert leaving_the_repository(page, "see [the notes](../../NOTES.md)")
    assert not leaving_the_repository(page, "see [the log](../bench/results/README.md) and `$SHARED/a.json`")
    for line in ("while six other sessions used it (load 15)", "the midday session of 2026-12-03",
                 "One reader (H6 of the 2026-12-05 session)", "judged by two reviewers", "a subagent ran it",
                 "a helper measured it", "before this work (cfe7a50)"):
        assert who_ran(line), line
    for line in ("one ONNX Runtime session per core", "`reviewers-v1` asks what expert reviewers would say",
                 "review i against gold reviewer i", "`tests/helpers.py` starts the server", "a multi-agent debate",
                 "an H100 GPU"):
        assert not who_ran(line), line


def test_the_readme_says_what_prior_art_is_and_how_to_turn_it_off():
    readme = (ROOT / "README.md").read_text()
    assert "**Prior art** is on by default" in readme and "look-back window before the" in readme
    assert MatcherSettings.model_fields["prior_art"].default is True, "the README says prior art is on by default"
    for switch in ("--no-prior-art", "HINDSIGHT_PRIOR_ART=false", '"prior_art": false'):
        assert switch in readme, switch
    assert "--prior-art/--no-prior-art" in (ROOT / "service" / "cli" / "score.py").read_text()
