"""moto's S3 server with its writes made atomic: the loopback store of the S3 tests.

moto checks a conditional put (`If-None-Match: *`, `If-Match`) and then stores the object
in two steps on the request's own thread, so two racing conditional puts of one key can both
succeed: seen in a CI-like run, where two of our jobs racing for `snapshot-4` both got 200
and both reported their commit, the second overwriting the first. S3 itself decides such a
race atomically, and the commit protocol relies on it (docs/format.md, §11, step 5). This server
is moto's own (`moto.server`'s app and request handler), with one lock around every request
that changes the store (PUT, POST, DELETE), so a conditional write is checked and done in one
step; reads still run concurrently.

Usage: python moto_atomic_server.py -H 127.0.0.1 -p 0   (prints the address like moto_server)
"""

import argparse
import threading

from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                           create_backend_app)
from werkzeug.serving import run_simple

_WRITES = threading.Lock()


class AtomicWrites:
    """WSGI middleware: one request that changes the store at a time, whole."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") not in ("PUT", "POST", "DELETE"):
            return self.app(environ, start_response)
        with _WRITES:
            # The body is produced inside the lock too: moto may build it lazily.
            body = self.app(environ, start_response)
            try:
                return list(body)
            finally:
                if hasattr(body, "close"):
                    body.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=0)
    args = parser.parse_args()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, AtomicWrites(app), threaded=True,
               request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
