"""A real local HTTP server that speaks OpenAI chat completions with scripted replies.

Streamed (SSE) and whole replies, with ``usage``; faults on demand (status
codes, Retry-After, a stream cut mid-reply, a malformed body, a slow answer).
Every request body is recorded, so tests assert on what was *sent* as well as
on what happened; so is every GET's path.  ``models`` / ``models_headers`` set what
``GET /v1/models`` answers, to stand in for llama.cpp, Ollama or another server.  A request
for several choices (``n``) gets a reply's ``alternatives`` as choices 1.., streamed
interleaved as servers stream them; ``max_n`` makes it refuse a larger ``n`` with a 400, as
Groq's endpoint does, without using a reply.
Nothing in the SDK is patched: requests travel over TCP.

    with ScriptedOpenAIServer([Reply("```python\\nx = 1\\n```")]) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jupyter_ai_ci.testing.replies import Reply, content_text, image_parts, rough_tokens


class ScriptedOpenAIServer:
    def __init__(self, replies: list[Reply | str] | None = None, api_key: str | None = None,
                 host: str = "127.0.0.1", port: int = 0, model: str = "scripted-model") -> None:
        self.replies: list[Reply] = [r if isinstance(r, Reply) else Reply(r) for r in replies or ()]
        self.api_key = api_key
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        # Each POST's target as its request line said it: through a proxy, the URL with its host
        # (a test's stand-in for a hosted endpoint: HTTP_PROXY at this server).
        self.posts: list[str] = []
        self.models: dict[str, Any] | None = None  # None: one model, ``model``
        self.models_headers: dict[str, str] = {}
        self.models_status = 200
        # Ask the key for /models too, as llama.cpp's server does: it then passes the managed local
        # model's proof (model/local_auth.py) and can stand in for it.
        self.models_need_key = False
        self.max_n: int | None = None  # a request asking for more choices gets a 400, as some servers answer
        # A request with pictures gets a 400 that names them, as a server whose model takes no images.
        self.refuse_images = False
        self.misses: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- lifecycle ------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- scripting --------------------------------------------------------
    def script(self, *replies: Reply | str) -> None:
        """Replace the queue of replies; plain strings are ``Reply(text)``."""
        with self._lock:
            self.replies = [r if isinstance(r, Reply) else Reply(r) for r in replies]
            self.requests.clear()
            self.gets.clear()
            self.posts.clear()
            self.misses.clear()

    def request_texts(self) -> list[str]:
        """Each recorded request's messages joined as text, for assertions."""
        return ["\n".join(content_text(m.get("content")) for m in r.get("messages", [])) for r in self.requests]

    def _next(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.requests.append(body)
            return self.replies.pop(0) if self.replies else None

    # ---- HTTP -------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Small writes go out at once, as model servers send them (uvicorn sets TCP_NODELAY):
            # with Nagle, a kept connection waits on the client's delayed ACK, ~40 ms a reply.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def version_string(self) -> str:
                # The Server header, once: a server that names itself there (llama-server) does so.
                return server.models_headers.get("Server") or super().version_string()

            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                self._json(status, {"error": {"message": message, "type": "scripted", "code": status}},
                           headers)

            def do_GET(self) -> None:
                with server._lock:
                    server.gets.append(self.path)
                if self.path.rstrip("/").endswith("/models"):
                    if server.models_need_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                        self._error(401, "Incorrect API key provided.")
                        return
                    models = server.models or {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                    headers = {k: v for k, v in server.models_headers.items() if k != "Server"}
                    if server.models_status != 200:
                        self._error(server.models_status, "scripted /models status", headers)
                    else:
                        self._json(200, models, headers)
                else:
                    self._error(404, "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with server._lock:
                    server.posts.append(self.path)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"no route {self.path}")
                    return
                if server.api_key is not None and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._error(401, "Incorrect API key provided.")
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._error(400, "request body is not JSON")
                    return
                n = body.get("n")
                if server.max_n is not None and isinstance(n, int) and n > server.max_n:
                    with server._lock:
                        server.requests.append(body)
                    self._error(400, f"'n' : number must be at most {server.max_n}")
                    return
                if server.refuse_images and image_parts(body):
                    with server._lock:
                        server.requests.append(body)
                    self._error(400, "Invalid content type. image_url is only supported by certain models.")
                    return
                reply = server._next(body)
                if reply is None:
                    self._error(500, "scripted server: no reply left in the script")
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.until is not None:
                    reply.until.wait(60)
                text = "\n".join(content_text(m.get("content")) for m in body.get("messages", []))
                if reply.require is not None and reply.require not in text:
                    server.misses.append(reply.require)
                    self._error(400, f"scripted reply requires {reply.require!r} in the request")
                    return
                if reply.status != 200:
                    self._error(reply.status, f"scripted status {reply.status}", reply.headers)
                    return
                if reply.raw is not None:
                    data = reply.raw.encode()
                    self.send_response(200)
                    ctype = "text/event-stream" if body.get("stream") else "application/json"
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                texts = reply.texts(body.get("n"))
                prompt, completion = reply.tokens or (rough_tokens(text), sum(rough_tokens(t) for t in texts))
                usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion}
                model = body.get("model") or server.model
                if body.get("stream"):
                    self._stream(reply, texts, model, usage if reply.usage else None,
                                 bool((body.get("stream_options") or {}).get("include_usage")))
                else:
                    payload: dict[str, Any] = {
                        "id": "chatcmpl-scripted", "object": "chat.completion",
                        "created": int(time.time()), "model": model,
                        "choices": [{"index": i, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)],
                    }
                    if reply.usage:
                        payload["usage"] = usage
                    self._json(200, payload)

            def _stream(self, reply: Reply, texts: list[str], model: str, usage: dict[str, int] | None,
                        include_usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                # As model servers stream: chunked, the connection kept for the next request.
                # A reply cut mid-stream closes the connection instead, with no end marker.
                cut = reply.cut_after is not None
                if cut:
                    self.send_header("Connection", "close")
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.close_connection = cut

                def write(data: bytes) -> None:
                    self.wfile.write(data if cut else f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

                def chunk(delta: dict[str, Any], finish: str | None = None,
                          use: dict[str, int] | None = None, choices: bool = True, index: int = 0) -> None:
                    event: dict[str, Any] = {
                        "id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                        "created": int(time.time()), "model": model,
                        "choices": [{"index": index, "delta": delta, "finish_reason": finish}] if choices else [],
                    }
                    if use is not None:
                        event["usage"] = use
                    write(f"data: {json.dumps(event)}\n\n".encode())

                # Several choices interleave, a piece of each in turn, as servers generate them.
                cuts = [t if reply.cut_after is None else t[: reply.cut_after] for t in texts]
                for index in range(len(cuts)):
                    chunk({"role": "assistant", "content": ""}, index=index)
                for i in range(0, max(len(t) for t in cuts), 16):
                    for index, text in enumerate(cuts):
                        if text[i: i + 16]:
                            chunk({"content": text[i: i + 16]}, index=index)
                if reply.cut_after is not None:
                    return  # the connection closes mid-reply, with no [DONE]
                for index in range(len(cuts)):
                    chunk({}, finish="stop", index=index)
                if include_usage and usage is not None:
                    chunk({}, use=usage, choices=False)
                write(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")  # the chunked body's end
                self.wfile.flush()

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve scripted OpenAI chat completions.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", action="append", default=[], help="a reply text (repeatable)")
    args = parser.parse_args()
    server = ScriptedOpenAIServer([Reply(t) for t in args.reply], port=args.port).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
