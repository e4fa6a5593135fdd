"""`omnisocial explore [FOLDER]`: serve a results explorer on localhost (docs/explorer.md).

The explorer opens from the file system too; a server is for a browser that restricts file://
pages, or to look at a run on a remote machine through an SSH tunnel. The standard library's
file server, bound to 127.0.0.1 by default, with byte ranges (206 Partial Content): a browser
seeks in a video (to the window raters and models saw) only when the server answers ranges.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from omnisocial.errors import EXIT_OK, InputError

DEFAULT_FOLDER = "results/familiarity/explorer"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeHandler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler with single byte ranges (what media elements ask for)."""

    def send_head(self):
        match = _RANGE.match(self.headers.get("Range", "").strip())
        path = self.translate_path(self.path)
        if not match or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        first, last = match.groups()
        if first:
            start, end = int(first), min(int(last), size - 1) if last else size - 1
        elif last:  # the final N bytes
            start, end = max(0, size - int(last)), size - 1
        else:
            return super().send_head()
        if start >= size or start > end:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return None
        handle = open(path, "rb")  # noqa: SIM115 (copyfile reads it and the base class closes it)
        handle.seek(start)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self._remaining = end - start + 1
        return handle

    def copyfile(self, source, outputfile):
        remaining = getattr(self, "_remaining", None)
        if remaining is None:
            return super().copyfile(source, outputfile)
        self._remaining = None
        while remaining > 0:
            chunk = source.read(min(1 << 16, remaining))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)

    def end_headers(self):
        if self.command == "GET" and "Range" not in self.headers:
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def log_message(self, format, *args):  # one line a request on stderr, as the base class
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def make_server(folder: str | os.PathLike, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server of `folder` (an explorer: it must hold index.html); port 0 picks a free one."""
    folder = Path(folder)
    if not (folder / "index.html").is_file():
        raise InputError(
            f"{folder}: no explorer here (no index.html); the workflow's rule explorer writes one"
        )
    handler = functools.partial(RangeHandler, directory=str(folder))
    return ThreadingHTTPServer((host, port), handler)


def _run(args: argparse.Namespace) -> int:
    server = make_server(args.folder, args.host, args.port)
    host, port = server.server_address[:2]
    print(f"omnisocial explore: serving {args.folder} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def add_cli(subparsers) -> None:
    """Register `omnisocial explore [FOLDER] [--port N] [--host H]`."""
    parser = subparsers.add_parser(
        "explore",
        help="serve a run's results explorer on localhost",
        description="Serve the results explorer (the workflow's rule explorer writes it) on "
        "http://127.0.0.1:PORT/. The folder also opens straight from the file system.",
    )
    parser.add_argument(
        "folder", nargs="?", default=DEFAULT_FOLDER, help="the explorer folder (default: %(default)s)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (0: a free one; default: %(default)s)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.set_defaults(func=_run)
