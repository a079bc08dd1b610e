"""A local JSON-over-HTTP server thread that stands in for a model endpoint in tests (a
chat API, a rerank API): no model runs; ``answer(body)`` decides the reply. Every request
body is kept in ``requests`` (with its path and Authorization header); ``status`` /
``delay_s`` simulate a failing or slow model."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonStandIn:
    def __init__(self, answer: Callable[[dict[str, Any]], Any], *, status: int = 200, delay_s: float = 0.0,
                 error_body: bytes = b"", base: str = "") -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                time.sleep(delay_s)
                if status != 200:
                    self.send_response(status)
                    self.end_headers()
                    self.wfile.write(error_body)
                    return
                data = json.dumps(answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{base}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> JsonStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
