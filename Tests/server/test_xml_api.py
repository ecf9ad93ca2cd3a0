"""Rule V7: the XML API, path-style, beside the JSON API: V2 signed URLs and V4 POST policies made by the official
client and checked against the key serve was given; objects read, written and deleted at /BUCKET/OBJECT; a bucket
listed at /BUCKET; resumable uploads started by a signed POST; multipart uploads (initiate, parts, complete, abort,
list). Refusals are the XML API's <Error> documents, and a refused request writes nothing (issue 54)."""
import datetime
import time
import xml.etree.ElementTree as ElementTree

import pytest
import requests

from serving import BUCKET
from test_signed_urls import signing  # noqa: F401 (the fixture)

S3 = "{http://s3.amazonaws.com/doc/2006-03-01/}"
LISTING = "{http://doc.s3.amazonaws.com/2006-03-01}"


def error_code(answer):
    return ElementTree.fromstring(answer.content).findtext("Code")


def sign_v2(blob, credentials, method="GET", seconds=60, **extra):
    return blob.generate_signed_url(version="v2", expiration=int(time.time()) + seconds, method=method,
                                    credentials=credentials, **extra)


def test_v2_signed_urls_read_delete_and_start_resumable_uploads(signing):  # noqa: F811
    server, client, credentials = signing
    blob = client.bucket(BUCKET).blob("docs/résumé 2026.txt")
    blob.upload_from_string(b"hello", content_type="text/plain")
    url = sign_v2(blob, credentials, response_disposition="attachment; filename=cv.txt")
    answer = requests.get(url, timeout=30)
    assert answer.status_code == 200 and answer.content == b"hello"
    assert answer.headers["Content-Disposition"].startswith("attachment")
    # Signed for GET: neither another method nor another object.
    assert requests.delete(url, timeout=30).status_code == 403
    other = url.replace("docs/", "doc/")
    assert error_code(requests.get(other, timeout=30)) == "SignatureDoesNotMatch"
    # Expired.
    old = sign_v2(blob, credentials, seconds=-5)
    expired = requests.get(old, timeout=30)
    assert expired.status_code == 400 and error_code(expired) == "ExpiredToken"
    # A resumable upload started by a signed POST, then its bytes sent to the session's Location.
    upload = client.bucket(BUCKET).blob("uploads/big.bin")
    started = requests.post(sign_v2(upload, credentials, method="RESUMABLE"), headers={"x-goog-resumable": "start"}, timeout=30)
    assert started.status_code == 201, started.text
    assert requests.put(started.headers["Location"], data=b"x" * 1000, timeout=30).status_code == 200
    assert upload.download_as_bytes() == b"x" * 1000
    deleted = requests.delete(sign_v2(blob, credentials, method="DELETE"), timeout=30)
    assert deleted.status_code == 204 and not blob.exists()


def test_a_post_policy_upload_is_checked_field_by_field(signing):  # noqa: F811
    server, client, credentials = signing
    expiration = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(minutes=10)

    def policy(conditions=None, fields=None, name="forms/${filename}"):
        return client.generate_signed_post_policy_v4(
            BUCKET, name, expiration=expiration, credentials=credentials,
            conditions=conditions or [["starts-with", "$Content-Type", "text/"], ["content-length-range", 0, 100]],
            fields=fields or {"content-type": "text/plain", "x-goog-meta-source": "form"})

    good = policy()
    answer = requests.post(good["url"], data=good["fields"], files={"file": ("note.txt", b"from a form")}, timeout=30)
    assert answer.status_code == 204, answer.text
    stored = client.bucket(BUCKET).get_blob("forms/note.txt")
    assert stored.download_as_bytes() == b"from a form"
    assert stored.content_type == "text/plain" and stored.metadata == {"source": "form"}
    # A field the policy does not allow, a file past the length range, a field the API does not know, a field
    # changed after signing: refused, nothing written.
    refusals = [
        ({**good["fields"], "cache-control": "no-cache"}, b"x", 403),
        (good["fields"], b"x" * 101, 400),
        (policy(fields={"content-type": "text/plain", "x-goog-random": "1"})["fields"], b"x", 400),
        ({**good["fields"], "content-type": "text/html"}, b"x", 403),
    ]
    for fields, content, status in refusals:
        refused = requests.post(good["url"], data=fields, files={"file": ("refused.txt", content)}, timeout=30)
        assert refused.status_code == status, (fields, refused.text)
    assert client.bucket(BUCKET).get_blob("forms/refused.txt") is None
    # Signed by another key.
    from test_signed_urls import key_file
    _, stranger = key_file(server.home / "..")
    forged = client.generate_signed_post_policy_v4(BUCKET, "forms/forged.txt", expiration=expiration, credentials=stranger)
    refused = requests.post(forged["url"], data=forged["fields"], files={"file": ("f", b"x")}, timeout=30)
    assert refused.status_code == 403 and error_code(refused) == "SignatureDoesNotMatch"


def test_objects_and_listings_at_their_xml_paths(signing):  # noqa: F811
    server, client, _ = signing
    base = f"{server.url}/{BUCKET}"
    for name in ["a.txt", "dir/b.txt", "dir/c.txt", "e.txt"]:
        put = requests.put(f"{base}/{name}", data=name.encode(), headers={"Content-Type": "text/plain", "x-goog-meta-k": "v"}, timeout=30)
        assert put.status_code == 200 and put.headers["ETag"].startswith('"')
    assert client.bucket(BUCKET).get_blob("dir/b.txt").metadata == {"k": "v"}
    assert requests.head(f"{base}/dir/b.txt", timeout=30).headers["x-goog-meta-k"] == "v"
    assert error_code(requests.get(base, params={"list-type": "3"}, timeout=30)) == "InvalidArgument"
    # A write under a condition that fails is refused, the object untouched.
    refused = requests.put(f"{base}/a.txt", data=b"new", headers={"x-goog-if-generation-match": "0"}, timeout=30)
    assert refused.status_code == 412 and requests.get(f"{base}/a.txt", timeout=30).content == b"a.txt"
    listing = ElementTree.fromstring(requests.get(base, params={"delimiter": "/"}, timeout=30).content)
    assert [k.text for k in listing.iter(LISTING + "Key")] == ["a.txt", "e.txt"]
    assert [p.text for p in listing.iter(LISTING + "Prefix")][1:] == ["dir/"]
    seen, token = [], None
    while True:
        params = {"list-type": "2", "max-keys": "3"} | ({"continuation-token": token} if token else {})
        page = ElementTree.fromstring(requests.get(base, params=params, timeout=30).content)
        seen += [k.text for k in page.iter(LISTING + "Key")]
        token = page.findtext(LISTING + "NextContinuationToken")
        if not token:
            break
    assert seen == ["a.txt", "dir/b.txt", "dir/c.txt", "e.txt"]
    after = ElementTree.fromstring(requests.get(base, params={"marker": "dir/b.txt"}, timeout=30).content)
    assert [k.text for k in after.iter(LISTING + "Key")] == ["dir/c.txt", "e.txt"]
    assert requests.delete(f"{base}/e.txt", timeout=30).status_code == 204
    missing = requests.get(f"{base}/e.txt", timeout=30)
    assert missing.status_code == 404 and error_code(missing) == "NoSuchKey"
    assert error_code(requests.get(f"{server.url}/no-such-bucket/x", timeout=30)) == "NoSuchBucket"


def test_a_multipart_upload_lands_whole_or_not_at_all(signing):  # noqa: F811
    server, client, _ = signing
    url = f"{server.url}/{BUCKET}/parts/whole.bin"
    started = requests.post(url + "?uploads", headers={"Content-Type": "application/x-parts", "x-goog-meta-made": "mpu"}, timeout=30)
    upload_id = ElementTree.fromstring(started.content).findtext(S3 + "UploadId")
    pieces = {1: b"a" * (5 << 20), 2: b"b" * (5 << 20), 3: b"c" * 5}
    tags = {}
    for number in [3, 1, 2]:  # in any order, as a transfer manager sends them
        sent = requests.put(url, params={"partNumber": number, "uploadId": upload_id}, data=pieces[number], timeout=30)
        assert sent.status_code == 200 and "crc32c=" in sent.headers["x-goog-hash"]
        tags[number] = sent.headers["ETag"]
    listed = ElementTree.fromstring(requests.get(url, params={"uploadId": upload_id}, timeout=30).content)
    assert [p.text for p in listed.iter(S3 + "PartNumber")] == ["1", "2", "3"]
    assert (listed.findtext(S3 + "IsTruncated"), listed.findtext(S3 + "MaxParts")) == ("false", "1000")
    # Page by page, as the service pages them: max-parts, then part-number-marker from NextPartNumberMarker.
    first = ElementTree.fromstring(requests.get(url, params={"uploadId": upload_id, "max-parts": 2}, timeout=30).content)
    assert [p.text for p in first.iter(S3 + "PartNumber")] == ["1", "2"] and first.findtext(S3 + "IsTruncated") == "true"
    marker = first.findtext(S3 + "NextPartNumberMarker")
    rest = ElementTree.fromstring(requests.get(url, params={"uploadId": upload_id, "max-parts": 2, "part-number-marker": marker}, timeout=30).content)
    assert [p.text for p in rest.iter(S3 + "PartNumber")] == ["3"] and rest.findtext(S3 + "IsTruncated") == "false"
    assert rest.findtext(S3 + "PartNumberMarker") == "2" and rest.findtext(S3 + "NextPartNumberMarker") is None
    assert error_code(requests.get(url, params={"uploadId": upload_id, "max-parts": "-1"}, timeout=30)) == "InvalidArgument"
    assert client.bucket(BUCKET).get_blob("parts/whole.bin") is None  # nothing visible before completion

    def complete(order, tag=lambda n: tags[n]):
        body = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{tag(n)}</ETag></Part>" for n in order) + "</CompleteMultipartUpload>"
        return requests.post(url, params={"uploadId": upload_id}, data=body, timeout=30)

    assert error_code(complete([2, 1, 3])) == "InvalidPartOrder"
    assert error_code(complete([1, 2, 3], tag=lambda n: '"0000"')) == "InvalidPart"
    assert client.bucket(BUCKET).get_blob("parts/whole.bin") is None
    done = complete([1, 2, 3])
    assert done.status_code == 200, done.text
    blob = client.bucket(BUCKET).get_blob("parts/whole.bin")
    assert blob.download_as_bytes() == pieces[1] + pieces[2] + pieces[3]
    assert blob.content_type == "application/x-parts" and blob.metadata == {"made": "mpu"}
    # Completed: the upload is gone; an aborted one takes its parts with it.
    assert error_code(complete([1])) == "NoSuchUpload"
    other = ElementTree.fromstring(requests.post(url + "?uploads", timeout=30).content).findtext(S3 + "UploadId")
    listed = ElementTree.fromstring(requests.get(f"{server.url}/{BUCKET}", params={"uploads": ""}, timeout=30).content)
    assert [u.text for u in listed.iter(S3 + "UploadId")] == [other]
    small = requests.put(url, params={"partNumber": 1, "uploadId": other}, data=b"z", timeout=30).headers["ETag"]
    last = requests.put(url, params={"partNumber": 2, "uploadId": other}, data=b"y", timeout=30).headers["ETag"]
    # Every part but the last holds 5 MiB at least, as on the service.
    body = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{small}</ETag></Part>"
            f"<Part><PartNumber>2</PartNumber><ETag>{last}</ETag></Part></CompleteMultipartUpload>")
    assert error_code(requests.post(url, params={"uploadId": other}, data=body, timeout=30)) == "EntityTooSmall"
    assert requests.delete(url, params={"uploadId": other}, timeout=30).status_code == 204
    assert requests.get(url, params={"uploadId": other}, timeout=30).status_code == 404
