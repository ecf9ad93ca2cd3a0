"""Bad input to `storesh serve` (rule V4): each request of the catalogue gets the right 4xx, an error body in its
API's shape with a message naming what was wrong, and leaves the bucket file exactly as it was; the server goes on
serving. One server serves the whole catalogue, so an entry that changed anything would be seen by the next check."""
import base64
import json
import re

import http.client

import pytest

import harness
from serving import Server
from test_firebase_v0 import RULES, emulator_token, load_rules

LIMIT_MIB = 1
BOUNDARY = "b0undary"


def multipart(metadata, content, boundary=BOUNDARY, parts=2):
    body = f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{metadata}\r\n".encode()
    if parts == 2:
        body += f"--{boundary}\r\nContent-Type: text/plain\r\n\r\n".encode() + content + b"\r\n"
    return body + f"--{boundary}--".encode()


def token(payload, header=b'{"alg":"none"}'):
    encode = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    return "Firebase " + encode(header) + "." + encode(payload) + "."


MULTIPART = {"Content-Type": f"multipart/related; boundary={BOUNDARY}"}
UPLOAD = "/upload/storage/v1/b/{bucket}/o"
OBJECT = "/storage/v1/b/{bucket}/o/a%2Fone.txt"
V0 = "/v0/b/{bucket}/o"
V0_OBJECT = "/v0/b/{bucket}/o/a%2Fone.txt"
BOB = {"Authorization": "Firebase " + emulator_token("bob")}
OWNER = {"Authorization": "Firebase owner"}

# (name, method, path, keyword arguments of the request (`{gcs_session}` / `{v0_session}` in a path is an
# upload started for the entry), status, words the message holds)
CATALOGUE = [
    # Bodies that are not what they claim to be.
    ("malformed JSON", "PATCH", OBJECT, {"data": b'{"contentType": '}, 400, "is not valid JSON"),
    ("JSON that is not an object", "PATCH", OBJECT, {"data": b'["contentType"]'}, 400, "must be a JSON object"),
    ("unknown property", "PATCH", OBJECT, {"json": {"colour": "red"}}, 400, 'Unknown name "colour"'),
    ("number as a property value", "PATCH", OBJECT, {"json": {"contentType": 7}}, 400, "must be a string"),
    ("number as a custom value", "PATCH", OBJECT, {"json": {"metadata": {"k": 1}}}, 400, "must be a string"),
    ("custom metadata not a map", "PATCH", OBJECT, {"json": {"metadata": "k=v"}}, 400, "object of strings"),
    ("property storesh does not keep", "PATCH", OBJECT, {"json": {"kmsKeyName": "projects/p/keys/k"}}, 400, "not supported"),
    ("a retention without its time", "PATCH", OBJECT, {"json": {"retention": {"mode": "Locked"}}}, 400, "retainUntilTime"),
    ("a retention of another mode", "PATCH", OBJECT, {"json": {"retention": {"mode": "Forever", "retainUntilTime": "2030-01-01T00:00:00Z"}}},
     400, "Unlocked or Locked"),
    ("a negative generation", "GET", OBJECT + "?generation=-1", {}, 400, "zero or more"),
    ("a negative source generation", "POST", OBJECT + "/rewriteTo/b/{bucket}/o/copy?sourceGeneration=-5", {"json": {}}, 400, "zero or more"),
    ("a storage class changed by a patch", "PATCH", OBJECT, {"json": {"storageClass": "NEARLINE"}}, 400, "rewrite"),
    ("a custom time that is no time", "PATCH", OBJECT, {"json": {"customTime": "soon"}}, 400, "RFC 3339"),
    ("a hold that is no boolean", "PATCH", OBJECT, {"json": {"temporaryHold": "yes"}}, 400, "true or false"),
    ("a context that is no object", "PATCH", OBJECT, {"json": {"contexts": {"custom": {"k": "v"}}}}, 400, "value"),
    ("a customer key without its hash", "GET", OBJECT + "?alt=media",
     {"headers": {"x-goog-encryption-algorithm": "AES256", "x-goog-encryption-key": "A" * 43 + "="}}, 400, "key-sha256"),
    ("custom metadata over 8 KiB", "PATCH", OBJECT, {"json": {"metadata": {"big": "x" * 9000}}}, 400, "8192 bytes"),
    ("empty custom key", "PATCH", OBJECT, {"json": {"metadata": {"": "v"}}}, 400, "must not be empty"),
    ("JSON body over the limit", "PATCH", OBJECT, {"data": b'{"metadata":{"k":"' + b"x" * (3 << 20) + b'"}}'}, 413,
     "larger than"),
    # URLs.
    ("bad percent-encoding in a name", "GET", "/storage/v1/b/{bucket}/o/a%zzb", {}, 400, "Invalid percent-encoding"),
    ("percent-encoded bytes that are not UTF-8", "GET", "/storage/v1/b/{bucket}/o/a%FF", {}, 400, "not UTF-8"),
    ("bad percent-encoding in the query", "GET", "/storage/v1/b/{bucket}/o?prefix=%4", {}, 400,
     "Invalid percent-encoding in the query parameter 'prefix'"),
    ("a query parameter given twice", "GET", "/storage/v1/b/{bucket}/o?prefix=a&prefix=b", {}, 400, "more than once"),
    ("name over 1024 bytes", "POST", UPLOAD + "?uploadType=media&name=" + "n" * 1025, {"data": b"x"}, 400,
     "names are at most 1024 bytes"),
    ("name with a line feed", "POST", UPLOAD + "?uploadType=media&name=a%0Ab", {"data": b"x"}, 400,
     "carriage return or line feed"),
    ("name with a carriage return", "GET", "/storage/v1/b/{bucket}/o/a%0Db", {}, 400, "carriage return or line feed"),
    ("no such endpoint", "GET", "/storage/v2/nothing", {}, 404, "no endpoint"),
    ("a bucket no one wrote to", "GET", "/storage/v1/b/someone-else/o", {}, 404, "does not exist"),
    ("a bucket name that is no bucket name", "POST", "/upload/storage/v1/b/Not..A.Bucket/o",
     {"params": {"uploadType": "media", "name": "x"}, "data": b"x"}, 400, "Invalid bucket name"),
    ("a bucket name that climbs out", "POST", "/upload/storage/v1/b/..%2F..%2Fetc/o",
     {"params": {"uploadType": "media", "name": "x"}, "data": b"x"}, 400, "Invalid bucket name"),
    ("method not allowed on the list", "DELETE", "/storage/v1/b/{bucket}/o", {}, 405, "not allowed"),
    ("method not allowed on a download", "PATCH", "/download/storage/v1/b/{bucket}/o/a%2Fone.txt", {}, 405,
     "not allowed"),
    ("method not allowed on an object", "POST", OBJECT, {}, 405, "not allowed"),
    # Query parameters.
    ("maxResults of zero", "GET", "/storage/v1/b/{bucket}/o?maxResults=0", {}, 400, "must be positive"),
    ("maxResults not a number", "GET", "/storage/v1/b/{bucket}/o?maxResults=ten", {}, 400, "is not a whole number"),
    ("garbled page token", "GET", "/storage/v1/b/{bucket}/o?pageToken=garbage", {}, 400, "Invalid page token"),
    ("delimiter other than /", "GET", "/storage/v1/b/{bucket}/o?delimiter=-", {}, 400, "delimiter '/' only"),
    ("ifGenerationMatch not a number", "DELETE", OBJECT + "?ifGenerationMatch=latest", {}, 400, "ifGenerationMatch"),
    ("failed precondition", "DELETE", OBJECT + "?ifGenerationMatch=1", {}, 412, "pre-conditions you specified"),
    ("range past the end", "GET", OBJECT + "?alt=media", {"headers": {"Range": "bytes=500-"}}, 416, "not satisfiable"),
    # Uploads.
    ("upload without a name", "POST", UPLOAD + "?uploadType=media", {"data": b"x"}, 400, "Required parameter: name"),
    ("upload without uploadType", "POST", UPLOAD + "?name=x", {"data": b"x"}, 400, "Required parameter: uploadType"),
    ("unknown uploadType", "POST", UPLOAD + "?uploadType=chunked&name=x", {"data": b"x"}, 400, "Invalid uploadType"),
    ("object over the limit", "POST", UPLOAD + "?uploadType=media&name=big", {"data": b"x" * ((LIMIT_MIB << 20) + 1)},
     413, "larger than"),
    ("multipart without a boundary", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m"}', b"x"), "headers": {"Content-Type": "multipart/related"}}, 400, "no boundary"),
    ("multipart that is not multipart", "POST", UPLOAD + "?uploadType=multipart",
     {"data": b'{"name":"m"}', "headers": {"Content-Type": "application/json"}}, 400, "must be multipart/related"),
    ("multipart with one part", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m"}', b"", parts=1), "headers": MULTIPART}, 400, "exactly two parts"),
    ("multipart cut short", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m"}', b"x")[:-20], "headers": MULTIPART}, 400, "cut short"),
    ("multipart with a wrong MD5", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m","md5Hash":"XUFAKrxLKna5cZ2REBfFkg=="}', b"not hello"), "headers": MULTIPART},
     400, "doesn't match calculated MD5"),
    ("multipart with a wrong CRC32C", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m","crc32c":"AAAAAA=="}', b"x"), "headers": MULTIPART}, 400,
     "doesn't match calculated CRC32C"),
    ("multipart with a malformed MD5", "POST", UPLOAD + "?uploadType=multipart",
     {"data": multipart('{"name":"m","md5Hash":"abc"}', b"x"), "headers": MULTIPART}, 400, "16-byte MD5"),
    ("multipart whose names differ", "POST", UPLOAD + "?uploadType=multipart&name=one",
     {"data": multipart('{"name":"two"}', b"x"), "headers": MULTIPART}, 400, "differ"),
    ("chunk of an unknown upload", "PUT", UPLOAD + "?uploadType=resumable&upload_id=0123456789abcdef",
     {"data": b"x", "headers": {"Content-Range": "bytes 0-0/1"}}, 404, "No such upload"),
    ("garbled Content-Range", "PUT", UPLOAD + "?uploadType=resumable&upload_id={gcs_session}",
     {"data": b"x", "headers": {"Content-Range": "0-0/1"}}, 400, "Invalid Content-Range"),
    ("Content-Range longer than the chunk", "PUT", UPLOAD + "?uploadType=resumable&upload_id={gcs_session}",
     {"data": b"xy", "headers": {"Content-Range": "bytes 0-9/10"}}, 400, "announces 10 bytes"),
    ("Content-Range past what was received", "PUT", UPLOAD + "?uploadType=resumable&upload_id={gcs_session}",
     {"data": b"x", "headers": {"Content-Range": "bytes 5-5/10"}}, 400, "starts at byte 5"),
    ("Content-Range with another size", "PUT", UPLOAD + "?uploadType=resumable&upload_id={gcs_session}",
     {"data": b"x", "headers": {"Content-Range": "bytes 0-0/11"}}, 400, "started for 10"),
    ("announced size not a number", "POST", UPLOAD + "?uploadType=resumable&name=r",
     {"json": {}, "headers": {"X-Upload-Content-Length": "ten"}}, 400, "X-Upload-Content-Length"),
    # The v0 API: tokens, listing, uploads.
    ("unknown authorization scheme", "GET", V0_OBJECT, {"headers": {"Authorization": "Basic YWRhOnB3"}}, 401,
     "must be 'Firebase TOKEN'"),
    ("garbled token", "GET", V0_OBJECT, {"headers": {"Authorization": "Firebase not-a-jwt"}}, 401, "three dot-separated"),
    ("token whose payload is not base64url", "GET", V0_OBJECT, {"headers": {"Authorization": "Firebase a.%%%.b"}}, 401,
     "not base64url"),
    ("token whose payload is not JSON", "GET", V0_OBJECT, {"headers": {"Authorization": token(b"hello")}}, 401,
     "not a JSON object"),
    ("token that names no user", "GET", V0_OBJECT, {"headers": {"Authorization": token(b'{"sub": 42}')}}, 401,
     "names no user"),
    ("forged token of a user called owner", "DELETE", V0_OBJECT,
     {"headers": {"Authorization": token(b'{"user_id": "owner"}')}}, 403, "does not have permission"),
    ("another user's object", "DELETE", "/v0/b/{bucket}/o/users%2Fada%2Fa.txt", {"headers": BOB}, 403,
     "does not have permission"),
    ("tokens managed by a user", "POST", V0_OBJECT + "?create_token=true", {"headers": BOB}, 403,
     "Missing admin credentials"),
    ("create_token not true", "POST", V0_OBJECT + "?create_token=yes", {"headers": OWNER}, 400, "must be 'true'"),
    ("v0 prefix without its slash", "GET", V0 + "?prefix=a&delimiter=/", {"headers": OWNER}, 400,
     "ends? with a single /"),
    ("v0 maxResults over 1000", "GET", V0 + "?prefix=&delimiter=/&maxResults=1001", {"headers": OWNER}, 400,
     "Argument 'maxResults' must be between 1 and 1000 inclusive."),
    ("v0 page token of another folder", "GET", V0 + "?prefix=users/&delimiter=/&pageToken={root_token}",
     {"headers": OWNER}, 400, "Invalid page token"),
    ("v0 upload command without a start", "POST", V0 + "?name=r",
     {"data": b"x", "headers": {**OWNER, "X-Goog-Upload-Command": "upload"}}, 400, "starts with X-Goog-Upload-Command: start"),
    ("v0 unknown upload protocol", "POST", V0 + "?name=r",
     {"data": b"x", "headers": {**OWNER, "X-Goog-Upload-Protocol": "carrier-pigeon"}}, 400, "Unknown X-Goog-Upload-Protocol"),
    ("v0 finalize before the last byte", "POST", V0 + "?upload_id={v0_session}&upload_protocol=resumable",
     {"data": b"", "headers": {"X-Goog-Upload-Command": "finalize"}}, 400, "cannot be finalized"),
    ("v0 offset past what was received", "POST", V0 + "?upload_id={v0_session}&upload_protocol=resumable",
     {"data": b"x", "headers": {"X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "7"}}, 400,
     "X-Goog-Upload-Offset is 7"),
    ("v0 unknown upload command", "POST", V0 + "?upload_id={v0_session}&upload_protocol=resumable",
     {"data": b"x", "headers": {"X-Goog-Upload-Command": "append"}}, 400, "X-Goog-Upload-Command must be"),
    ("v0 metadata with the wrong name", "POST", V0 + "?name=r", {"headers": {**OWNER, "X-Goog-Upload-Protocol": "multipart", **MULTIPART},
     "data": multipart('{"name":"elsewhere"}', b"x")}, 400, "differ"),
    # Rules.
    ("rules with an error", "PUT", "/internal/setRules",
     {"json": {"rules": {"files": [{"name": "bad.rules", "content": "rules_version = '2'; service firebase.storage {"}]}}},
     400, "error updating rules"),
    ("rules without files", "PUT", "/internal/setRules", {"json": {"rules": {}}}, 400, "rules.files"),
    ("rules that are not JSON", "PUT", "/internal/setRules", {"data": b"rules_version = '2';"}, 400, "JSON object"),
    ("reset with GET", "GET", "/internal/reset", {}, 405, "not allowed"),
]


class Answer:
    def __init__(self, response):
        self.status_code = response.status
        self.text = response.read().decode()

    def json(self):
        return json.loads(self.text)


def send_as_written(server, method, path, data=b"", json_body=None, headers=None, **arguments):
    """One request with its path exactly as written: requests and urllib3 would escape a bad percent-encoding
    before it leaves, and the server would never see it."""
    headers = dict(headers or {})
    if "json" in arguments:
        data = json.dumps(arguments.pop("json")).encode()
        headers.setdefault("Content-Type", "application/json")
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(method, path, body=data, headers=headers)
        return Answer(connection.getresponse())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def catalogue_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("bad-requests")
    server = Server(home, home / "served.bucket", extra=("--max-object-size", str(LIMIT_MIB)))
    for name, content in [("a/one.txt", b"one"), ("users/ada/a.txt", b"ada"), ("b.txt", b"b")]:
        response = server.request("POST", f"/upload/storage/v1/b/{server.name}/o",
                                  params={"uploadType": "media", "name": name}, data=content)
        assert response.status_code == 200, response.text
    load_rules(server, RULES)
    # Uploads in progress that entries send bad chunks to (they change nothing in the bucket until finished).
    started = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "resumable"},
                             json={"name": "resumed"}, headers={"X-Upload-Content-Length": "10"})
    server.gcs_session = started.headers["Location"].split("upload_id=")[1]
    started = server.request("POST", f"/v0/b/{server.name}/o", params={"name": "v0-resumed"}, data="{}",
                             headers={**OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                      "X-Goog-Upload-Header-Content-Length": "10"})
    server.v0_session = started.headers["X-Goog-Upload-URL"].split("upload_id=")[1].split("&")[0]
    server.root_token = server.request("GET", f"/v0/b/{server.name}/o", params={"prefix": "", "delimiter": "/", "maxResults": 1},
                                       headers=OWNER).json()["nextPageToken"]
    server.before = harness.export(home, server.bucket_file)
    yield server
    status, err = server.stop()
    assert status == 0, err
    assert harness.check(home, server.bucket_file)[0] == 0


def test_the_catalogue_is_large_enough():
    assert len(CATALOGUE) >= 40


@pytest.mark.parametrize("name,method,path,arguments,status,words", CATALOGUE, ids=[entry[0] for entry in CATALOGUE])
def test_v4_bad_request(catalogue_server, name, method, path, arguments, status, words):
    server = catalogue_server
    path = path.format(bucket=server.name, gcs_session=server.gcs_session, v0_session=server.v0_session,
                       root_token=server.root_token)
    response = send_as_written(server, method, path, **arguments)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status
    assert re.search(words, error["message"]), error["message"]
    if not path.startswith("/v0") and not path.startswith("/internal"):
        assert error["errors"][0]["message"] == error["message"] and error["errors"][0]["reason"]
    # The bucket is as it was, and the server still serves.
    assert harness.export(server.home, server.bucket_file) == server.before
    assert server.request("GET", "/v0/").status_code == 200


def test_rules_with_an_error_leave_the_old_rules_in_force(catalogue_server):
    server = catalogue_server
    bad = {"rules": {"files": [{"name": "bad.rules", "content": "rules_version = '2'; service firebase.storage {"}]}}
    assert server.request("PUT", "/internal/setRules", json=bad).status_code == 400
    read = server.request("GET", "/v0/b/{}/o/users%2Fada%2Fa.txt".format(server.name),
                          headers={"Authorization": "Firebase " + emulator_token("ada")})
    assert read.status_code == 200
    assert server.request("GET", "/v0/b/{}/o/users%2Fada%2Fa.txt".format(server.name), headers=BOB).status_code == 403
