"""A real loopback HTTP server that speaks OpenAI chat completions (and Gemini generateContent).

Tests and benchmarks script it per request: a delay, a 429 with Retry-After, a 5xx, a hang
longer than the client's timeout, a garbage body, or a valid reply. It counts requests,
the peak number in flight, and what each request asked, so tests can check retries,
concurrency limits and resumes from the server's side.

    with FakeChatServer() as server:
        server.enqueue(Action.rate_limited(retry_after="1"), Action.ok())
        ... OpenAICompatBackend({"base_url": server.url, ...}) ...
        assert server.requests == 2
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
FAMILIAR_JSON = '{"relationship_label": "FAMILIAR", "confidence": 0.75, "rationale": "They joke easily."}'


@dataclass(frozen=True)
class Action:
    """What the server does with one request."""

    kind: str = "ok"  # ok | status | hang | garbage | drip
    delay_s: float = 0.0
    status: int = 200
    content: str | None = None  # ok: the assistant text (default: a valid familiarity answer)
    body: str = ""  # status: the error body; '{auth}' is replaced by the request's credentials
    headers: dict = field(default_factory=dict)
    model: str = "fake-model-2026-01-01"
    system_fingerprint: str | None = "fp_test123"
    finish_reason: str | None = None  # ok: None = the normal stop ("stop" / "STOP"); e.g. "length"

    @classmethod
    def ok(cls, content: str | None = None, delay_s: float = 0.0, **kwargs) -> Action:
        return cls("ok", delay_s=delay_s, content=content, **kwargs)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1", delay_s: float = 0.0) -> Action:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls("status", delay_s=delay_s, status=429, body="rate limited", headers=headers)

    @classmethod
    def error(cls, status: int = 500, body: str = "internal error", delay_s: float = 0.0) -> Action:
        return cls("status", delay_s=delay_s, status=status, body=body)

    @classmethod
    def hang(cls, seconds: float) -> Action:
        return cls("hang", delay_s=seconds)

    @classmethod
    def garbage(cls) -> Action:
        return cls("garbage")

    @classmethod
    def drip(cls, seconds: float) -> Action:
        """A valid reply whose body trickles in over `seconds` (each byte well within a read timeout)."""
        return cls("drip", delay_s=seconds)


def _prompt_of(body: dict) -> str:
    """The last text the request asked (OpenAI messages or Gemini contents)."""
    try:
        if "messages" in body:
            content = body["messages"][-1]["content"]
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content if part.get("type") == "text")
        return "".join(part.get("text", "") for part in body["contents"][-1]["parts"])
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


class FakeChatServer:
    """Threaded loopback server; `url` is the OpenAI base URL (ends in /v1), `root` the bare origin."""

    def __init__(
        self,
        default: Action | None = None,
        responder: Callable[[dict, int], Action | None] | None = None,
        port: int = 0,
        nagle: bool = False,
    ):
        self.default = default or Action.ok()
        self.nagle = nagle  # leave Nagle's algorithm on, as Python's http.server and cpp-httplib do
        self.port = port  # 0: any free port
        self.responder = responder
        self._queue: list[Action] = []
        self._lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.arrivals: list[float] = []
        self.bodies: list[dict] = []
        self.auth: list[str] = []
        self.prompts: Counter = Counter()
        self.paths: list[str] = []
        self.get_status = 404  # what GET (a backend's probe of /models) answers; 401 = bad key
        self.gets = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._address: tuple = ()
        self._thread: threading.Thread | None = None

    # --- scripting ------------------------------------------------------------------------

    def enqueue(self, *actions: Action) -> None:
        """Answer the next requests with these actions, in order, then fall back to the default."""
        with self._lock:
            self._queue.extend(actions)

    def _next_action(self, body: dict, number: int) -> Action:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None:
            action = self.responder(body, number)
            if action is not None:
                return action
        return self.default

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def root(self) -> str:
        host, port = self._address  # kept after stop(): a stopped server's URL refuses connections
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def start(self) -> FakeChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = not server.nagle  # else the body waits for the client's ACK

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                server._handle(self)

            def do_GET(self):  # noqa: N802
                with server._lock:
                    server.gets += 1
                self.send_response(server.get_status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler, bind_and_activate=False)
        httpd.allow_reuse_address = True  # a benchmark restarts a server on the same port
        httpd.daemon_threads = True
        httpd.block_on_close = False
        httpd.request_queue_size = 256
        httpd.server_bind()
        httpd.server_activate()
        self._httpd = httpd
        self._address = httpd.server_address[:2]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- serving --------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        credentials = handler.headers.get("Authorization") or handler.headers.get("x-goog-api-key") or ""
        with self._lock:
            self.requests += 1
            number = self.requests
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.arrivals.append(time.monotonic())
            self.bodies.append(body)
            self.auth.append(credentials)
            self.prompts[_prompt_of(body)] += 1
            self.paths.append(handler.path)
        try:
            action = self._next_action(body, number)
            gemini = ":generateContent" in handler.path
            if action.delay_s and action.kind != "drip":
                time.sleep(action.delay_s)
            if action.kind == "hang":  # the client gave up long ago; drop the connection
                handler.close_connection = True
                return
            if action.kind == "drip":
                data = json.dumps(self._openai_ok(action, FAMILIAR_JSON, number)).encode()
                handler.send_response(200)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                step = max(1, len(data) // 20)
                for start in range(0, len(data), step):
                    handler.wfile.write(data[start : start + step])
                    handler.wfile.flush()
                    time.sleep(action.delay_s / 20)
            elif action.kind == "garbage":
                self._send(
                    handler, 200, b"<html>502 upstream \x00\xff garbage", {"Content-Type": "text/html"}
                )
            elif action.kind == "status":
                text = action.body.replace("{auth}", credentials)
                payload = (
                    json.dumps(
                        {
                            "error": {
                                "code": action.status,
                                "message": text,
                                "status": _STATUS.get(action.status, "UNKNOWN"),
                            }
                        }
                    )
                    if gemini
                    else json.dumps({"error": {"message": text, "type": "server_error"}})
                )
                self._send(
                    handler,
                    action.status,
                    payload.encode(),
                    {**action.headers, "Content-Type": "application/json"},
                )
            else:
                content = FAMILIAR_JSON if action.content is None else action.content
                payload = (
                    self._gemini_ok(action, content) if gemini else self._openai_ok(action, content, number)
                )
                self._send(
                    handler,
                    200,
                    json.dumps(payload).encode(),
                    {**action.headers, "Content-Type": "application/json"},
                )
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _openai_ok(action: Action, content: str, number: int) -> dict:
        payload = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": action.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": action.finish_reason or "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        if action.system_fingerprint:
            payload["system_fingerprint"] = action.system_fingerprint
        return payload

    @staticmethod
    def _gemini_ok(action: Action, content: str) -> dict:
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": content}]},
                    "finishReason": action.finish_reason or "STOP",
                    "index": 0,
                }
            ],
            "modelVersion": action.model,
            "responseId": "resp-1",
        }

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
