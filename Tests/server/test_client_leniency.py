"""Cloud Storage's leniency where the ecosystem's clients rely on it (issue 38, first slice): the requests below are
byte for byte what gsutil (apitools) and rclone (the Go client) send, which storesh serve refused before."""
import base64
import email.generator
import email.mime.multipart
import email.mime.nonmultipart
import hashlib
import io

import pytest

from serving import BUCKET  # the `server` fixture is conftest's


class RawPayloadGenerator(email.generator.BytesGenerator):
    """apitools' MultipartBytesGenerator: the payload written as it is (no line-ending changes)."""

    def _handle_text(self, msg):
        if msg._payload is not None:
            self.write(msg._payload)

    def _encode(self, s):
        return s.encode("ascii", "surrogateescape")

    _writeBody = _handle_text


def apitools_multipart(metadata_json, content, content_type):
    """A multipart/related body and Content-Type as apitools builds them for gsutil: LF line endings, MIME-Version
    headers, and the boundary quoted with Python's %r (single quotes)."""
    root = email.mime.multipart.MIMEMultipart("related")
    setattr(root, "_write_headers", lambda self: None)
    part = email.mime.nonmultipart.MIMENonMultipart("application", "json")
    part.set_payload(metadata_json)
    root.attach(part)
    part = email.mime.nonmultipart.MIMENonMultipart(*content_type.split("/"))
    part["Content-Transfer-Encoding"] = "binary"
    part.set_payload(content.decode("ascii", "surrogateescape"))  # the bytes, carried through the email package
    root.attach(part)
    output = io.BytesIO()
    RawPayloadGenerator(output, mangle_from_=False).flatten(root, unixfrom=False)
    return output.getvalue(), "multipart/related; boundary=%r" % root.get_boundary()


def test_a_gsutil_multipart_upload_with_lf_lines_and_a_single_quoted_boundary(server):
    content = bytes(range(256)) + b"\r\nline\nend"
    body, content_type = apitools_multipart('{"name": "up.bin", "contentType": "application/x-test"}', content,
                                            "application/x-test")
    assert "boundary='" in content_type and b"\r\n" not in body.split(b"binary\n\n")[0]
    answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "multipart"},
                            data=body, headers={"Content-Type": content_type})
    assert answer.status_code == 200, answer.text
    resource = answer.json()
    assert resource["name"] == "up.bin" and resource["contentType"] == "application/x-test"
    assert resource["md5Hash"] == base64.b64encode(hashlib.md5(content).digest()).decode()
    downloaded = server.request("GET", f"/storage/v1/b/{BUCKET}/o/up.bin", params={"alt": "media"})
    assert downloaded.content == content


def test_a_whole_resource_sent_back_with_its_times_spelled_otherwise_is_not_a_change(server):
    """gsutil setmeta PATCHes the resource it read, its times written by Python (microseconds, +00:00)."""
    created = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "a.txt"},
                             data=b"a").json()

    def python_time(text):
        seconds, fraction = text[:-1].split(".")
        return f"{seconds}.{fraction.ljust(6, '0')}+00:00"

    resource = dict(created, timeCreated=python_time(created["timeCreated"]), updated=python_time(created["updated"]),
                    generation=int(created["generation"]), cacheControl="no-cache")
    answer = server.request("PATCH", f"/storage/v1/b/{BUCKET}/o/a.txt", json=resource)
    assert answer.status_code == 200, answer.text
    assert answer.json()["cacheControl"] == "no-cache"
    # A read-only property that really differs is still refused (rule M7).
    current = server.request("GET", f"/storage/v1/b/{BUCKET}/o/a.txt").json()
    moved = dict(current, timeCreated="2001-01-01T00:00:00.000000+00:00")
    refused = server.request("PATCH", f"/storage/v1/b/{BUCKET}/o/a.txt", json=moved)
    assert refused.status_code == 400 and "timeCreated" in refused.text


@pytest.mark.parametrize("body", [b"", b"null", b" null\n"])
def test_a_rewrite_or_copy_without_overrides_as_the_go_client_sends_it(server, body):
    """rclone's moveto: the Go client's rewrite carries no destination resource (an empty body, or null)."""
    server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "from.txt"},
                   data=b"moved", headers={"Content-Type": "text/plain"})
    for verb, target in [("rewriteTo", "rewritten.txt"), ("copyTo", "copied.txt")]:
        answer = server.request("POST", f"/storage/v1/b/{BUCKET}/o/from.txt/{verb}/b/{BUCKET}/o/{target}", data=body,
                                headers={"Content-Type": "application/json"})
        assert answer.status_code == 200, (verb, answer.text)
        downloaded = server.request("GET", f"/storage/v1/b/{BUCKET}/o/{target}", params={"alt": "media"})
        assert downloaded.content == b"moved"


def test_a_resumable_upload_in_chunks_as_the_go_client_sends_them(server):
    """rclone sync of a file larger than its chunk: the Go client POSTs each chunk with X-GUploader-No-308 and
    expects a 200 that says 308 in X-Http-Status-Code-Override (its HTTP stack takes a 308 for a redirect)."""
    started = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o",
                             params={"uploadType": "resumable", "name": "big.bin", "alt": "json", "prettyPrint": "false"},
                             json={"name": "big.bin"})
    assert started.status_code == 200, started.text
    session = started.headers["Location"]
    content = bytes(range(256)) * 8192  # 2 MiB
    half = len(content) // 2
    step = server.session.post(session, data=content[:half], timeout=30,
                               headers={"X-GUploader-No-308": "yes", "Content-Range": f"bytes 0-{half - 1}/*"})
    assert step.status_code == 200 and step.headers["X-Http-Status-Code-Override"] == "308", step.headers
    assert step.headers["Range"] == f"bytes=0-{half - 1}"
    # Without the header, the step is the protocol's own 308.
    asked = server.session.put(session, headers={"Content-Range": "bytes */*"}, timeout=30)
    assert asked.status_code == 308 and asked.headers["Range"] == f"bytes=0-{half - 1}"
    last = server.session.post(session, data=content[half:], timeout=30,
                               headers={"X-GUploader-No-308": "yes", "Content-Range": f"bytes {half}-{len(content) - 1}/{len(content)}"})
    assert last.status_code == 200 and "X-Http-Status-Code-Override" not in last.headers
    assert last.json()["size"] == str(len(content))
    assert server.request("GET", f"/storage/v1/b/{BUCKET}/o/big.bin", params={"alt": "media"}).content == content


def test_a_resumable_upload_that_fails_for_good_answers_the_same_when_asked_again_on_both_apis(server):
    """One upload session type, one policy on both APIs: a failure that sending again cannot mend (here a checksum)
    is the upload's final answer, and a client that asks again (a status query) gets it, not a session to resume."""
    start = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "resumable"},
                           json={"name": "json-api.bin"})
    assert start.status_code == 200, start.text
    location = start.headers["Location"]
    failed = server.session.put(location, data=b"abc", headers={"Content-Range": "bytes 0-2/3", "X-Goog-Hash": "crc32c=AAAAAA=="},
                                timeout=30)
    assert failed.status_code == 400 and "CRC32C" in failed.json()["error"]["message"], failed.text
    again = server.session.put(location, headers={"Content-Range": "bytes */3"}, timeout=30)
    assert (again.status_code, again.json()) == (400, failed.json())

    start = server.request("POST", f"/v0/b/{BUCKET}/o", params={"name": "v0-api.bin"},
                           headers={"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                    "Authorization": "Bearer owner"},
                           json={"name": "v0-api.bin", "crc32c": "AAAAAA=="})
    assert start.status_code == 200, start.text
    url = start.headers["X-Goog-Upload-URL"]
    failed = server.session.post(url, data=b"abc", headers={"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"},
                                 timeout=30)
    assert failed.status_code == 400 and failed.headers["X-Goog-Upload-Status"] == "final", failed.text
    again = server.session.post(url, headers={"X-Goog-Upload-Command": "query"}, timeout=30)
    assert (again.status_code, again.json()) == (400, failed.json())
    for name in ("json-api.bin", "v0-api.bin"):
        assert server.request("GET", server.object_path(name)).status_code == 404
