"""A fault proxy of the tests' own, between storesh and a server, on 127.0.0.1: it forwards every request and
records it, and a test's rules make chosen requests fail (503, 429 with Retry-After, a reset connection, a slow
answer) or run a hook first (a second writer, a kill -9 of storesh).

A rule matches a method and a path fragment; it fires on the matching requests numbered in `on` (1 for the
first), or on every one when `on` is empty.
"""
import http.client
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class Rule:
    def __init__(self, method, action, path="", on=(), retry_after=None, seconds=0.0, hook=None):
        self.method = method
        self.path = path
        # "503", "429", "404", "reset", "reset-after-forward", "truncate-after-forward", "slow", "hook", "hook-after-forward"
        self.action = action
        self.on = set(on)
        self.retry_after = retry_after
        self.seconds = seconds
        self.hook = hook
        self.seen = 0

    def fires(self, method, path):
        if method != self.method or self.path not in path:
            return False
        self.seen += 1
        return not self.on or self.seen in self.on


class FaultProxy:
    def __init__(self, upstream, keep_host=False):
        self.upstream = urlsplit(upstream)
        # A signed request (SigV4) signs its Host header: it must reach the server as the client sent it.
        self.keep_host = keep_host
        self.rules = []
        self.requests = []  # (method, path, status or None)
        self.headers = []  # each request's headers, as a dict with lower-case names
        self.exchanges = []  # (method, path, body) of each request as it arrived
        self.lock = threading.Lock()
        # Requests received and not yet answered, or dropped: a request a killed client sent may still reach the
        # server after the client is gone (settled() waits for those).
        self.in_flight = 0
        self.settled_condition = threading.Condition(self.lock)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def handle_one(self):
                with proxy.lock:
                    proxy.in_flight += 1
                try:
                    self.handle_counted()
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1
                        proxy.settled_condition.notify_all()

            def handle_counted(self):
                with proxy.lock:
                    proxy.headers.append({k.lower(): v for k, v in self.headers.items()})
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.exchanges.append((self.command, self.path, body))
                with proxy.lock:
                    # Every rule counts its matching requests, whichever fires.
                    firing = [r for r in proxy.rules if r.fires(self.command, self.path)]
                    rule = firing[0] if firing else None
                if rule and rule.action in ("503", "429", "404"):
                    return self.answer(int(rule.action), rule)
                if rule and rule.action == "reset":
                    return self.reset()
                if rule and rule.action == "slow":
                    time.sleep(rule.seconds)
                if rule and rule.action == "hook":
                    rule.hook()
                status, headers, data = proxy.forward(self.command, self.path, self.headers, body)
                if rule and rule.action == "hook-after-forward":
                    rule.hook()
                if rule and rule.action == "reset-after-forward":
                    return self.reset()  # the server applied it; the client never hears so
                if rule and rule.action == "truncate-after-forward":
                    return self.truncate(status, headers, data)
                proxy.record(self.command, self.path, status)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() == "location":
                        # An upload session's URL names the server: it is the proxy's to answer too.
                        value = value.replace(f"http://{proxy.upstream.netloc}", proxy.url)
                    # A HEAD's Content-Length is the object's size, not its (empty) body's.
                    dropped = ("transfer-encoding", "connection") + (() if self.command == "HEAD" else ("content-length",))
                    if name.lower() not in dropped:
                        self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def truncate(self, status, headers, data):
                """The whole answer's headers, half its body, then the connection closes."""
                proxy.record(self.command, self.path, None)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def answer(self, status, rule):
                proxy.record(self.command, self.path, status)
                body = b'{"error":{"code":%d,"message":"injected by the fault proxy"}}' % status
                self.send_response(status)
                if rule.retry_after is not None:
                    self.send_header("Retry-After", str(rule.retry_after))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def reset(self):
                proxy.record(self.command, self.path, None)
                # SO_LINGER 0: close sends a TCP reset, as a broken network does.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client killed mid-request (the kill tests) is expected, not news

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def forward(self, method, path, headers, body):
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            dropped = ("connection",) if self.keep_host else ("host", "connection")
            outgoing = {k: v for k, v in headers.items() if k.lower() not in dropped}
            connection.request(method, path, body=body, headers=outgoing)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def settled(self, timeout=60):
        """Waits until every request received has been forwarded (or refused) and answered, as far as it goes."""
        with self.lock:
            if not self.settled_condition.wait_for(lambda: self.in_flight == 0, timeout=timeout):
                raise TimeoutError(f"{self.in_flight} requests still in the fault proxy after {timeout} s")

    def record(self, method, path, status):
        with self.lock:
            self.requests.append((method, path, status))

    def changing_requests(self):
        with self.lock:
            return [r for r in self.requests if r[0] not in ("GET", "HEAD")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
