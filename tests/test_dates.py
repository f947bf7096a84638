"""One day parser everywhere (indexing.windows.iso_day): exactly YYYY-MM-DD, wherever a day is read."""

from datetime import date

import pytest
from pydantic import BaseModel, ValidationError

from indexing.sources.dates import parse_date
from indexing.sources.errors import RowInvalid
from indexing.windows import WindowError, iso_day, parse_day
from service.analyses import AnalysisError, Selection
from service.analyses.selection import load_ideas
from service.schemas import IsoDate

# date.fromisoformat takes the first three (compact, week and ordinal dates); strptime takes the unpadded one
NOT_DAYS = ["20230601", "2023-W22-4", "2023-152", "2023-6-1", "２０２３-06-01", "2023-06-01T00:00", " 2023-06-01"]


@pytest.mark.parametrize("text", NOT_DAYS)
def test_the_parser_takes_only_yyyy_mm_dd(text):
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        iso_day(text)


def test_the_parser_takes_real_days_only():
    assert iso_day("2024-02-29") == date(2024, 2, 29)
    with pytest.raises(ValueError, match="day is out of range"):
        iso_day("2023-02-29")


@pytest.mark.parametrize("text", ["20230601", "2023-W22-4"])
def test_a_window_edge_names_its_field(text):
    with pytest.raises(WindowError, match="cutoff") as err:
        parse_day(text, field="cutoff", allowed=("2023-06-01", "2025-12-31"))
    assert err.value.field == "cutoff"


@pytest.mark.parametrize("value", ["20230601", "2023-W22-4", "2023-6-1", 20230601, 0])
def test_request_bodies_take_only_yyyy_mm_dd_strings(value):
    class Body(BaseModel):
        until: IsoDate

    with pytest.raises(ValidationError, match="YYYY-MM-DD"):
        Body.model_validate({"until": value})
    assert Body.model_validate({"until": "2023-06-01"}).until == date(2023, 6, 1)


@pytest.mark.parametrize("text", ["20230601", "2023-W22-4"])
def test_an_analysis_selection_refuses_other_spellings(settings, text):
    from indexing.db import session_scope

    with session_scope(settings.db_path) as session, pytest.raises(AnalysisError) as err:
        load_ideas(session, Selection(cutoff=text))
    assert err.value.field == "cutoff"


@pytest.mark.parametrize("text", ["2024-3-5", "２０２４-03-15", "20240315"])
def test_a_paper_record_day_is_yyyy_mm_dd(text):
    with pytest.raises(RowInvalid) as err:
        parse_date(text, "publication_date")
    assert err.value.field == "publication_date" and repr(text) in str(err.value)


def test_a_paper_record_keeps_its_partial_dates_and_time_parts():
    assert parse_date("2024-03-15T10:00:00Z", "d") == date(2024, 3, 15)
    assert parse_date("2024-03", "d") == date(2024, 3, 1)
    assert parse_date("2024", "d") == date(2024, 7, 1)  # a bare year: the middle of the year


def test_index_build_refuses_an_unpadded_cutoff(run_cli_here):
    out = run_cli_here("index", "build", "--cutoff", "2023-6-1", "--json")
    assert out.exit_code == 2 and "--cutoff '2023-6-1' is not a date" in out.output, out.output


@pytest.mark.parametrize("source", ["openalex", "s2"])
def test_fetch_refuses_an_unpadded_date_before_any_request(run_cli_here, source):
    # a closed port: were the date taken, the dry run would fail on the request instead
    out = run_cli_here("fetch", source, "--from", "2023-6-1", "--dry-run", "--base-url", "http://127.0.0.1:9")
    assert out.exit_code == 2 and "--from '2023-6-1' is not a date" in out.output, out.output
