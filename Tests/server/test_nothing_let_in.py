"""Rule V8, nothing let in through the page (issue 37): storesh serve's page and its APIs share one origin and the
page can change the bucket, so stored content is served inert on every content route, the page cannot be framed,
its changes carry a token no other page can read, /internal/* is for tools and the page alone, event streams are
bounded apart from ordinary requests, secrets are elided from every log, and the Host header is read strictly."""
import re
import resource
import socket
import time

import pytest
import requests

from serving import BUCKET, Server, harness

OWNER = {"Authorization": "Bearer owner"}
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/internal/reset", {method: "POST"})</script></svg>'
HTML = b'<html><body><script>fetch("/internal/reset", {method: "POST"})</script></body></html>'


@pytest.fixture
def server(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket")
    for name, content, content_type in [("users/mallory/avatar.svg", SVG, "image/svg+xml"), ("site/index.html", HTML, "text/html"),
                                        ("images/cat.png", b"\x89PNG", "image/png"), ("data/a.json", b"{}", "application/json")]:
        answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": name},
                                data=content, headers={"Content-Type": content_type})
        assert answer.status_code == 200, answer.text
    yield server
    status, err = server.stop()
    assert status == 0, err


def content_routes(server, name):
    """Every way content leaves the server: both JSON API forms, the v0 API as the owner, and a download token."""
    quoted = requests.utils.quote(name, safe="")
    token = server.request("POST", f"/v0/b/{BUCKET}/o/{quoted}", params={"create_token": "true"},
                           headers=OWNER).json()["downloadTokens"].split(",")[0]
    assert token
    return [f"/download/storage/v1/b/{BUCKET}/o/{quoted}?alt=media", f"/storage/v1/b/{BUCKET}/o/{quoted}?alt=media",
            f"/v0/b/{BUCKET}/o/{quoted}?alt=media", f"/v0/b/{BUCKET}/o/{quoted}?alt=media&token={token}"]


def test_every_content_response_is_inert(server):
    for name, active in [("users/mallory/avatar.svg", True), ("site/index.html", True), ("images/cat.png", False),
                         ("data/a.json", False)]:
        for path in content_routes(server, name):
            headers = OWNER if path.startswith("/v0") and "token=" not in path else {}
            answer = server.request("GET", path, headers=headers)
            assert answer.status_code == 200, (path, answer.text)
            assert answer.headers["X-Content-Type-Options"] == "nosniff", path
            assert "sandbox" in answer.headers["Content-Security-Policy"] and "default-src 'none'" in answer.headers["Content-Security-Policy"]
            assert (answer.headers.get("Content-Disposition", "").startswith("attachment")) == active, (path, answer.headers)


def test_a_stored_disposition_holds_for_clients_but_not_for_a_browser_opening_it(server):
    quoted = requests.utils.quote("site/index.html", safe="")
    patched = server.request("PATCH", f"/storage/v1/b/{BUCKET}/o/{quoted}",
                             json={"contentDisposition": 'inline; filename="index.html"'})
    assert patched.status_code == 200
    path = f"/download/storage/v1/b/{BUCKET}/o/{quoted}?alt=media"
    assert server.request("GET", path).headers["Content-Disposition"] == 'inline; filename="index.html"'
    opened = server.request("GET", path, headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
    assert opened.headers["Content-Disposition"] == 'attachment; filename="index.html"'
    assert "sandbox" in opened.headers["Content-Security-Policy"]


def test_the_page_cannot_be_framed(server):
    for path in ["/", "/?view=requests", "/?object=site%2Findex.html"]:
        answer = server.request("GET", path)
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


def page_token(server):
    return re.search(r'name="storesh-page-token" content="([^"]+)"', server.request("GET", "/").text).group(1)


def count(server):
    return len(server.request("GET", f"/storage/v1/b/{BUCKET}/o").json().get("items", []))


def test_changes_from_the_page_carry_its_token_and_internal_is_for_tools_and_the_page(server):
    own = {"Origin": server.url}
    quoted = requests.utils.quote("images/cat.png", safe="")
    # A change from the server's own origin without the token (a document that ran a script) is refused.
    for method, path, arguments in [("POST", "/internal/reset", {}), ("DELETE", f"/storage/v1/b/{BUCKET}/o/{quoted}", {}),
                                    ("PATCH", f"/storage/v1/b/{BUCKET}/o/{quoted}", {"json": {"cacheControl": "x"}})]:
        answer = server.request(method, path, headers=own, **arguments)
        assert answer.status_code == 403, (method, path, answer.text)
    assert count(server) == 4
    # An opaque origin (a sandboxed document) and another site reach nothing.
    for origin in ["null", "http://evil.example"]:
        assert server.request("POST", "/internal/reset", headers={"Origin": origin}).status_code == 403
    assert count(server) == 4
    # An app under development on another local port keeps using the APIs, but not /internal/.
    app = {"Origin": "http://localhost:3000"}
    assert server.request("PATCH", f"/storage/v1/b/{BUCKET}/o/{quoted}", headers=app, json={"cacheControl": "a"}).status_code == 200
    assert server.request("POST", "/internal/reset", headers=app).status_code == 403
    # The page, with its token, may change and delete; a tool (no Origin) may use /internal/ as the emulator's.
    token = {"X-Storesh-Page-Token": page_token(server), **own}
    assert server.request("PATCH", f"/storage/v1/b/{BUCKET}/o/{quoted}", headers=token, json={"cacheControl": "b"}).status_code == 200
    assert server.request("POST", "/internal/reset", headers={**token, "X-Storesh-Page-Token": "0-0"}).status_code == 403
    assert server.request("POST", "/internal/reset").status_code in (200, 204)
    assert count(server) == 0


def test_event_streams_are_bounded_and_ordinary_requests_are_always_served(server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    host, port = server.url.removeprefix("http://").split(":")
    streams = []
    try:
        for _ in range(1100):
            connection = socket.create_connection((host, int(port)), timeout=30)
            connection.sendall(f"GET /_storesh/events HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            streams.append(connection)
        statuses = []
        for connection in streams:
            head = b""
            while b"\r\n" not in head:
                head += connection.recv(256)
            statuses.append(int(head.split()[1]))
        assert statuses.count(200) == 64 and statuses.count(503) == 1100 - 64, (statuses.count(200), statuses.count(503))
        # Meanwhile every other request is answered at once.
        started = time.monotonic()
        assert server.request("GET", f"/storage/v1/b/{BUCKET}/o", timeout=10).status_code == 200
        assert time.monotonic() - started < 5
        refused = server.request("GET", "/_storesh/events", timeout=10)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    finally:
        for connection in streams:
            connection.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # The places are given back as the pages go.
    deadline = time.monotonic() + 15
    while True:
        answer = requests.get(server.url + "/_storesh/events", stream=True, timeout=10)
        answer.close()
        if answer.status_code == 200 or time.monotonic() > deadline:
            break
    assert answer.status_code == 200


def test_secrets_in_a_url_are_elided_from_every_log(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--log",))
    try:
        server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "a.txt"}, data=b"a")
        url = f"/v0/b/{BUCKET}/o/a.txt"
        token = server.request("POST", url, params={"create_token": "true"}, headers=OWNER).json()["downloadTokens"]
        assert token
        assert server.request("POST", url, params={"delete_token": token}, headers=OWNER).status_code == 200
        server.request("GET", url, params={"alt": "media", "token": "t0ps3cret"})
        # The same parameters percent-encoded, as the server decodes them: elided alike.
        server.request("GET", url + "?alt=media&%74oken=3ncod3dsecret")
        server.request("PUT", f"/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&%75pload_id=upl0adsecret", data=b"x")
        page = server.request("GET", "/?view=requests").text
        assert token not in page and "t0ps3cret" not in page and "delete_token=…" in page
        assert "3ncod3dsecret" not in page and "upl0adsecret" not in page
    finally:
        status, err = server.stop()
    assert status == 0
    assert token not in err and "t0ps3cret" not in err and "delete_token=…" in err
    assert "3ncod3dsecret" not in err and "upl0adsecret" not in err


@pytest.mark.parametrize("head", [b"Host: [evil\r\n", b"Host: 127.0.0.1\r\nHost: evil.example\r\n", b"Host: 127.0.0.1:99999\r\n",
                                  b"Host: a b\r\n"])
def test_the_host_header_is_read_strictly(server, head):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(b"GET /storage/v1/b/" + BUCKET.encode() + b"/o HTTP/1.1\r\n" + head + b"Connection: close\r\n\r\n")
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    assert answer.split()[1] == b"400", answer[:200]
