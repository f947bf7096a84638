"""The record readers of the metrics files: JSONL, JSON arrays and CSV, with a BOM or CRLF line ends."""

from __future__ import annotations

import json

import pytest

from service.metrics.parsing import read_records

ROWS = [{"id": "p1", "prediction": "A", "note": "é"}, {"id": 2, "prediction": 0, "note": None}]


# ---------------------------------------------------------------------------------------- BOM, CSV, one line


@pytest.mark.parametrize("layout", ["jsonl", "array-one-line", "array-pretty", "csv"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reader_accepts_bom_crlf_and_every_layout(tmp_path, layout, bom, newline):
    if layout == "jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS)
    elif layout == "array-one-line":
        text = json.dumps(ROWS, ensure_ascii=False)
    elif layout == "array-pretty":
        text = json.dumps(ROWS, ensure_ascii=False, indent=2)
    else:
        text = "id,prediction,note\np1,A,é\n2,0,\n"
    path = tmp_path / f"file.{'csv' if layout == 'csv' else 'json'}"
    path.write_bytes((("\ufeff" if bom else "") + text.replace("\n", newline)).encode("utf-8"))
    records, where = read_records(path)
    assert records == ROWS
    if layout == "array-one-line":
        assert where[1].startswith(f"{path} item 2 (line 1, column ")
    elif layout in ("jsonl", "csv"):
        assert where == [f"{path} line {n}" for n in ((1, 2) if layout == "jsonl" else (2, 3))]


def test_csv_cells_keep_ids_with_leading_zeros_as_text(tmp_path):
    path = tmp_path / "pred.csv"
    path.write_text("id,prediction,score\n007,B,6.5\n12,,-1e3\n")
    assert read_records(path)[0] == [{"id": "007", "prediction": "B", "score": 6.5},
                                     {"id": 12, "prediction": None, "score": -1000.0}]
