"""A fault-injecting HTTP proxy for the S3 tests, on loopback.

It forwards every request to the S3 server (moto) unchanged, except those a rule picks: a rule
answers with an error status instead (503 SlowDown for throttling, 500 InternalError), or cuts
the connection with a TCP reset, either before forwarding (the request never reached the
store) or after (the store acted on it, the client never hears back). Rules match on the HTTP
method and a substring of the path, and fire on the k-th matching request or on the next n.
"""

import http.client
import http.server
import socket
import socketserver
import struct
import threading


class Rule:
    """Fires on matching requests number `first` .. `first + times - 1` (1-based)."""

    def __init__(self, action, method=None, path_contains=None, first=1, times=1, status=503):
        assert action in ("status", "reset-before", "reset-after")
        self.action, self.method, self.path_contains = action, method, path_contains
        self.first, self.times, self.status = first, times, status
        self.seen = 0
        self.fired = 0

    def matches(self, method, path):
        if self.method and method != self.method:
            return False
        if self.path_contains and self.path_contains not in path:
            return False
        self.seen += 1
        if self.first <= self.seen < self.first + self.times:
            self.fired += 1
            return True
        return False


class FaultProxy:
    """`with FaultProxy(upstream_port) as p:` serves on `p.endpoint` until the block ends."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.rules = []
        self.requests = []  # (method, path) of every request seen, in order
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reset(self):
                # SO_LINGER with a zero timeout makes close() send RST, not FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.requests.append((self.command, self.path))
                    rule = next((r for r in proxy.rules
                                 if r.matches(self.command, self.path)), None)
                if rule and rule.action == "reset-before":
                    return self._reset()
                if rule and rule.action == "status":
                    code = "SlowDown" if rule.status == 503 else "InternalError"
                    payload = (f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
                               f"<Message>injected</Message></Error>").encode()
                    self.send_response(rule.status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items()}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if rule and rule.action == "reset-after":
                    return self._reset()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    # A HEAD answer's Content-Length is the object's size: pass it through.
                    if k.lower() == "content-length" and self.command == "HEAD":
                        self.send_header(k, v)
                    elif k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, rule):
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self):
        with self.lock:
            self.rules.clear()
            self.requests.clear()

    def __enter__(self):
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
