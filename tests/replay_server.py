"""A real HTTP server on loopback that replays recorded OpenAlex and Semantic Scholar bodies, and the replies of
OpenAI-compatible chat endpoints (POST /v1/chat/completions), and injects faults.

Records are the recorded ones, verbatim; pages are cut from them with the recorded envelopes ({meta, results,
group_by} with an opaque base64 cursor; {total, token, data} with "token": null on the last page). Faults are
queued per (route, page): each hit of that page takes the next fault, then the page is served normally. Chat faults
are queued on ("chat", 0) and taken in order by the next requests, whatever they ask.
"""

import base64
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.helpers import FIXTURES, SHARED_DATA

APIS = SHARED_DATA / "apis"
# chat endpoints' replies (tests/fixtures/verifier/README.md says which were captured and which written in the
# servers' documented shapes); fault_*.json hold {status, headers, body} as served
CHAT = FIXTURES / "verifier"


def recorded(rel: str):
    return json.loads((APIS / rel).read_text())


def recorded_bytes(rel: str) -> bytes:
    return (APIS / rel).read_bytes()


def cursor_for(i: int) -> str:
    """An opaque cursor shaped like the recorded ones (base64 of a Python-list repr)."""
    return base64.b64encode(repr([float(i), 0, f"https://openalex.org/page{i}"]).encode()).decode()


def openalex_pages(records: list[dict], per_page: int, count: int | None = None) -> list[bytes]:
    """A cursor walk over records, ending with the recorded empty end page (results [], next_cursor null)."""
    meta0 = recorded("openalex/works_cursor_first_page.json")["meta"]
    chunks = [records[i:i + per_page] for i in range(0, len(records), per_page)]
    pages = []
    for i, chunk in enumerate(chunks):
        meta = dict(meta0, count=count if count is not None else len(records), next_cursor=cursor_for(i + 1))
        pages.append(json.dumps({"meta": meta, "results": chunk, "group_by": []}).encode())
    end = recorded("openalex/works_cursor_end_page.json")
    end["meta"]["count"] = count if count is not None else len(records)
    pages.append(json.dumps(end, separators=(",", ":")).encode())
    return pages


def s2_pages(records: list[dict], per_page: int, total: int | None = None) -> list[bytes]:
    """A token walk; the last page carries "token": null, as recorded."""
    chunks = [records[i:i + per_page] for i in range(0, len(records), per_page)]
    token0 = recorded("s2/bulk_search_first_page.json")["token"]
    pages = []
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        body = {"total": total if total is not None else len(records), "token": None if last else f"{token0}{i + 1}",
                "data": chunk}
        pages.append(json.dumps(body, indent=2).encode())
    return pages


def chat_reply(name: str) -> bytes:
    """A recorded 200 reply of a chat endpoint, as served."""
    return (CHAT / name).read_bytes()


def chat_by_question(direction: str, realised: str) -> Callable[[dict], bytes]:
    """A chat responder that answers each question with its own recorded reply (the question ends the user turn)."""
    def answer(body: dict) -> bytes:
        asked = body["messages"][-1]["content"]
        return chat_reply(realised if "same approach" in asked else direction)
    return answer


S2_429_HEADERS = {"x-amzn-ErrorType": "TooManyRequestsException", "X-Cache": "Error from cloudfront",
                  "x-amz-apigw-id": "aruKjG_0vHcEs6Q="}
OPENALEX_BUDGET_HEADERS = {"x-ratelimit-limit": "10000", "x-ratelimit-remaining": "0",
                           "x-ratelimit-credits-required": "1", "x-ratelimit-credits-used": "0",
                           "x-ratelimit-reset": "39957", "x-ratelimit-limit-usd": "1",
                           "x-ratelimit-remaining-usd": "0", "x-ratelimit-cost-required-usd": "0.0001"}


class Replay:
    def __init__(self, *, openalex: list[bytes] | None = None, s2: list[bytes] | None = None,
                 works: dict[str, dict] | None = None, papers: dict[str, dict] | None = None,
                 sources: dict[str, dict] | None = None, delay: float = 0.0,
                 chat: Callable[[dict], bytes] | None = None) -> None:
        self.chat = chat  # request body -> the reply a chat endpoint serves
        self.walks = {"works": openalex or [], "paper/search/bulk": s2 or []}
        self.works = works or {}  # short W id / doi -> work, for filter lookups (refresh)
        self.papers = papers or {}  # any S2 id form -> paper, for /paper/batch
        self.sources = sources or {}
        self.delay = delay
        self.faults: dict[tuple[str, int], list[str]] = {}
        self.log: list[dict] = []
        self.served = 0  # answers completed with 200
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"replay": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # a short poll: shutdown() waits for it, once per test
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def fault(self, route: str, page: int, *kinds: str) -> None:
        self.faults.setdefault((route, page), []).extend(kinds)

    def requests(self, route: str) -> list[dict]:
        return [r for r in self.log if r["route"] == route]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    replay: Replay

    def log_message(self, *args) -> None:
        pass

    # --- routing -------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        split = urlsplit(self.path)
        route = split.path.strip("/")
        params = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        r = self.replay
        entry = {"method": method, "route": route, "params": params, "headers": dict(self.headers), "body": body,
                 "t": time.monotonic()}
        with r._lock:
            r.log.append(entry)
        if r.delay:
            time.sleep(r.delay)
        if route == "works" and "cursor" not in params:
            return self._filter_works(params)
        if route in r.walks:
            return self._walk(route, params)
        if route == "paper/batch" and method == "POST":
            return self._batch(params, body)
        if route == "sources":
            return self._sources(params)
        if route == "v1/chat/completions" and method == "POST" and r.chat is not None:
            return self._chat(body)
        self._send(404, b"<!doctype html><title>404 Not Found</title><h1>Not Found</h1>", "text/html")

    def _walk(self, route: str, params: dict) -> None:
        pages = self.replay.walks[route]
        if route == "works":
            cursor = params.get("cursor")
            index = 0 if cursor == "*" else next((i + 1 for i in range(len(pages)) if cursor_for(i + 1) == cursor),
                                                 None)
        else:
            token = params.get("token")
            token0 = recorded("s2/bulk_search_first_page.json")["token"]
            index = 0 if token is None else next((i for i in range(1, len(pages)) if token == f"{token0}{i}"), None)
        if index is None or index >= len(pages):
            return self._send(400, json.dumps({"error": "Invalid cursor", "message": repr(params)}).encode())
        queued = self.replay.faults.get((route, index))
        if queued:
            return self._fault(queued.pop(0), pages[index])
        self._send(200, pages[index])

    def _filter_works(self, params: dict) -> None:
        """GET /works?filter=ids.openalex:W1|W2 or doi:a|b, with select= (citation refresh), or a count probe."""
        kind, _, values = params.get("filter", "").partition(":")
        queued = self.replay.faults.get(("works-filter", 0))
        found = []
        if kind in ("ids.openalex", "openalex", "doi"):
            for v in values.split("|"):
                work = self.replay.works.get(v.rsplit("/", 1)[-1] if kind != "doi" else v.lower())
                if work is not None:
                    found.append(work)
        elif self.replay.walks["works"]:  # a probe: the first page's meta with per_page results
            first = json.loads(self.replay.walks["works"][0])
            per = int(params.get("per_page", 25))
            return self._send(200, json.dumps({"meta": {**first["meta"], "per_page": per, "next_cursor": None},
                                               "results": first["results"][:per], "group_by": []}).encode())
        if "select" in params:
            keys = params["select"].split(",")
            found = [{k: w.get(k) for k in keys} for w in found]
        meta = {"count": len(found), "db_response_time_ms": 5, "page": 1, "per_page": int(params.get("per_page", 25)),
                "groups_count": None}
        body = json.dumps({"meta": meta, "results": found, "group_by": []}).encode()
        if queued:
            return self._fault(queued.pop(0), body)
        self._send(200, body)

    def _batch(self, params: dict, body) -> None:
        ids = (body or {}).get("ids")
        if not isinstance(ids, list) or len(ids) > 500:
            return self._send(400, json.dumps({"error": "ids must be a list of at most 500"}).encode())
        if "fields" not in params:
            return self._send(400, json.dumps({"error": "fields must be a query parameter"}).encode())
        keys = params["fields"].split(",")
        out = []
        for i in ids:
            paper = self.replay.papers.get(i)
            out.append(None if paper is None else {k: paper.get(k) for k in ["paperId", *keys]})
        data = json.dumps(out).encode()
        queued = self.replay.faults.get(("paper/batch", 0))
        if queued:
            return self._fault(queued.pop(0), data)
        self._send(200, data)

    def _sources(self, params: dict) -> None:
        hit = self.replay.sources.get(params.get("search", "").casefold())
        meta = {"count": 1 if hit else 0, "db_response_time_ms": 3, "page": 1, "per_page": 1, "groups_count": None}
        self._send(200, json.dumps({"meta": meta, "results": [hit] if hit else [], "group_by": []}).encode())

    def _chat(self, body) -> None:
        reply = self.replay.chat(body) if self.replay.chat else b""
        with self.replay._lock:
            queued = self.replay.faults.get(("chat", 0))
            kind = queued.pop(0) if queued else None
        if kind is None:
            return self._send(200, reply)
        name, _, arg = kind.partition(":")
        if name == "reply" and arg.startswith("fault_"):  # a recorded error: {status, headers, body}
            served = json.loads((CHAT / arg).read_text())
            return self._send(served["status"], json.dumps(served["body"]).encode(), headers=served["headers"])
        if name == "reply":  # another recorded 200 reply in place of the usual one
            return self._send(200, chat_reply(arg))
        if name == "echo-key":  # a careless proxy that puts the credential it got into its error
            text = f"invalid credentials: {self.headers.get('Authorization')}"
            return self._send(401, json.dumps({"error": {"message": text, "type": "auth_error"}}).encode())
        self._fault(kind, reply)

    # --- faults ----------------------------------------------------------------------------------------------
    def _fault(self, kind: str, body: bytes) -> None:
        name, _, arg = kind.partition(":")
        if name == "429-retry-after":
            self._send(429, json.dumps({"error": "Rate limit exceeded", "message": "Rate limit exceeded"}).encode(),
                       headers={"Retry-After": arg or "1"})
        elif name == "429":  # Semantic Scholar's recorded 429: no Retry-After, no rate-limit headers
            self._send(429, recorded_bytes("s2/rate_limited_429.json"), headers=S2_429_HEADERS)
        elif name == "429-budget":
            self._send(429, json.dumps({"error": "Rate limit exceeded", "message": "Insufficient credits"}).encode(),
                       headers={**OPENALEX_BUDGET_HEADERS, "Retry-After": "39957"})
        elif name == "503":
            self._send(503, b"<html><body><h1>503 Service Unavailable</h1></body></html>", "text/html")
        elif name == "400":
            self._send(400, recorded_bytes("openalex/error_400_bad_filter.json"))
        elif name == "403":  # Semantic Scholar's bad key
            self._send(403, json.dumps({"message": "Forbidden"}).encode())
        elif name == "403-slow-down":  # OpenAlex's documented per-second limit answer
            self._send(403, json.dumps({"error": "Rate limit exceeded; slow down"}).encode())
        elif name == "401":  # OpenAlex without a key (recorded on /rate-limit, 2026)
            body = {"error": "Invalid or missing API key", "message": "API key not found"}
            self._send(401, json.dumps(body).encode())
        elif name == "reset":  # RST instead of an answer
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif name == "truncate":  # the full Content-Length, half the body, then the connection drops
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif name == "truncate-short":  # cut by a proxy that fixed up Content-Length: valid HTTP, broken JSON
            self._send(200, body[: len(body) // 2])
        elif name == "slow":
            time.sleep(float(arg or 2))
            try:
                self._send(200, body)
            except OSError:
                pass
        else:
            raise ValueError(kind)

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        if status == 200:
            with self.replay._lock:
                self.replay.served += 1
