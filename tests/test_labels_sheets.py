"""A draw leaves the dashboard: `label draw --json` names its ideas in order; `label export --draw` writes a sheet
(one row per drawn idea and candidate, the label blank); `label import` reads it back as spreadsheets save it (BOM,
CRLF, a semicolon delimiter), skipping blank rows; filled by hand it gives the same estimates as the same labels
written through the dashboard's endpoint."""

import csv
import io
import json
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from indexing.db import session_scope
from service.app import create_app
from service.labels.draws import draw
from service.labels.models import DrawIdea, Label
from service.labels.sheets import FIELDS, sheet_rows
from service.labels.store import ImportRejected, import_labels
from tests.factories import labels_store
from tests.helpers import run_cli

AUTH = {"Authorization": "Bearer test-token"}


def _excel(rows: list[dict], delimiter: str = ",") -> bytes:
    """Rows as a spreadsheet saves them as 'CSV UTF-8': a BOM, CRLF line ends, quoted where needed."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return "\ufeff".encode() + out.getvalue().encode()


def test_draw_names_its_ideas_in_the_order_the_view_serves_them(settings, run_cli_here):
    labels_store(settings.home, per_system=12)
    res = run_cli_here("label", "draw", "--run", "r1", "--n", "4", "--seed", "3", "--json")
    assert res.exit_code == 0, res.output
    answer = json.loads(res.stdout)
    with TestClient(create_app(settings)) as c:
        for d in answer["draws"]:
            assert len(d["ideas"]) == d["n"] == 4
            served = [c.get(f"/v1/labels/draws/{d['draw']}/item", params={"annotator": "x", "position": p})
                      .json()["idea"]["idea_id"] for p in range(1, 5)]
            assert d["ideas"] == served
            assert all(i.startswith(d["system"]) for i in d["ideas"])


def test_a_sheet_is_read_back_as_a_spreadsheet_saves_it(settings):
    planted = labels_store(settings.home, per_system=12)
    with session_scope(settings.db_path) as s:
        made = draw(s, run="r1", n=3, seed=1, system="sys-a")["draws"][0]
        rows = sheet_rows(s, draws=[made["draw"]], candidates=4)
    assert len(rows) == 3 * 4 and list(rows[0]) == list(FIELDS)
    assert [r["idea_id"] for r in rows[::4]] == made["ideas"]
    assert all(r["label"] == "" and r["side"] == "after" and r["abstract"] and r["evidence_sentence"] for r in rows)
    assert rows[0]["problem"] == f"Problem {made['ideas'][0]}" and rows[0]["rank"] == 1
    first, second, third = made["ideas"]
    for r in rows:
        truth = planted[r["idea_id"]]["truth"][r["paper_id"]]
        if r["idea_id"] == first:
            r["label"] = truth.capitalize() + " "  # as typed by hand
        elif r["idea_id"] == second and r["rank"] <= 2:
            r["label"] = truth
        r["abstract"] = r["abstract"] + "\nwith a line break, \"quotes\"; and a semicolon"
    rows[0]["annotator"] = ""  # the --annotator fills it
    for r in rows[1:]:
        r["annotator"] = "sheet"
    with session_scope(settings.db_path) as s:
        report = import_labels(s, _excel(rows, ";"), name="sheet.csv", annotator="sheet")
        assert (report.format, report.rows, report.blank, report.labels, report.ideas) == ("sheet", 12, 6, 6, 2)
        stored = {(lab.idea_pk, lab.paper_id): lab.label for lab in s.scalars(select(Label))}
        pks = dict(s.execute(select(DrawIdea.position, DrawIdea.idea_pk)
                             .where(DrawIdea.draw_id == made["draw"])).all())
    assert len(stored) == 6 and all(lab in ("realised", "direction", "none") for lab in stored.values())
    assert not any(pk == pks[3] for pk, _ in stored)  # the idea with no filled row stays unlabelled
    assert sum(pk == pks[2] for pk, _ in stored) == 2  # its blank rows are not read as `none`
    # faults name the line and the field; nothing is written
    bad = [dict(r) for r in rows]
    bad[1]["label"] = "maybe"
    bad[2]["side"] = "before"
    bad[3]["idea_id"] = "sys-b-000"  # not in this draw
    bad[5]["draw"] = "99"
    with session_scope(settings.db_path) as s:
        with pytest.raises(ImportRejected) as exc:
            import_labels(s, _excel(bad), name="bad.csv")
    found = {(e.line, e.field) for e in exc.value.report.errors}
    # each record spans two physical lines (the abstract's line break): header, then rows at lines 3, 5, 7, ...
    assert {(5, "label"), (7, "side"), (9, "idea_id"), (13, "draw")} <= found
    assert any("no draw 99" in e.message for e in exc.value.report.errors)
    # the JSONL sheet written back as one JSON array (pandas' to_json(orient="records")): the error says what to write
    with session_scope(settings.db_path) as s:
        with pytest.raises(ImportRejected) as exc:
            import_labels(s, json.dumps(rows).encode(), name="sheet.json", annotator="sheet")
    (error,) = exc.value.report.errors
    assert (error.line, error.field) == (1, "<json>") and "one object per line (JSON Lines" in error.message


def test_the_cli_writes_csv_and_jsonl_sheets(settings, run_cli_here, tmp_path):
    labels_store(settings.home, per_system=12)
    made = json.loads(run_cli_here("label", "draw", "--run", "r1", "--n", "2", "--seed", "5", "--json").stdout)
    ids = [str(d["draw"]) for d in made["draws"]]
    out = tmp_path / "sheet.csv"
    res = run_cli_here("label", "export", "--draw", ids[0], "--draw", ids[1], "--format", "csv", "--out", str(out))
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data.startswith("\ufeff".encode()) and b"\r\n" in data
    read = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert len(read) == 2 * 2 * 5  # two draws of two ideas, the view's five candidates each
    res = run_cli_here("label", "export", "--draw", ids[0], "--candidates", "2")
    assert [json.loads(x)["rank"] for x in res.stdout.splitlines()] == [1, 2, 1, 2]
    assert run_cli_here("label", "export", "--draw", "999").exit_code == 2
    res = run_cli_here("label", "export", "--run", "r1", "--format", "csv")
    assert res.exit_code == 2 and "--draw" in res.output
    with TestClient(create_app(settings)) as c:
        sheet = c.get(f"/v1/labels/draws/{ids[0]}/sheet", params={"format": "csv", "candidates": 3})
        assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/csv")
        assert sheet.content.startswith("\ufeff".encode())  # downloaded and opened in Excel: read as UTF-8
        assert len(list(csv.DictReader(io.StringIO(sheet.text)))) == 2 * 3
        assert c.get("/v1/labels/draws/999/sheet").status_code == 404


@pytest.mark.server
def test_a_sheet_filled_by_hand_gives_the_estimates_of_the_same_labels_written_in_the_dashboard(tmp_path,
                                                                                                server_factory):
    home = tmp_path / "home"
    planted = labels_store(home, per_system=30, seed=11)
    srv = server_factory(home)
    res = run_cli(home, "label", "draw", "--run", "r1", "--n", "10", "--seed", "8", "--json")
    assert res.returncode == 0, res.stderr
    made = json.loads(res.stdout)["draws"]
    sheet = tmp_path / "draw.csv"
    res = run_cli(home, "label", "export", *(x for d in made for x in ("--draw", str(d["draw"]))), "--format", "csv",
                  "--out", str(sheet))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(io.StringIO(sheet.read_bytes().decode("utf-8-sig"))))
    assert len(rows) == 2 * 10 * 5
    skipped = {made[0]["ideas"][-1], made[1]["ideas"][-1]}  # left unlabelled
    filled = []
    for r in rows:
        if r["idea_id"] in skipped:
            continue
        truth = planted[r["idea_id"]]["truth"][r["paper_id"]]
        if truth == "none" and int(r["rank"]) == 5:
            continue  # a row left blank: unlabelled, as a candidate the dashboard's reader never clicked
        r["label"], r["annotator"] = truth, "sheet"
        filled.append(r)
    sheet.write_bytes(_excel(rows))
    res = run_cli(home, "label", "import", str(sheet), "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["labels"] == len(filled) and report["blank"] == len(rows) - len(filled)
    assert report["ideas"] == 18
    with httpx.Client(base_url=srv.url, headers=AUTH, timeout=30) as c:
        for r in filled:
            assert c.post("/v1/labels", json={"run": "r1", "system": r["system"], "idea_id": r["idea_id"],
                                              "paper_id": r["paper_id"], "label": r["label"],
                                              "annotator": "web"}).status_code == 200
        by = {who: c.get("/v1/labels/estimates", params={"annotator": who}).json() for who in ("sheet", "web")}
        status = c.get("/v1/labels/status", params={"run": "r1"}).json()
    assert by["sheet"]["groups"] == by["web"]["groups"]
    assert by["sheet"]["agreement"]["overall"] == by["web"]["agreement"]["overall"]
    assert [g["realised_rate"]["n_labelled"] for g in by["sheet"]["groups"]] == [9, 9]
    pair = by["sheet"]["agreement"]["annotators"][0]
    assert (pair["a"], pair["b"], pair["ideas"], pair["pair"]["kappa"]) == ("sheet", "web", 18, 1.0)
    assert [d["labelled"] for s in status["strata"] for d in s["draws"]] == [{"sheet": 9, "web": 9}] * 2
    # the CLI's estimates from the sheet's labels, as a reader sees them
    res = run_cli(home, "analyze", "systems", "--labels", "--annotator", "sheet", "--json")
    assert json.loads(res.stdout)["groups"] == by["sheet"]["groups"]


def test_tables_are_readable_in_80_columns(settings, run_cli_here, monkeypatch, tmp_path):
    """Each table the labels commands print, rendered by the CLI in an 80-column terminal: no header or cell cut
    (rich's ellipsis); 0 positives of 3 labels show the plain 0.000 with a non-degenerate interval."""
    from service.cli import common

    labels_store(settings.home, per_system=12)
    monkeypatch.setattr(common.console, "width", 80)
    made = json.loads(run_cli_here("label", "draw", "--run", "r1", "--n", "3", "--seed", "2", "--system", "sys-a",
                                   "--json").stdout)["draws"][0]
    lines = [json.dumps({"run": "r1", "system": "sys-a", "idea_id": i, "paper_id": f"{i}-c{r}", "label": "none",
                         "annotator": "a-rather-long-annotator-name"}) for i in made["ideas"] for r in range(1, 6)]
    path = Path(tmp_path / "none.jsonl")
    path.write_text("\n".join(lines) + "\n")
    assert run_cli_here("label", "import", str(path)).exit_code == 0
    for args in (("analyze", "systems", "--labels"), ("label", "status", "--run", "r1"), ("analyze", "systems")):
        res = run_cli_here(*args)
        assert res.exit_code == 0, res.output
        assert "…" not in res.output, res.output
        table_lines = [x for x in res.output.splitlines() if set(x) & set("│┃━╇─")]
        assert table_lines and max(len(x) for x in table_lines) <= 80, res.output
    res = run_cli_here("analyze", "systems")
    assert any("measure" in x and "Welch p" in x and "delta" in x for x in res.output.splitlines())  # a table
    res = run_cli_here("analyze", "systems", "--labels")
    assert "0.000*" in res.output and "[0.000, 0.592]" in res.output and "labels_only" in res.output
    assert " realised " in res.output and " direction " in res.output  # the measures whole


def test_a_table_too_wide_for_the_terminal_prints_as_records():
    from rich.table import Table

    from service.cli.tables import FittingConsole

    console = FittingConsole(file=io.StringIO(), width=80, markup=False, color_system=None)
    wide = Table("a vs b", "measure", "mean a", "mean b", "Mann-Whitney p", "Welch p", "Cliff's delta",
                 "ai-researcher overall", "ai-scientist-self overall", title="comparison")
    wide.add_row("ai-researcher vs ai-scientist", "HindSight", "0.297", "0.119", "< 0.001", "< 0.001", "0.41",
                 "7.44", "7.40")
    console.print(wide)
    narrow = Table("system", "ideas")
    narrow.add_row("ai-researcher", "213")
    console.print(narrow)
    out = console.file.getvalue()
    assert "…" not in out
    assert "Mann-Whitney p" in out and "ai-scientist-self overall" in out and "ai-researcher vs ai-scientist" in out
    assert max(len(x) for x in out.splitlines()) <= 80
    assert any("system" in x and "ideas" in x for x in out.splitlines())  # a table that fits stays a table
    assert not any("measure" in x and "mean a" in x for x in out.splitlines())  # the wide one: a line per column
