"""The request body limit, enforced before FastAPI reads (and spools) a body."""

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around an upload of the allowed size


class BodyLimit:
    """413, naming the limit, for a declared Content-Length over it: a "1 GB" header with a few bytes behind it
    would otherwise hold a worker until the client gives up. A chunked body that grows past it is cut off."""

    def __init__(self, app: ASGIApp, limit: int, slack: int = MULTIPART_SLACK) -> None:
        self.app, self.limit, self.max_bytes = app, limit, limit + slack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send, declared.decode("latin-1")[:20])
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    return {"type": "http.disconnect"}  # the app stops reading; nothing more is buffered
            return message

        await self.app(scope, limited, send)

    async def _refuse(self, send: Send, declared: str) -> None:
        body = json.dumps({"detail": f"request body of {declared} bytes exceeds the limit of {self.limit} bytes "
                                     "(HINDSIGHT_MAX_UPLOAD_BYTES, plus 64 KB for multipart framing)"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
