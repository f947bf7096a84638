"""Hostile input: the OpenAPI schema fuzzed with 0 server errors, a corpus of malformed paper files each refused
with a precise error and nothing written, and idea texts with control characters, RTL marks and 100k characters
answered within the documented limits."""

import json
import socket
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings as hsettings
from schemathesis import GenerationMode

from tests.reliability.helpers import (
    FULL, LEAK, SEED, TOKEN, TOKEN_VALUE, scale, seeded_server, upload, write_report,
)

MAX_UPLOAD = 2_000_000
MAX_TEXT = 20_000
EXAMPLES = scale(12, 60)
SERVER_ENV = {"HINDSIGHT_MAX_UPLOAD_BYTES": str(MAX_UPLOAD), "HINDSIGHT_MAX_TEXT_CHARS": str(MAX_TEXT)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.reliability.helpers import LiveServer

    home = tmp_path_factory.mktemp("hostile") / "home"
    started: list[LiveServer] = []

    def start(h: Path, **kwargs) -> LiveServer:
        started.append(LiveServer(h, **kwargs))
        return started[-1]

    srv, _ = seeded_server(start, home, lines=20, env=SERVER_ENV)
    yield srv
    for s in started:
        s.stop()


def paper_count(srv) -> int:
    con = sqlite3.connect(srv.home / "hindsight.db", timeout=30)
    try:
        return con.execute("SELECT count(*) FROM papers").fetchone()[0]
    finally:
        con.close()


def row(**fields) -> dict:
    base = {"id": "h-1", "title": "A valid title", "abstract": "Valid.", "publication_date": "2024-03-01"}
    return {k: v for k, v in (base | fields).items() if v is not ...}


def line(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


DEEP = 100_000
# name, file bytes, query params, expected status, a phrase the error must contain
MALFORMED: list[tuple[str, bytes, dict, int, str]] = [
    ("empty.jsonl", b"", {}, 422, "has no records"),
    ("blank-lines.jsonl", b"\n  \n\t\n", {}, 422, "has no records"),
    ("bom-only.jsonl", b"\xef\xbb\xbf", {}, 422, "has no records"),
    ("latin1.jsonl", '{"id": "l1", "title": "Caf\u00e9", "year": 2024}\n'.encode("latin-1"), {}, 422, "not UTF-8"),
    ("utf16.jsonl", line(row()).decode().encode("utf-16"), {}, 422, "not UTF-8"),
    ("cut-utf8.jsonl", line(row()) + b'{"id": "x\xe2\x82', {}, 422, "not UTF-8"),
    ("broken.jsonl", b'{"id": "b1", "title": \n', {}, 422, "broken JSON"),
    ("array-line.jsonl", b"[1, 2, 3]\n", {}, 422, "expected an object"),
    ("deep.jsonl", b'{"id": "d", "title": ' + b"[" * DEEP + b"]" * DEEP + b"}\n", {}, 422, "JSON"),
    ("deep-array.json", b"[" + b"[" * DEEP + b"]" * DEEP + b"]", {"format": "s2"}, 422, "JSON"),
    ("deep-object.jsonl", b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"\n", {}, 422, "JSON"),
    ("huge-title.jsonl", line(row(title="t" * 5000)), {}, 422, "the limit is 2000"),
    ("huge-abstract.jsonl", line(row(abstract="a" * 100_001)), {}, 422, "the limit is 100000"),
    ("huge-id.jsonl", line(row(id="i" * 300)), {}, 422, "the limit is 255"),
    ("title-number.jsonl", line(row(title=123)), {}, 422, "must be a string"),
    ("title-object.jsonl", line(row(title={"en": "x"})), {}, 422, "must be a string"),
    ("year-text.jsonl", line(row(publication_date=..., year="soon")), {}, 422, "must be an integer"),
    ("year-float.jsonl", line(row(publication_date=..., year=2024.5)), {}, 422, "must be an integer"),
    ("citations-bool.jsonl", line(row(citation_count=True)), {}, 422, "boolean"),
    ("citations-negative.jsonl", line(row(citation_count=-3)), {}, 422, "must not be negative"),
    ("citations-huge.jsonl", line(row(citation_count=10 ** 30)), {}, 422, "at most"),
    ("citations-nan.jsonl", b'{"id": "n", "title": "t", "year": 2024, "citation_count": NaN}\n', {}, 422,
     "must be an integer"),
    ("no-date.jsonl", line(row(publication_date=...)), {}, 422, "is missing"),
    ("bad-date.jsonl", line(row(publication_date="2024-02-30")), {}, 422, "not a valid date"),
    ("old-year.jsonl", line(row(publication_date=..., year=1200)), {}, 422, "out of range"),
    ("duplicate-ids.jsonl", line(row()) + line(row(title="Another title")), {}, 422, "duplicate id"),
    ("nul-title.jsonl", line(row(title="bad\x00title")), {}, 422, "NUL"),
    ("surrogate-id.jsonl", b'{"id": "\\ud800", "title": "t", "year": 2024}\n', {}, 422, "Unicode"),
    ("not-a-doi.jsonl", line(row(doi="doi-less")), {}, 422, "is not a DOI"),
    ("formula-title.csv", b"id,title,year\nc1,\"=cmd|' /C calc'!A0\",2024\n", {}, 422, "spreadsheet formula"),
    ("formula-venue.jsonl", line(row(venue="@SUM(1+1)*cmd|' /C calc'!A0")), {}, 422, "spreadsheet formula"),
    ("formula-plus.jsonl", line(row(title='+HYPERLINK("http://evil.example","x")')), {}, 422, "spreadsheet formula"),
    ("formula-minus.csv", b"id,title,year\nc2,\"-2+3+cmd|' /C calc'!A0\",2024\n", {}, 422, "spreadsheet formula"),
    ("extra-cells.csv", b"id,title,year\nc3,t,2024,surplus\n", {}, 422, "more cells than the header"),
    ("open-quote.csv", b'id,title,year\nc4,"never closed,2024\n', {}, 422, "malformed CSV"),
    ("nul.csv", b"id,title,year\nc5,t\x00x,2024\n", {}, 422, "NUL"),
    ("paperlists-name.json", b'[{"id": "p", "title": "t"}]', {"format": "paperlists"}, 422, "VENUEYEAR"),
    ("unclosed.json", b'[{"paperId": "s", "title": "t", "year": 2024}', {"format": "s2"}, 422, "not closed"),
    ("trailing.json", b'[{"paperId": "s", "title": "t", "year": 2024}] []', {"format": "s2"}, 422, "extra data"),
    ("openalex-index.jsonl", line({"id": "https://openalex.org/W1", "title": "t", "publication_year": 2024,
                                   "abstract_inverted_index": {"word": "zero"}}), {}, 422, "abstract_inverted_index"),
    ("one-bad-row.jsonl", line(row(id="ok-1")) + line(row(id="bad-2", title="")), {}, 422, "is missing or empty"),
    ("just-over-limit.jsonl", b" " * (MAX_UPLOAD + 1000), {}, 413, f"exceeds the limit of {MAX_UPLOAD} bytes"),
    ("far-over-limit.jsonl", line(row(abstract="x" * 1000)) * (MAX_UPLOAD // 1000 + 100), {}, 413,
     f"exceeds the limit of {MAX_UPLOAD} bytes"),
]


def error_text(response: httpx.Response) -> str:
    detail = response.json().get("detail")
    if isinstance(detail, dict):
        return detail.get("message", "") + " " + " ".join(e["text"] for e in detail.get("errors", []))
    return json.dumps(detail)


def test_malformed_files_are_refused_whole(server):
    before = paper_count(server)
    answers: dict[str, str] = {}
    wrong: list[str] = []
    for name, data, params, status, phrase in MALFORMED:
        r = upload(server.url, name, data, **params)
        text = error_text(r) if r.headers.get("content-type", "").startswith("application/json") else r.text
        answers[name] = f"{r.status_code}: {text[:160]}"
        if r.status_code != status or phrase not in text or LEAK.search(r.text):
            wrong.append(f"{name}: {r.status_code} {text[:300]}")
        elif status == 422:
            errors = r.json()["detail"]["errors"]
            if not errors or not all(e["line"] >= 1 and e["field"] for e in errors):
                wrong.append(f"{name}: errors without line and field: {errors}")
        if paper_count(server) != before:
            wrong.append(f"{name} wrote rows")
            before = paper_count(server)
    write_report("malformed_files", {"files": len(MALFORMED), "answers": answers})
    assert len(MALFORMED) >= 30
    assert not wrong, "\n".join(wrong)


def test_gigabyte_claim_is_refused_before_the_body(server):
    """A Content-Length of 1 GB with a few bytes behind it: refused at once, not after waiting for the body."""
    body = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.jsonl\"\r\n\r\n{}\r\n"
    head = (f"POST /v1/papers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN_VALUE}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1073741824\r\n\r\n").encode()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(head + body)
        reply = b""
        while chunk := sock.recv(4096):  # the server closes the connection after refusing
            reply += chunk
    status_line = reply.split(b"\r\n", 1)[0].decode()
    assert " 413 " in status_line + " ", (status_line, reply[:300])
    assert f"limit of {MAX_UPLOAD} bytes".encode() in reply, reply[:400]
    assert time.monotonic() - started < 15


def test_idea_texts_within_documented_limits(server):
    ideas = [
        {"id": "ctrl", "text": "Graph \x01\x02\x07 neural\tnetworks\r\n with \x1b[31m escape \x7f codes"},
        {"id": "rtl\u202e", "problem": "\u202eReversed\u202c problem \u200f with RTL \u200e marks",
         "method": "\u05e9\u05dc\u05d5\u05dd method \u0645\u0631\u062d\u0628\u0627 \u2067isolate\u2069"},
        {"id": "zero-width", "text": "re\u200btrieval\ufeff aug\u200dmented \U0001F600 generation"},
        {"id": "nul", "text": "text with a NUL \x00 inside"},
        {"id": "at-limit", "text": ("retrieval augmented generation " * 700)[:MAX_TEXT]},
    ]
    body = {"system": "hostile", "run": "texts", "ideas": ideas}
    started = time.monotonic()
    r = httpx.post(f"{server.url}/v1/score", json=body, timeout=120)
    assert r.status_code == 200, r.text[:500]
    assert [i["id"] for i in r.json()["ideas"]] == [i["id"] for i in ideas]
    stored = httpx.get(f"{server.url}/v1/runs/texts/scores", params={"system": "hostile"}, timeout=60).json()
    assert {s["id"]: s["text"] or s["problem"] for s in stored["scores"]}["ctrl"] == ideas[0]["text"]
    took = time.monotonic() - started

    rejected = {
        "100k characters": ({"ideas": [{"id": "long", "text": "x" * 100_000}]}, 422, f"the limit is {MAX_TEXT}"),
        "100k problem": ({"ideas": [{"id": "long", "problem": "y" * 100_000, "method": "m"}]}, 422, "problem"),
        "lone surrogate": ('{"ideas": [{"id": "s", "text": "bad \\udc80 text"}]}', 422, "Unicode"),
        "surrogate id": ('{"ideas": [{"id": "\\ud800", "text": "fine"}]}', 422, "Unicode"),
        "surrogate system": ('{"system": "\\udfff", "ideas": [{"id": "a", "text": "fine"}]}', 422, "Unicode"),
        "whitespace only": ({"ideas": [{"id": "w", "text": " \t\u3000\n"}]}, 422, "needs"),
        "deep JSON": ('{"ideas": ' + "[" * DEEP + "]" * DEEP + "}", 400, "parsing the body"),
    }
    for label, (payload, status, phrase) in rejected.items():
        t = time.monotonic()
        kwargs = {"json": payload} if isinstance(payload, dict) else {
            "content": payload.encode(), "headers": {"content-type": "application/json"}}
        r = httpx.post(f"{server.url}/v1/score", timeout=60, **kwargs)
        assert r.status_code == status and phrase.lower() in r.text.lower(), (label, r.status_code, r.text[:300])
        assert time.monotonic() - t < 10, f"{label} took {time.monotonic() - t:.1f}s"
    write_report("hostile_ideas", {"accepted": len(ideas), "seconds_for_accepted": round(took, 2),
                                   "rejected": {k: v[1] for k, v in rejected.items()}})


def _operations(srv):
    schema = schemathesis.openapi.from_url(f"{srv.url}/openapi.json")
    return [op.ok() for op in schema.get_all_operations()]


def test_openapi_fuzz_no_server_errors(server):
    """Every operation of the live schema, positive and negative examples, with the admin token (background jobs
    without: a rebuild would load a model, a fetch or refresh would reach the real APIs); 0 answers of 5xx, none
    with a path or trace."""
    operations = _operations(server)
    assert len(operations) >= 15
    failures: list[str] = []
    calls = {"n": 0}
    for op in operations:
        is_job = op.path.endswith(("/index/rebuild", "/papers/fetch", "/papers/refresh-citations"))
        headers = {} if is_job else TOKEN
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @hsettings(max_examples=EXAMPLES, deadline=None, derandomize=not FULL, database=None,
                       suppress_health_check=list(HealthCheck), print_blob=False)
            @given(case=op.as_strategy(generation_mode=mode))
            def run(case) -> None:
                calls["n"] += 1
                response = case.call(base_url=server.url, headers=headers, timeout=60)
                leak = LEAK.search(response.content.decode("utf-8", "replace"))
                if leak and leak.group(0) in repr((case.query, case.body, case.path_parameters, case.headers)):
                    leak = None  # the caller's own input echoed in an error ("no runs for system '/proc/x'")
                if response.status_code >= 500 or leak:
                    failures.append(f"{op.method.upper()} {op.path} [{mode.value}] -> {response.status_code}: "
                                    f"{case.as_curl_command()[:400]} :: {response.text[:200]}")
            try:
                run()
            except Exception as exc:  # a generation problem in one operation must not hide the others' results
                if "Unsatisfiable" not in type(exc).__name__:
                    failures.append(f"{op.method.upper()} {op.path} [{mode.value}]: {type(exc).__name__}: {exc}"[:500])
    write_report("openapi_fuzz", {"operations": len(operations), "requests": calls["n"],
                                  "server_errors_or_leaks": len(failures), "examples_per_mode": EXAMPLES,
                                  "seed": "derandomized" if not FULL else SEED})
    assert not failures, "\n".join(failures[:15])
