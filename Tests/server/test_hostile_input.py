"""`storesh serve` under hostile input (issue 26): rules texts that once crashed the server or bricked the bucket
file, upload sessions that never ended, memory that grew with object sizes, administration reachable from any web
page, and the smaller refusals of rule V4. Each case runs the built binary as a child and checks that the server
still answers afterwards and that the shell still opens the file."""
import hashlib
import json
import os
import re
import socket
import sqlite3
import struct
import time

import pytest
import requests

import harness
from serving import Server
from test_firebase_v0 import OWNER, emulator_token, load_rules, v0_object


def rules_with(condition, functions=""):
    return ("rules_version = '2';\nservice firebase.storage {\n" + functions + " match /b/{bucket}/o {\n"
            "  match /{path=**} {\n   allow read, write: if " + condition + ";\n  }\n }\n}\n")


def set_rules(server, text):
    return server.request("PUT", "/internal/setRules", json={"rules": {"files": [{"name": "hostile.rules", "content": text}]}},
                          timeout=120)


def answers(server):
    """The server is up: its v0 root answers."""
    return server.request("GET", "/v0/", timeout=10).status_code == 200


# Rule texts -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what, text, words", [
    ("8,000 nested parentheses", rules_with("(" * 8000 + "true" + ")" * 8000), "nests more than 100 levels"),
    ("100,000 chained terms (800 KB)", rules_with(" && ".join(["true"] * 100000)), "at most 262144 bytes"),
    ("100,000 negations", rules_with("!" * 100000 + "true"), "nests more than 100 levels"),
    ("nested match blocks", "rules_version = '2';\nservice firebase.storage {\n" + "match /a {\n" * 200 + "}\n" * 200 + "}\n",
     "match blocks nest more than 32"),
])
def test_rules_beyond_the_limits_are_refused_with_their_position_and_the_server_lives(server, what, text, words):
    refused = set_rules(server, text)
    assert refused.status_code == 400, what
    message = refused.json()["error"]["message"]
    assert words in message and re.search(r"hostile\.rules \(PUT /internal/setRules\):\d+:\d+: ", message), message
    assert answers(server)
    # The open rules of a new bucket are still in force.
    assert server.request("POST", v0_object(server, "still-open"), data=b"x").status_code == 200


def test_rules_within_the_limits_are_evaluated_within_a_budget(server):
    # A flat chain of 30,000 terms fits in 256 KB and parses (a chain is one level), but evaluating it passes
    # the service's 1,000 expressions per request: the allow grants nothing, and the server answers.
    assert set_rules(server, rules_with(" && ".join(["true"] * 30000))).status_code == 200
    assert server.request("POST", v0_object(server, "x"), data=b"x").status_code == 403
    # Functions that call each other as deep as allowed, each three times: exponential work, cut off by the budget.
    functions = "".join(f"  function g{i}() {{ return g{i + 1}() && g{i + 1}() && g{i + 1}(); }}\n" for i in range(19))
    functions += "  function g19() { return true; }\n"
    assert set_rules(server, rules_with("g0()", functions)).status_code == 200
    started = time.monotonic()
    assert server.request("GET", v0_object(server, "x")).status_code == 403
    assert time.monotonic() - started < 5
    # Deep evaluation through calls: a bounded nesting, never the stack.
    functions = "".join(f"  function f{i}() {{ return {'!' * 90}f{i + 1}(); }}\n" for i in range(20))
    functions += "  function f20() { return true; }\n"
    assert set_rules(server, rules_with("f0()", functions)).status_code == 200
    assert server.request("GET", v0_object(server, "x")).status_code == 403
    assert answers(server)


def info_checksum(key, value):
    """The checksum a bucket_info row carries (FNV-1a 64 over the key and value as the engine adds them)."""
    state = 0xcbf29ce484222325

    def add(data):
        nonlocal state
        for byte in data:
            state = ((state ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF

    for text in (key, value):
        encoded = text.encode()
        add(b"\x01" + struct.pack("<q", len(encoded)) + encoded)
    return struct.unpack("<q", struct.pack("<Q", state))[0]


def store_rules_unchecked(bucket_file, text, origin):
    """Rules as an earlier storesh could keep them, before rules had bounds: written past the parser."""
    with sqlite3.connect(bucket_file) as database:
        for key, value in (("rules", text), ("rules_origin", origin)):
            database.execute("INSERT OR REPLACE INTO bucket_info (key, value, checksum) VALUES (?, ?, ?)",
                             (key, value, info_checksum(key, value)))


def test_stored_rules_that_cannot_be_used_never_stop_the_file_opening(tmp_path):
    bucket = harness.make_bucket(tmp_path, "kept", [{"name": "a.txt", "text": "a"}])
    store_rules_unchecked(bucket, rules_with(" && ".join(["true"] * 100000)), "old.rules")
    # The shell opens it and says why the rules cannot be used; what they would decide is denied (fail closed),
    # the rest works.
    status, out, err = harness.storesh(tmp_path, "--bucket", bucket, "-c", "ls")
    assert status == 1 and b"cannot be used" in err and b"(unauthorized)" in err, err
    for command in ["help", "rules show", "rules why"]:
        status, out, err = harness.storesh(tmp_path, "--bucket", bucket, "-c", command)
        assert status == 0, (command, err)
    assert b"cannot be used" in harness.storesh(tmp_path, "--bucket", bucket, "-c", "rules show")[1][:2000]
    # check reports them (and exits 1), naming the way out.
    status, out, _ = harness.storesh(tmp_path, "check", "--bucket", bucket)
    assert status == 1 and b"RULES UNUSABLE" in out and b"rules reset" in out, out
    # The server starts on it, denies what the rules would decide, and takes new rules.
    server = Server(tmp_path, bucket, name="kept")
    try:
        assert server.request("GET", v0_object(server, "a.txt")).status_code == 403
        assert server.request("GET", v0_object(server, "a.txt"), headers=OWNER).status_code == 200
        assert set_rules(server, rules_with("true")).status_code == 200
        assert server.request("GET", v0_object(server, "a.txt")).status_code == 200
    finally:
        assert server.stop()[0] == 0
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", bucket)
    assert status == 0 and b"sound" in out, out
    # rules reset mends a file whose rules cannot be used, from the shell too.
    store_rules_unchecked(bucket, "(((", "broken.rules")
    status, _, err = harness.storesh(tmp_path, "--bucket", bucket, "-c", "rules reset")
    assert status == 0, err
    assert harness.storesh(tmp_path, "check", "--bucket", bucket)[0] == 0
    status, out, err = harness.storesh(tmp_path, "--bucket", bucket, "-c", "ls")
    assert status == 0 and b"a.txt" in out and b"cannot be used" not in err, err


# Upload sessions and memory -------------------------------------------------------------------------------------


def json_resumable(server, name, content, extra_headers=None):
    start = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "resumable", "name": name},
                           json={}, headers=extra_headers or {})
    assert start.status_code == 200, start.text
    return start.headers["Location"]


def test_ended_upload_sessions_free_their_place(server, client):
    # More uploads than the 256 sessions allowed at once, one after another: each ends as it lands or is cancelled.
    for index in range(300):
        location = json_resumable(server, f"many/{index}", b"x")
        if index % 2:
            assert server.session.delete(location, timeout=30).status_code == 499
        else:
            done = server.session.put(location, data=b"x", timeout=30, headers={"Content-Range": "bytes 0-0/1"})
            assert done.status_code == 200, done.text
    # The official client's resumable upload (10 MiB, past its 8 MiB threshold) still goes through.
    content = os.urandom(10 << 20)
    blob = client.bucket(server.name).blob("big.bin")
    blob.upload_from_string(content)
    assert hashlib.md5(blob.download_as_bytes()).digest() == hashlib.md5(content).digest()


def raw_request(server, head, body=b"", read_timeout=20):
    """Sends a request by hand (headers as written, a body that may not match them) and returns the answer's bytes
    up to the server closing or `read_timeout`."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_timeout) as connection:
        connection.sendall(head.encode() + body)
        answer = b""

        def complete():
            head, separator, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"content-length: *(\d+)", head, re.I)
            return separator and len(body) >= (int(length.group(1)) if length else 0)

        try:
            # Bounded: each round reads at least one byte, until the answer is whole, the server closes, or the timeout.
            while not complete():
                piece = connection.recv(65536)
                if not piece:
                    break
                answer += piece
        except (socket.timeout, ConnectionResetError):
            pass
        return answer


def test_a_chunk_over_the_limit_is_refused_before_its_bytes(tmp_path):
    server = Server(tmp_path, tmp_path / "small.bucket", extra=["--max-object-size", "1"])
    try:
        location = json_resumable(server, "big", b"")
        path = location.removeprefix(server.url)
        # Only the headers are sent: the refusal comes at once, without the 2 MiB announced.
        answer = raw_request(server, f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2097152\r\n"
                                     "Content-Range: bytes 0-2097151/*\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        # A chunked chunk that grows past the limit is refused as it passes it, and the session ends.
        location = json_resumable(server, "big2", b"")
        refused = server.session.put(location, data=iter([b"y" * (512 << 10)] * 4), timeout=30,
                                     headers={"Content-Range": "bytes 0-2097151/*"})
        assert refused.status_code == 413
        assert server.session.put(location, data=b"", headers={"Content-Range": "bytes */*"}, timeout=30).status_code == 499
        # v0: the message names the limit, not "0 bytes".
        start = server.request("POST", v0_object(server, "v0big"), data="{}", headers={
            **OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
        over = server.session.put(start.headers["X-Goog-Upload-URL"], data=b"z" * (2 << 20), timeout=30,
                                  headers={"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"})
        assert over.status_code == 413 and "more than 1048576 bytes" in over.json()["error"]["message"], over.text
        assert "0 bytes" not in over.json()["error"]["message"]
        assert answers(server)
    finally:
        assert server.stop()[0] == 0


def test_a_denied_resumable_start_gets_no_upload_url(server):
    load_rules(server, rules_with("false"))
    refused = server.request("POST", v0_object(server, "nope"), data="{}", headers={
        "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start", "X-Goog-Upload-Header-Content-Length": "100"})
    assert refused.status_code == 403 and "X-Goog-Upload-URL" not in refused.headers


class AnonymousMemoryPeak:
    """The highest anonymous resident memory (RssAnon) of a process while it is in use, read every 10 ms by a
    thread of its own. Not VmHWM: storesh serve reads its bucket files through a memory map, whose pages are the page
    cache's (shared, dropped when memory is short) and count in RSS as files, not as what the server holds."""

    def __init__(self, pid):
        import threading
        self.pid, self.peak, self.done = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def read(self):
        with open(f"/proc/{self.pid}/status") as status:
            return int(re.search(r"RssAnon:\s+(\d+) kB", status.read()).group(1))

    def watch(self):
        while not self.done.wait(0.01):
            self.peak = max(self.peak, self.read())

    def stop(self):
        self.done.set()
        self.thread.join()
        return max(self.peak, self.read())


def test_large_objects_pass_through_bounded_memory(tmp_path):
    """Two 200 MiB uploads at once and their downloads: the server's peak anonymous memory stays under a bound smaller
    than one object (its RSS grew by more than three times the objects' size before spools)."""
    import concurrent.futures
    server = Server(tmp_path, tmp_path / "large.bucket", extra=["--max-object-size", "512"])
    size = 200 << 20
    piece = os.urandom(1 << 20)
    expected = hashlib.md5(piece * 200).hexdigest()
    memory = AnonymousMemoryPeak(server.process.pid)
    try:
        def upload(name):
            answer = server.session.post(
                f"{server.url}/upload/storage/v1/b/{server.name}/o", params={"uploadType": "media", "name": name},
                data=iter([piece] * 200), timeout=600)
            assert answer.status_code == 200, answer.text
            return answer.json()

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            resources = list(pool.map(upload, ["large/a", "large/b"]))
        assert all(resource["size"] == str(size) for resource in resources)

        def download(name):
            digest = hashlib.md5()
            with requests.get(f"{server.url}/download/storage/v1/b/{server.name}/o/large%2F{name[-1]}", params={"alt": "media"},
                              stream=True, timeout=600) as answer:
                assert answer.status_code == 200
                for chunk in answer.iter_content(1 << 20):
                    digest.update(chunk)
            return digest.hexdigest()

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            assert list(pool.map(download, ["large/a", "large/b"])) == [expected, expected]
        # A compose of the two and a copy within the bucket go through spools too (two 499.5 MB sources once
        # peaked at 2.96 GB).
        composed = server.request("POST", f"/storage/v1/b/{server.name}/o/large%2Fab/compose", timeout=600,
                                  json={"sourceObjects": [{"name": "large/a"}, {"name": "large/b"}]})
        assert composed.status_code == 200 and composed.json()["size"] == str(2 * size), composed.text
        token = None
        for _ in range(20):
            rewritten = server.request("POST", f"/storage/v1/b/{server.name}/o/large%2Fa/rewriteTo/b/{server.name}/o/large%2Fc",
                                       params={"rewriteToken": token} if token else {}, timeout=600)
            assert rewritten.status_code == 200, rewritten.text
            if rewritten.json()["done"]:
                break
            token = rewritten.json()["rewriteToken"]
        assert rewritten.json()["done"] is True
        assert download("large/c") == expected
        both = hashlib.md5()
        with requests.get(f"{server.url}/storage/v1/b/{server.name}/o/large%2Fab", params={"alt": "media"}, stream=True,
                          timeout=600) as answer:
            for chunk in answer.iter_content(1 << 20):
                both.update(chunk)
        assert both.hexdigest() == hashlib.md5(piece * 400).hexdigest()
        peak = memory.stop()
        print(f"peak anonymous RSS of storesh serve: {peak >> 10} MiB for two {size >> 20} MiB objects at once")
        assert peak < 128 << 10, f"peak anonymous RSS {peak} KiB for two {size >> 20} MiB objects"
    finally:
        assert server.stop()[0] == 0


def read_calls(pid):
    """How many read calls (read, pread and the like) the process has made: the kernel's count in /proc/PID/io."""
    with open(f"/proc/{pid}/io") as counters:
        return int(re.search(r"syscr:\s+(\d+)", counters.read()).group(1))


def test_a_range_far_into_a_large_object_costs_what_a_range_at_its_start_does(tmp_path):
    """A large object's content is a chain of pages in the bucket file, which a read from an offset walks from its
    start: 1 MiB at 63 MiB into a 64 MiB object made a read call for each of the 16,000 pages before it where 1 MiB at
    its start made 2. Served reads go through a memory map, so the walk costs no read call: the far range takes no
    more read calls than the near one, give or take the server's own. The map holds the file, not its log: the
    upload is folded into the file first (serve's commits fold the log as readers allow; here it must be done before
    the measure, not whenever that is)."""
    server = Server(tmp_path, tmp_path / "ranges.bucket", extra=["--max-object-size", "128"])
    content = os.urandom(64 << 20)
    try:
        uploaded = server.session.post(f"{server.url}/upload/storage/v1/b/{server.name}/o",
                                       params={"uploadType": "media", "name": "big.bin"}, data=content, timeout=120)
        assert uploaded.status_code == 200, uploaded.text
        with sqlite3.connect(tmp_path / "ranges.bucket", timeout=30) as folding:
            busy, _, _ = folding.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "the upload could not be folded into the bucket file"

        def range_at(offset):
            before = read_calls(server.process.pid)
            answer = server.session.get(f"{server.url}/storage/v1/b/{server.name}/o/big.bin", params={"alt": "media"},
                                        headers={"Range": f"bytes={offset}-{offset + (1 << 20) - 1}"}, timeout=60)
            assert answer.status_code == 206 and answer.content == content[offset:offset + (1 << 20)]
            return read_calls(server.process.pid) - before

        # Each reading connection maps the file on its first read: every one of them has read once first.
        for _ in range(8):
            range_at(0)
        near = range_at(0)
        far = range_at(63 << 20)
        assert far <= near + 200, f"{far} read calls for 1 MiB at 63 MiB, {near} for 1 MiB at 0"
    finally:
        assert server.stop()[0] == 0


def batch_body(parts):
    lines = []
    for index, (method, path) in enumerate(parts):
        lines += ["--B", "Content-Type: application/http", f"Content-ID: <{index}>", "", f"{method} {path} HTTP/1.1", "", ""]
    return ("\r\n".join(lines) + "\r\n--B--\r\n").encode()


def test_a_batch_holds_json_metadata_requests_only(server):
    assert server.request("POST", v0_object(server, "keep.txt"), data=b"kept").status_code == 200
    body = batch_body([("POST", "/internal/reset"), ("GET", f"/storage/v1/b/{server.name}/o/keep.txt?alt=media"),
                       ("GET", f"/download/storage/v1/b/{server.name}/o/keep.txt?alt=media"),
                       ("PUT", "/internal/setRules"), ("GET", f"/storage/v1/b/{server.name}/o/keep.txt")])
    answer = server.request("POST", "/batch/storage/v1", data=body, headers={"Content-Type": "multipart/mixed; boundary=B"})
    assert answer.status_code == 200
    statuses = re.findall(rb"HTTP/1.1 (\d+)", answer.content)
    assert statuses == [b"400", b"400", b"400", b"400", b"200"], answer.content[:2000]
    # A method that is not one, and a Content-ID with a bare CR (it would be written into the answer's headers).
    odd = ("--B\r\nContent-Type: application/http\r\nContent-ID: <1>\r\n\r\n"
           f"G<T /storage/v1/b/{server.name}/o/keep.txt HTTP/1.1\r\n\r\n\r\n--B--\r\n").encode()
    answer = server.request("POST", "/batch/storage/v1", data=odd, headers={"Content-Type": "multipart/mixed; boundary=B"})
    assert re.findall(rb"HTTP/1.1 (\d+)", answer.content) == [b"400"] and b"HTTP method" in answer.content, answer.content[:2000]
    injected = ("--B\r\nContent-Type: application/http\r\nContent-ID: <1\rX-Injected: yes>\r\n\r\n"
                f"GET /storage/v1/b/{server.name}/o/keep.txt HTTP/1.1\r\n\r\n\r\n--B--\r\n").encode()
    answer = server.request("POST", "/batch/storage/v1", data=injected, headers={"Content-Type": "multipart/mixed; boundary=B"})
    assert answer.status_code == 400 and "control character" in answer.text and b"\rX-Injected" not in answer.content
    assert answers(server)
    assert server.request("GET", v0_object(server, "keep.txt"), params={"alt": "media"}).content == b"kept"


# Browser-reachable administration ---------------------------------------------------------------------------------


def test_a_page_on_another_origin_cannot_use_the_server(server):
    assert server.request("POST", v0_object(server, "keep.txt"), data=b"kept").status_code == 200
    evil = {"Origin": "https://evil.example"}
    # The cross-origin POST a hostile page can send without asking first: refused, nothing emptied.
    reset = server.request("POST", "/internal/reset", headers={**evil, "Content-Type": "text/plain"})
    assert reset.status_code == 403 and "Access-Control-Allow-Origin" not in reset.headers
    assert "--cors https://evil.example" in reset.json()["error"]["message"]
    assert set_rules(server, rules_with("false")).status_code == 200  # without an Origin: a test library, allowed
    assert set_rules(server, rules_with("true")).status_code == 200
    preflight = server.request("OPTIONS", "/internal/setRules", headers={**evil, "Access-Control-Request-Method": "PUT"})
    assert preflight.status_code == 403 and "Access-Control-Allow-Origin" not in preflight.headers
    assert server.request("GET", v0_object(server, "keep.txt"), params={"alt": "media"}).content == b"kept"
    # An app under development on localhost or 127.0.0.1, any port, is answered.
    for origin in ["http://localhost:5173", "http://127.0.0.1:3000", "https://localhost"]:
        allowed = server.request("GET", v0_object(server, "keep.txt"), headers={"Origin": origin})
        assert allowed.status_code == 200 and allowed.headers["Access-Control-Allow-Origin"] == origin


def test_a_dns_name_rebound_to_loopback_reaches_nothing(server):
    rebound = server.request("POST", "/internal/reset", headers={"Host": "evil.example:80"})
    assert rebound.status_code == 403 and "--allow-host evil.example" in rebound.json()["error"]["message"]
    for host in ["localhost", "127.0.0.1", "[::1]"]:
        port = server.url.rsplit(":", 1)[1]
        assert server.request("GET", "/v0/", headers={"Host": f"{host}:{port}"}).status_code == 200
    # Upload URLs name the host the client reached, once it is one the server answers to.
    start = server.request("POST", v0_object(server, "u"), data="{}", headers={
        **OWNER, "Host": "localhost:" + server.url.rsplit(":", 1)[1], "X-Goog-Upload-Protocol": "resumable",
        "X-Goog-Upload-Command": "start"})
    assert start.headers["X-Goog-Upload-URL"].startswith("http://localhost:")


def test_cors_and_allow_host_let_named_origins_and_hosts_in(tmp_path):
    server = Server(tmp_path, tmp_path / "named.bucket", extra=["--cors", "https://app.example", "--allow-host", "storage.test"])
    try:
        ok = server.request("GET", "/v0/", headers={"Origin": "https://app.example", "Host": "storage.test:9199"})
        assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert server.request("GET", "/v0/", headers={"Origin": "https://other.example"}).status_code == 403
    finally:
        assert server.stop()[0] == 0
    status, _, err = harness.storesh(tmp_path, "serve", "--cors", "app.example/path", "--port", "0")
    assert status != 0 and b"--cors takes an origin" in err


# Smaller ----------------------------------------------------------------------------------------------------------


def test_a_stalled_request_is_closed_after_the_idle_timeout(tmp_path):
    server = Server(tmp_path, tmp_path / "idle.bucket", extra=["--idle-timeout", "1"])
    try:
        started = time.monotonic()
        # Half a request's header, then nothing: the server closes the connection on its own.
        answer = raw_request(server, "GET /v0/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ", read_timeout=30)
        assert answer == b"" and time.monotonic() - started < 20
        assert answers(server)
    finally:
        assert server.stop()[0] == 0


def test_claims_keep_their_token_types(server):
    load_rules(server, rules_with("request.auth != null && request.auth.token.admin == true && request.auth.token.role == '7'"))
    path = v0_object(server, "typed")
    as_strings = {"Authorization": "Firebase " + emulator_token("ada", admin="true", role="7")}
    assert server.request("POST", path, data=b"x", headers=as_strings).status_code == 403
    typed = {"Authorization": "Firebase " + emulator_token("ada", admin=True, role="7")}
    assert server.request("POST", path, data=b"x", headers=typed).status_code == 200
    number = {"Authorization": "Firebase " + emulator_token("ada", admin=True, role=7)}
    assert server.request("POST", path, data=b"x", headers=number).status_code == 403


def test_bodies_that_cannot_be_read_are_a_400(server):
    path = f"/upload/storage/v1/b/{server.name}/o?uploadType=media&name=bad"
    # A malformed chunk size.
    answer = raw_request(server, f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"zz\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    # A coding the server does not undo: refused, not stored as it came.
    answer = raw_request(server, f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", b"3\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 501") or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    # A body cut short: the client closes its side after half of what it announced.
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as connection:
        connection.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n".encode() + b"x" * 50)
        connection.shutdown(socket.SHUT_WR)
        answer = connection.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert server.request("GET", f"/storage/v1/b/{server.name}/o/bad").status_code == 404
    assert answers(server)


def test_an_update_may_not_change_read_only_properties(server):
    assert server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "media", "name": "ro"},
                          data=b"abc").status_code == 200
    path = f"/storage/v1/b/{server.name}/o/ro"
    current = server.request("GET", path).json()
    for key, value in [("size", "999"), ("md5Hash", "1B2M2Y8AsgTpgAmY7PhCfg=="), ("generation", "1"), ("name", "other")]:
        refused = server.request("PATCH", path, json={key: value})
        assert refused.status_code == 400 and f"'{key}' is read-only" in refused.json()["error"]["message"], (key, refused.text)
    # Sent back unchanged (a whole resource read earlier), they pass.
    assert server.request("PATCH", path, json={"size": current["size"], "cacheControl": "no-cache"}).status_code == 200
    v0 = server.request("PATCH", v0_object(server, "ro"), json={"size": "1"}, headers=OWNER)
    assert v0.status_code == 400 and "'size' is read-only" in v0.json()["error"]["message"]
    assert server.request("GET", path).json()["size"] == "3"


def test_a_negative_generation_condition_is_a_400(server):
    assert server.request("POST", f"/upload/storage/v1/b/{server.name}/o",
                          params={"uploadType": "media", "name": "g", "ifGenerationMatch": "-1"}, data=b"x").status_code == 400
    assert server.request("GET", f"/storage/v1/b/{server.name}/o/g").status_code == 404


def test_headers_past_the_limit_are_refused_with_a_message(server):
    answer = raw_request(server, "GET /v0/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "a" * (100 << 10) + "\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), head[:200]
    assert b"headers are larger" in body, answer[:400]
    answer = raw_request(server, "NOT-HTTP\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and b"could not be read as HTTP/1.1" in answer, answer[:400]
    assert answers(server)
