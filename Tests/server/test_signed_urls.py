"""Rule V7: V4 signed URLs made by the official client (`blob.generate_signed_url(version="v4")` with a service
account's key) work against `storesh serve` for GET and PUT until they expire, and are refused after with the XML
API's ExpiredToken; with the key given to serve (--signing-key), a URL signed for one method, object or query is
refused for any other (SignatureDoesNotMatch)."""
import datetime
import json
import re
import urllib.parse

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.oauth2 import service_account

from serving import BUCKET, Server


def key_file(directory):
    """A service account's key file, as the console makes one (the key is the test's own, made now)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    info = {"type": "service_account", "project_id": "demo-app", "private_key_id": "k1", "private_key": pem,
            "client_email": "signer@demo-app.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": "https://oauth2.googleapis.com/token"}
    path = directory / "signer.json"
    path.write_text(json.dumps(info))
    return path, service_account.Credentials.from_service_account_info(info)


@pytest.fixture
def signing(tmp_path, monkeypatch):
    path, credentials = key_file(tmp_path)
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--signing-key", str(path)))
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    monkeypatch.setenv("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    client = storage.Client(project="demo-app", credentials=AnonymousCredentials())
    yield server, client, credentials
    status, err = server.stop()
    assert status == 0, err


def sign(blob, credentials, method="GET", minutes=5, **extra):
    return blob.generate_signed_url(version="v4", expiration=datetime.timedelta(minutes=minutes), method=method,
                                    credentials=credentials, **extra)


def test_a_signed_url_reads_and_writes_until_it_expires(signing):
    server, client, credentials = signing
    blob = client.bucket(BUCKET).blob("reports/2026 q3.pdf")
    blob.upload_from_string(b"%PDF-1.7 report", content_type="application/pdf")
    url = sign(blob, credentials)
    assert url.startswith(server.url + f"/{BUCKET}/reports/2026%20q3.pdf?")
    answer = requests.get(url, timeout=30)
    assert answer.status_code == 200 and answer.content == b"%PDF-1.7 report"
    # Content stays inert however it is reached (rule V8).
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    upload = client.bucket(BUCKET).blob("uploads/new.txt")
    put_url = sign(upload, credentials, method="PUT", content_type="text/plain")
    answer = requests.put(put_url, data=b"put by URL", headers={"Content-Type": "text/plain"}, timeout=30)
    assert answer.status_code == 200, answer.text
    upload.reload()
    assert upload.download_as_bytes() == b"put by URL" and upload.content_type == "text/plain"


def test_a_signed_url_is_refused_after_it_expires(signing):
    server, client, credentials = signing
    blob = client.bucket(BUCKET).blob("old.txt")
    blob.upload_from_string(b"old")
    url = sign(blob, credentials)
    # The same URL, as if made two days ago (the server's clock is the real one: no waiting).
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)
    query["X-Goog-Date"] = past.strftime("%Y%m%dT%H%M%SZ")
    query["X-Goog-Credential"] = re.sub(r"/\d{8}/", "/" + past.strftime("%Y%m%d") + "/", query["X-Goog-Credential"])
    expired = requests.get(parts._replace(query=urllib.parse.urlencode(query)).geturl(), timeout=30)
    assert expired.status_code == 400 and "<Code>ExpiredToken</Code>" in expired.text, expired.text
    assert expired.headers["Content-Type"].startswith("application/xml")


def test_with_the_key_a_url_signed_for_one_thing_does_nothing_else(signing):
    server, client, credentials = signing
    blob = client.bucket(BUCKET).blob("private.txt")
    blob.upload_from_string(b"private")
    url = sign(blob, credentials)
    # Another method: a GET URL cannot overwrite.
    assert requests.put(url, data=b"overwritten", timeout=30).status_code == 403
    # Another object, or another expiry, on the same signature.
    other = client.bucket(BUCKET).blob("other.txt")
    other.upload_from_string(b"other")
    assert requests.get(url.replace("/private.txt?", "/other.txt?"), timeout=30).status_code == 403
    longer = re.sub(r"X-Goog-Expires=\d+", "X-Goog-Expires=604800", url)
    refused = requests.get(longer, timeout=30)
    assert refused.status_code == 403 and "SignatureDoesNotMatch" in refused.text
    # Another signer's URL.
    (server.home / "stranger").mkdir()
    _, stranger = key_file(server.home / "stranger")
    assert requests.get(sign(blob, stranger), timeout=30).status_code == 403
    assert blob.download_as_bytes() == b"private"
    assert requests.get(url, timeout=30).content == b"private"


def test_a_batch_refuses_signed_urls_and_the_rates_count_them(tmp_path, monkeypatch):
    """A signed GET or PUT inside a batch once ran (a GET answered 200 with no bytes, a PUT wrote); and signed URLs
    went past --read-rate and --write-rate."""
    path, credentials = key_file(tmp_path)
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--signing-key", str(path), "--read-rate", "2", "--write-rate", "2"))
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        client = storage.Client(project="demo-app", credentials=AnonymousCredentials())
        blob = client.bucket(BUCKET).blob("kept.txt")
        put_url = urllib.parse.urlsplit(sign(client.bucket(BUCKET).blob("written.txt"), credentials, method="PUT"))
        get_url = urllib.parse.urlsplit(sign(blob, credentials))
        lines = []
        for index, (method, url) in enumerate([("GET", get_url), ("PUT", put_url)]):
            lines += ["--B", "Content-Type: application/http", f"Content-ID: <{index}>", "",
                      f"{method} {url.path}?{url.query} HTTP/1.1", "", "body" if method == "PUT" else ""]
        body = ("\r\n".join(lines) + "\r\n--B--\r\n").encode()
        answer = server.request("POST", "/batch/storage/v1", data=body, headers={"Content-Type": "multipart/mixed; boundary=B"})
        assert answer.status_code == 200
        assert re.findall(rb"HTTP/1.1 (\d+)", answer.content) == [b"400", b"400"], answer.content[:2000]
        assert b"signed URL" in answer.content
        # At 2 writes and 2 reads a second, a burst of signed requests meets 429s with Retry-After.
        statuses = [requests.put(put_url.geturl(), data=b"x", timeout=30).status_code for _ in range(12)]
        assert 429 in statuses and 200 in statuses, statuses
        reads = [requests.get(get_url.geturl(), timeout=30) for _ in range(12)]
        assert any(r.status_code == 429 and r.headers.get("Retry-After") for r in reads), [r.status_code for r in reads]
    finally:
        status, err = server.stop()
    assert status == 0, err


def test_a_signed_url_to_nothing_answers_in_xml_naming_its_own_bucket_and_object(signing):
    server, client, credentials = signing
    url = sign(client.bucket(BUCKET).blob("nowhere/none.txt"), credentials)
    answer = requests.get(url, timeout=30)
    assert answer.status_code == 404 and answer.text.startswith("<?xml"), answer.text
    assert "<Code>NoSuchKey</Code>" in answer.text and f"{BUCKET}/nowhere/none.txt" in answer.text


@pytest.mark.parametrize("days, code", [(3, "ExpiredToken"), (-1, "RequestNotYetValid")])
def test_signed_urls_are_dated_and_expire_by_the_servers_clock(tmp_path, monkeypatch, days, code):
    """With serve --clock, a signed URL's date and expiry are checked against that clock, as a test that tries expiry
    needs: three days on, a five-minute URL made now has expired; a day back, it is dated ahead of the server."""
    path, credentials = key_file(tmp_path)
    clock = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--signing-key", str(path), "--clock", clock))
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
        monkeypatch.setenv("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        blob = storage.Client(project="demo-app", credentials=AnonymousCredentials()).bucket(BUCKET).blob("dated.txt")
        blob.upload_from_string(b"dated")
        answer = requests.get(sign(blob, credentials), timeout=30)
        assert answer.status_code == 400 and f"<Code>{code}</Code>" in answer.text, answer.text
    finally:
        status, err = server.stop()
        assert status == 0, err
