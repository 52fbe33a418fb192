"""A real HTTP server on 127.0.0.1 in a thread, for /metrics tests (reached over SSH)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port; yield the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that answers with :meth:`reply` and logs nothing (pytest shows stderr)."""

    def reply(
        self, body: bytes, status: int = 200, content_type: str = "text/plain; version=0.0.4"
    ) -> None:
        """One whole response with its length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass
