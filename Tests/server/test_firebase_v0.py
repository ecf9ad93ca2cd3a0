"""The Firebase v0 API of `storesh serve` (rules V1–V3, R1–R4, L3, L12, G7), with requests shaped as the Firebase
Web SDK (packages/storage: requests.ts, task.ts) and the Apple SDK (FirebaseStorage with GTMSessionUploadFetcher)
send them, under security rules, as two users signed in with emulator ID tokens."""
import base64
import hashlib
import json
import os
import uuid

import pytest

import harness

RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /users/{uid}/{rest=**} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
    match /public/{rest=**} {
      allow read;
      allow write: if request.auth != null && request.resource.size < 1000000;
    }
  }
}
"""


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def emulator_token(uid, **claims):
    """An unsigned ID token as the Firebase emulator suite makes one (createMockUserToken: alg none, no signature)."""
    header = {"alg": "none", "type": "JWT"}
    payload = {"iss": "https://securetoken.google.com/demo-app", "aud": "demo-app", "iat": 0, "exp": 3600,
               "auth_time": 0, "sub": uid, "user_id": uid,
               "firebase": {"sign_in_provider": "custom", "identities": {}}, **claims}
    return b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode()) + "."


ADA = {"Authorization": "Firebase " + emulator_token("ada", email_verified=True)}
BOB = {"Authorization": "Firebase " + emulator_token("bob")}
OWNER = {"Authorization": "Firebase owner"}
SDK = {"X-Firebase-Storage-Version": "webjs/11.0.0", "X-Firebase-GMPID": "1:0:web:0"}


def load_rules(server, rules=RULES):
    """As @firebase/rules-unit-testing's loadStorageRules sends them."""
    response = server.request("PUT", "/internal/setRules",
                              json={"rules": {"files": [{"name": "storage.rules", "content": rules}]}})
    assert response.status_code == 200, response.text
    return response


def multipart_upload(server, name, content, who, content_type="text/plain", metadata=None):
    """The Web SDK's uploadBytes: multipart/related, the metadata JSON then the bytes."""
    boundary = "7391842847217842"
    resource = {"name": name, "contentType": content_type}
    if metadata is not None:
        resource["metadata"] = metadata
    body = (f"--{boundary}\r\nContent-Type: application/json; charset=utf-8\r\n\r\n{json.dumps(resource)}\r\n"
            f"--{boundary}\r\nContent-Type: {content_type}\r\n\r\n").encode() + content + f"\r\n--{boundary}--".encode()
    return server.request(
        "POST", f"/v0/b/{server.name}/o", params={"name": name}, data=body,
        headers={**SDK, **who, "X-Goog-Upload-Protocol": "multipart",
                 "Content-Type": f"multipart/related; boundary={boundary}"})


def v0_object(server, name):
    return server.object_path(name, api="v0")


@pytest.fixture
def ruled(server):
    load_rules(server)
    return server


def test_v3_rules_decide_uploads_for_two_users(ruled):
    ok = multipart_upload(ruled, "users/ada/notes.txt", b"ada's notes", ADA, metadata={"topic": "lists"})
    assert ok.status_code == 200, ok.text
    resource = ok.json()
    assert resource["name"] == "users/ada/notes.txt" and resource["bucket"] == ruled.name
    assert resource["size"] == "11" and resource["metageneration"] == "1" and isinstance(resource["generation"], str)
    assert resource["md5Hash"] == base64.b64encode(hashlib.md5(b"ada's notes").digest()).decode()
    assert resource["metadata"] == {"topic": "lists"}  # the download token is not among the custom metadata (G7)
    assert uuid.UUID(resource["downloadTokens"])
    assert resource["timeCreated"].endswith("Z") and resource["timeCreated"] == resource["updated"]
    denied = multipart_upload(ruled, "users/ada/bob-was-here.txt", b"!", BOB)
    assert denied.status_code == 403
    assert denied.json() == {"error": {"code": 403, "message": f"User does not have permission to access gs://{ruled.name}/users/ada/bob-was-here.txt."}}
    signed_out = multipart_upload(ruled, "public/anon.txt", b"?", {})
    assert signed_out.status_code == 403
    assert sorted(harness.export(ruled.home, ruled.bucket_file)) == ["users/ada/notes.txt"]


def test_r3_rules_are_checked_before_existence(ruled):
    assert multipart_upload(ruled, "users/ada/a.txt", b"a", ADA).status_code == 200
    assert ruled.request("GET", v0_object(ruled, "users/ada/a.txt"), headers=ADA).status_code == 200
    assert ruled.request("GET", v0_object(ruled, "users/ada/a.txt"), headers=BOB).status_code == 403
    # A missing object: bob may not know (403); ada may (404, with the SDK's message, rule E).
    assert ruled.request("GET", v0_object(ruled, "users/ada/missing"), headers=BOB).status_code == 403
    missing = ruled.request("GET", v0_object(ruled, "users/ada/missing"), headers=ADA)
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "Object users/ada/missing does not exist."


def test_download_tokens_let_anyone_read_and_only_the_owner_manages_them(ruled):
    resource = multipart_upload(ruled, "users/ada/photo.jpg", b"JPEG", ADA, content_type="image/jpeg").json()
    token = resource["downloadTokens"]
    # getDownloadURL(): the metadata's first token in ?alt=media&token=…, used with no Authorization header.
    url = v0_object(ruled, "users/ada/photo.jpg")
    download = ruled.request("GET", url, params={"alt": "media", "token": token})
    assert download.status_code == 200 and download.content == b"JPEG"
    assert download.headers["Content-Type"] == "image/jpeg"
    assert ruled.request("GET", url, params={"alt": "media", "token": "not-a-token"}).status_code == 403
    assert ruled.request("GET", url, params={"alt": "media"}, headers=ADA).content == b"JPEG"
    ranged = ruled.request("GET", url, params={"alt": "media"}, headers={**ADA, "Range": "bytes=0-1"})
    assert ranged.status_code == 206 and ranged.content == b"JP"
    # create_token / delete_token: the administrator's only.
    assert ruled.request("POST", url, params={"create_token": "true"}, headers=ADA).json() == {
        "error": {"code": 403, "message": "Missing admin credentials."}}
    created = ruled.request("POST", url, params={"create_token": "true"}, headers=OWNER).json()
    tokens = created["downloadTokens"].split(",")
    assert tokens[0] == token and len(tokens) == 2
    deleted = ruled.request("POST", url, params={"delete_token": token}, headers=OWNER).json()
    assert deleted["downloadTokens"] == tokens[1]
    assert ruled.request("GET", url, params={"alt": "media", "token": token}).status_code == 403


def test_l7_l12_listing_as_the_sdks_ask(ruled):
    for name in ["users/ada/a/1", "users/ada/b", "users/ada/c", "users/ada/d/2"]:
        assert multipart_upload(ruled, name, b"x", ADA).status_code == 200
    # Web SDK: prefix=users/ada/&delimiter=/&maxResults=2, then the token.
    path = f"/v0/b/{ruled.name}/o"
    first = ruled.request("GET", path, params={"prefix": "users/ada/", "delimiter": "/", "maxResults": 2}, headers=ADA).json()
    assert first["prefixes"] == ["users/ada/a/"] and [i["name"] for i in first["items"]] == ["users/ada/b"]
    assert first["items"][0]["bucket"] == ruled.name
    second = ruled.request("GET", path, params={"prefix": "users/ada/", "delimiter": "/", "maxResults": 2,
                                                "pageToken": first["nextPageToken"]}, headers=ADA).json()
    assert second == {"prefixes": ["users/ada/d/"], "items": [{"name": "users/ada/c", "bucket": ruled.name}]}
    assert ruled.request("GET", path, params={"prefix": "users/ada/", "delimiter": "/"}, headers=BOB).status_code == 403
    # rules_version 1: every list fails with the service's message (rule L12).
    load_rules(ruled, RULES.replace("rules_version = '2';", "rules_version = '1';"))
    refused = ruled.request("GET", path, params={"prefix": "users/ada/", "delimiter": "/"}, headers=ADA)
    assert refused.status_code == 403
    assert refused.json()["error"]["message"].startswith("Listing objects in a bucket is disallowed for rules_version = \"1\".")


def test_l3_the_v0_api_hides_names_the_sdk_cannot_make(server):
    for name in ["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"]:
        upload = server.request("POST", f"/upload/storage/v1/b/{server.name}/o",
                                params={"uploadType": "media", "name": name}, data=b"x")
        assert upload.status_code == 200
    path = f"/v0/b/{server.name}/o"
    # The Apple SDK leaves prefix out at the root.
    root = server.request("GET", path, params={"delimiter": "/"}, headers=OWNER).json()
    assert root == {"prefixes": ["correctPrefix/", "lonelyItem/", "wrongPrefix/"], "items": []}
    for prefix in ["wrongPrefix/", "lonelyItem/"]:
        assert server.request("GET", path, params={"prefix": prefix, "delimiter": "/"}, headers=OWNER).json() == {
            "prefixes": [], "items": []}


def test_web_sdk_resumable_upload(ruled):
    content = os.urandom(3 * 262144 + 100)
    start = ruled.request(
        "POST", f"/v0/b/{ruled.name}/o", params={"name": "users/ada/video.bin"},
        data=json.dumps({"name": "users/ada/video.bin", "contentType": "application/octet-stream"}),
        headers={**SDK, **ADA, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                 "X-Goog-Upload-Header-Content-Length": str(len(content)),
                 "X-Goog-Upload-Header-Content-Type": "application/octet-stream",
                 "Content-Type": "application/json; charset=utf-8"})
    assert start.status_code == 200 and start.headers["X-Goog-Upload-Status"] == "active"
    url = start.headers["X-Goog-Upload-URL"]
    assert url.startswith(ruled.url)
    offset = 0
    for size in (262144, 524288):
        chunk = ruled.session.post(url, data=content[offset:offset + size], timeout=30,
                                   headers={**ADA, "X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": str(offset)})
        assert chunk.status_code == 200 and chunk.headers["X-Goog-Upload-Status"] == "active"
        offset += size
    query = ruled.session.post(url, headers={**ADA, "X-Goog-Upload-Command": "query"}, timeout=30)
    assert query.headers["X-Goog-Upload-Size-Received"] == str(offset)
    # Nothing is visible before the last byte (V4: no half object).
    assert ruled.request("GET", v0_object(ruled, "users/ada/video.bin"), headers=ADA).status_code == 404
    final = ruled.session.post(url, data=content[offset:], timeout=30,
                               headers={**ADA, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": str(offset)})
    assert final.status_code == 200 and final.headers["X-Goog-Upload-Status"] == "final"
    assert final.json()["size"] == str(len(content))
    download = ruled.request("GET", v0_object(ruled, "users/ada/video.bin"), params={"alt": "media"}, headers=ADA)
    assert download.content == content


def test_apple_sdk_resumable_upload_sends_chunks_without_authorization(ruled):
    content = b"apple" * 5000
    name = "users/bob/from-ios.txt"
    start = ruled.request(
        "POST", v0_object(ruled, name), params={"uploadType": "resumable", "name": name},
        data=json.dumps({"name": name, "contentType": "text/plain", "bucket": ruled.name, "metadata": {"device": "iPhone"}}),
        headers={**BOB, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                 "X-Goog-Upload-Content-Type": "text/plain", "X-Goog-Upload-Content-Length": str(len(content)),
                 "Content-Type": "application/json; charset=UTF-8", "User-Agent": "storesh-test (GTMSUF/1)"})
    assert start.status_code == 200, start.text
    granularity = int(start.headers["X-Goog-Upload-Chunk-Granularity"])
    url = start.headers["X-Goog-Upload-URL"]
    done = ruled.session.put(url, data=content[:granularity // 16], timeout=30, headers={
        "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"})
    assert done.status_code == 200
    received = int(done.headers["X-Goog-Upload-Size-Received"])
    final = ruled.session.put(url, data=content[received:], timeout=30, headers={
        "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "upload, finalize",
        "X-Goog-Upload-Offset": str(received)})
    assert final.status_code == 200, final.text
    assert final.json()["metadata"] == {"device": "iPhone"} and final.json()["contentType"] == "text/plain"
    # A resumable upload into someone else's folder is refused when it starts, as the service does: no byte is
    # sent, and nothing is left.
    refused = ruled.request(
        "POST", v0_object(ruled, "users/ada/x"), params={"uploadType": "resumable", "name": "users/ada/x"}, data="{}",
        headers={**BOB, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
    assert refused.status_code == 403 and "X-Goog-Upload-URL" not in refused.headers, refused.text
    assert sorted(harness.export(ruled.home, ruled.bucket_file)) == [name]


def test_m4_m5_update_metadata_as_the_sdks_send_it(ruled):
    multipart_upload(ruled, "users/ada/m.txt", b"m", ADA, metadata={"keep": "1", "drop": "2"})
    url = v0_object(ruled, "users/ada/m.txt")
    # Web and Apple SDKs: PATCH with null for what is removed.
    patched = ruled.request("PATCH", url, headers={**ADA, "Content-Type": "application/json; charset=utf-8"},
                            data=json.dumps({"cacheControl": "public, max-age=300", "metadata": {"drop": None, "new": "3"}}))
    assert patched.status_code == 200, patched.text
    resource = patched.json()
    assert resource["metadata"] == {"keep": "1", "new": "3"} and resource["cacheControl"] == "public, max-age=300"
    assert resource["metageneration"] == "2" and resource["downloadTokens"]
    # Android: PUT with X-HTTP-Method-Override: PATCH.
    overridden = ruled.request("PUT", url, headers={**ADA, "X-HTTP-Method-Override": "PATCH"},
                               data=json.dumps({"contentType": None, "metadata": None}))
    assert overridden.status_code == 200
    assert "contentType" not in overridden.json() and "metadata" not in overridden.json()
    assert overridden.json()["downloadTokens"] == resource["downloadTokens"]  # kept (G7)
    assert ruled.request("PATCH", url, headers=BOB, data=json.dumps({"cacheControl": "x"})).status_code == 403
    assert ruled.request("GET", url, headers=ADA).json()["metageneration"] == "3"


def test_storesh_v0_takes_the_json_apis_match_conditions_after_the_rules(ruled):
    """storesh's addition, for its bucket page's edits as a user: ifGenerationMatch and ifMetagenerationMatch on a
    change, a deletion and an upload; a stale one is 412 with nothing changed, and the rules come first."""
    resource = multipart_upload(ruled, "users/ada/c.txt", b"c", ADA).json()
    url = v0_object(ruled, "users/ada/c.txt")
    generation = resource["generation"]
    stale = {"ifGenerationMatch": generation, "ifMetagenerationMatch": "7"}
    body = json.dumps({"cacheControl": "no-cache"})
    # Denied by the rules first: bob learns nothing of the object's state.
    assert ruled.request("PATCH", url, params=stale, headers=BOB, data=body).status_code == 403
    refused = ruled.request("PATCH", url, params=stale, headers=ADA, data=body)
    assert refused.status_code == 412, refused.text
    assert "cacheControl" not in ruled.request("GET", url, headers=ADA).json()
    current = {"ifGenerationMatch": generation, "ifMetagenerationMatch": "1"}
    patched = ruled.request("PATCH", url, params=current, headers=ADA, data=body)
    assert patched.status_code == 200 and patched.json()["metageneration"] == "2"
    assert ruled.request("DELETE", url, params={"ifGenerationMatch": "1"}, headers=ADA).status_code == 412
    # An upload only where nothing has the name.
    again = ruled.request("POST", f"/v0/b/{ruled.name}/o", params={"name": "users/ada/c.txt", "ifGenerationMatch": "0"},
                          headers={**ADA, "Content-Type": "text/plain"}, data=b"other")
    assert again.status_code == 412
    assert ruled.request("GET", url, headers=ADA, params={"alt": "media"}).content == b"c"
    assert ruled.request("PATCH", url, params={"ifGenerationNotMatch": "1"}, headers=ADA, data=body).status_code == 400
    assert ruled.request("DELETE", url, params={"ifGenerationMatch": generation}, headers=ADA).status_code == 204


def test_delete_and_the_internal_endpoints(ruled):
    multipart_upload(ruled, "users/ada/gone.txt", b"g", ADA)
    url = v0_object(ruled, "users/ada/gone.txt")
    assert ruled.request("DELETE", url, headers=BOB).status_code == 403
    deleted = ruled.request("DELETE", url, headers=ADA)
    assert deleted.status_code == 204 and deleted.content == b""
    assert ruled.request("DELETE", url, headers=ADA).status_code == 404
    assert ruled.request("GET", "/v0/").json()["emulator"] == "storage"
    multipart_upload(ruled, "users/ada/1", b"1", ADA)
    multipart_upload(ruled, "users/ada/deep/2", b"2", ADA)
    assert ruled.request("POST", "/internal/reset").status_code == 200
    assert harness.export(ruled.home, ruled.bucket_file) == {}


def test_web_sdk_in_a_browser_page_is_allowed_across_origins(server):
    """The Web SDK runs in a page of another origin: the browser asks first (OPTIONS) and may read only the headers
    the server exposes, an upload's X-Goog-Upload-* among them."""
    origin = {"Origin": "http://localhost:5173"}
    preflight = server.request("OPTIONS", f"/v0/b/{server.name}/o", headers={
        **origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,x-goog-upload-protocol,x-goog-upload-command"})
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert "x-goog-upload-command" in preflight.headers["Access-Control-Allow-Headers"]
    start = server.request("POST", f"/v0/b/{server.name}/o", params={"name": "web.txt"}, data="{}", headers={
        **origin, **OWNER, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
    assert start.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "X-Goog-Upload-URL" in start.headers["Access-Control-Expose-Headers"]
