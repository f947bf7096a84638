"""Publication dates, and the rule for records that carry only a year.

The cutoff falls mid-year, so a bare year cannot stand for January 1st: a year-only record gets the first day of
its venue's usual conference month (the table below), else July 1st, the middle of the year. The rule used is
stored with the paper (`date_rule`) and counted in the index manifest.
"""

import re
from datetime import date

from indexing.sources.errors import RowInvalid
from indexing.windows import iso_day

# Usual month of the main conference, by normalised venue name.
CONFERENCE_MONTH = {
    "aaai": 2, "aistats": 5, "iclr": 5, "chi": 5, "icra": 5, "www": 5, "naacl": 6, "cvpr": 6,
    "acl": 7, "icml": 7, "colt": 7, "ijcai": 8, "uai": 8, "kdd": 8, "sigir": 7, "interspeech": 9,
    "eccv": 10, "iccv": 10, "iros": 10, "emnlp": 11, "corl": 11, "neurips": 12,
}
DEFAULT_MONTH = 7

_ALIASES = {"nips": "neurips", "neural information processing systems": "neurips",
            "international conference on learning representations": "iclr",
            "international conference on machine learning": "icml"}


def venue_key(venue: str | None) -> str:
    """'NeurIPS 2023', 'neurips' and 'NIPS' all give 'neurips'."""
    if not venue:
        return ""
    name = re.sub(r"[^a-z ]+", " ", venue.casefold())
    name = " ".join(w for w in name.split() if w not in {"proceedings", "of", "the", "conference", "main"})
    for alias, key in _ALIASES.items():
        if alias in venue.casefold():
            return key
    return name


def parse_date(value: str, field: str) -> date:
    """YYYY-MM-DD (strictly, as everywhere: indexing.windows.iso_day; a time part is ignored), YYYY-MM (first of
    month) or YYYY (July 1st)."""
    head = re.split(r"[T ]", value.strip(), maxsplit=1)[0]
    partial = re.fullmatch(r"([0-9]{4})(?:-([0-9]{2}))?", head)
    try:
        parsed = date(int(partial[1]), int(partial[2] or DEFAULT_MONTH), 1) if partial else iso_day(head)
    except ValueError as exc:
        raise RowInvalid(field, f"is not a valid date: {value!r} ({exc})") from None
    if not 1900 <= parsed.year <= 2100:
        raise RowInvalid(field, f"year {parsed.year} is out of range 1900-2100")
    return parsed


def date_from_year(year: int, venue: str | None, field: str = "year") -> tuple[date, str]:
    if not 1900 <= year <= 2100:
        raise RowInvalid(field, f"year {year} is out of range 1900-2100")
    key = venue_key(venue).split(" ")[0] if venue else ""
    month = CONFERENCE_MONTH.get(key)
    if month:
        return date(year, month, 1), f"year+venue-month({key})"
    return date(year, DEFAULT_MONTH, 1), "year+july-1"
