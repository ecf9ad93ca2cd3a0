"""Every number a client sends `storesh serve` at its extremes (issue 53): sizes, offsets, steps and counts in
headers, query parameters and tokens. Swift traps on an arithmetic overflow, which would end the server and every
upload in progress; each request here must get an answer of its own (a 2xx or a 4xx, never a 5xx) or, for a body
shorter than it declared, a closed connection, and the server must answer the next request."""
import socket
from urllib.parse import urlsplit

import pytest

from test_firebase_v0 import OWNER

EXTREMES = ["9223372036854775807", "9223372036854775808", "18446744073709551615", "-9223372036854775808", "-1", "0",
            "+5", "1e3", "00000000000000000000000000000000001"]


def answers(server):
    return server.request("GET", "/v0/", timeout=10).status_code == 200


def raw(server, method, target, headers, body=b""):
    """A request whose headers may lie about its body (Content-Length), sent as bytes; the answer's status, or None
    when the server closed the connection without one."""
    address = urlsplit(server.url)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {address.netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        connection.shutdown(socket.SHUT_WR)
        received = b""
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    if not received.startswith(b"HTTP/1.1 "):
        return None
    return int(received.split(b" ", 2)[1])


def not_a_server_error(status):
    return status is None or 200 <= status < 500


def upload(server, name, content):
    answer = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "media", "name": name},
                            data=content)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("step", EXTREMES)
def test_a_rewrite_continued_with_any_step_is_answered(server, step):
    upload(server, "source.bin", b"abc")
    first = server.request("POST", server.object_path("source.bin") + f"/rewriteTo/b/{server.name}/o/copy.bin",
                           params={"maxBytesRewrittenPerCall": "1"})
    assert first.status_code == 200 and first.json()["done"] is False, first.text
    token = first.json()["rewriteToken"]
    answer = server.request("POST", server.object_path("source.bin") + f"/rewriteTo/b/{server.name}/o/copy.bin",
                            params={"maxBytesRewrittenPerCall": step, "rewriteToken": token})
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 200 and answer.json()["done"]:
        assert server.request("GET", server.object_path("copy.bin"), params={"alt": "media"}).content == b"abc"
    assert answers(server)


@pytest.mark.parametrize("length", EXTREMES)
def test_a_json_api_chunk_declaring_any_length_is_answered(server, length):
    started = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "resumable"},
                             json={"name": "resumed.bin"})
    location = urlsplit(started.headers["Location"])
    first = server.request("PUT", location.path + "?" + location.query, data=b"a", headers={"Content-Range": "bytes 0-0/*"})
    assert first.status_code == 308, first.text
    status = raw(server, "PUT", location.path + "?" + location.query, {"Content-Length": length}, b"b")
    assert not_a_server_error(status), status
    assert answers(server)


@pytest.mark.parametrize("length", EXTREMES)
@pytest.mark.parametrize("offset", ["1", "0", "9223372036854775807", "-1"])
def test_a_v0_chunk_declaring_any_length_at_any_offset_is_answered(server, length, offset):
    started = server.request("POST", f"/v0/b/{server.name}/o", params={"name": "v0-resumed.bin"}, data="{}",
                             headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
    url = urlsplit(started.headers["X-Goog-Upload-URL"])
    target = url.path + "?" + url.query
    first = server.request("POST", target, data=b"a", headers={"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"})
    assert first.status_code == 200, first.text
    status = raw(server, "POST", target, {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": offset,
                                          "Content-Length": length}, b"b")
    assert not_a_server_error(status), status
    assert answers(server)


@pytest.mark.parametrize("length", EXTREMES)
def test_a_whole_upload_declaring_any_length_is_answered(server, length):
    # Signed out, under a new bucket's open rules: anyone can send these.
    status = raw(server, "POST", f"/v0/b/{server.name}/o?name=plain.bin", {"Content-Length": length}, b"b")
    assert not_a_server_error(status), status
    status = raw(server, "POST", f"/upload/storage/v1/b/{server.name}/o?uploadType=media&name=plain.bin",
                 {"Content-Length": length}, b"b")
    assert not_a_server_error(status), status
    assert answers(server)


@pytest.mark.parametrize("value", EXTREMES)
def test_query_numbers_and_ranges_at_their_extremes_are_answered(server, value):
    upload(server, "n.txt", b"0123456789")
    path = server.object_path("n.txt")
    for parameter in ["generation", "ifGenerationMatch", "ifMetagenerationMatch", "ifGenerationNotMatch",
                      "ifMetagenerationNotMatch"]:
        assert not_a_server_error(server.request("GET", path, params={parameter: value}).status_code), parameter
        assert not_a_server_error(server.request("PATCH", path, params={parameter: value}, json={}).status_code), parameter
    assert not_a_server_error(server.request("GET", f"/storage/v1/b/{server.name}/o", params={"maxResults": value}).status_code)
    assert not_a_server_error(server.request("GET", f"/v0/b/{server.name}/o", params={"maxResults": value}, headers=OWNER).status_code)
    for range_header in [f"bytes={value}-", f"bytes=0-{value}", f"bytes=-{value}", f"bytes={value}-{value}"]:
        answer = server.request("GET", path, params={"alt": "media"}, headers={"Range": range_header})
        assert not_a_server_error(answer.status_code), range_header
    assert answers(server)


def test_the_object_size_limit_is_what_a_bucket_file_holds_and_larger_bodies_are_refused_first(tmp_path):
    """An object's content is one SQLite value (at most 1,000,000,000 bytes): --max-object-size past it is capped,
    said once, and every upload path refuses a larger declared body with 413 before reading it (it once took the
    whole body, then answered 500 "string or blob too big")."""
    from serving import Server
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--max-object-size", "4096"))
    try:
        too_large = "1000000001"
        started = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "resumable"},
                                 json={"name": "big.bin"}, headers={"X-Upload-Content-Length": too_large})
        assert started.status_code == 413, started.text
        started = server.request("POST", f"/v0/b/{server.name}/o", params={"name": "big.bin"}, data="{}",
                                 headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                          "X-Goog-Upload-Header-Content-Length": too_large})
        assert started.status_code == 413, started.text
        assert raw(server, "POST", f"/upload/storage/v1/b/{server.name}/o?uploadType=media&name=big.bin",
                   {"Content-Length": too_large}, b"b") == 413
        assert raw(server, "POST", f"/v0/b/{server.name}/o?name=big.bin", {"Content-Length": too_large, "Authorization": "Firebase owner"},
                   b"b") == 413
        assert answers(server)
    finally:
        status, err = server.stop()
    assert status == 0, err
    assert "--max-object-size 4096 MiB is more than a bucket file holds" in err and "1,000,000,000 bytes" in err
