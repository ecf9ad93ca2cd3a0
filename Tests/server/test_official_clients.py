"""The official Python clients against `storesh serve` (rules V1, V2, G1, G5): google-cloud-storage and
firebase-admin, used as their documentation shows, with STORAGE_EMULATOR_HOST pointing at the server."""
import base64
import hashlib
import io
import os

import requests

import google_crc32c
import pytest
from google.api_core import exceptions

import harness


def crc32c_b64(data):
    return base64.b64encode(google_crc32c.Checksum(data).digest()).decode()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def test_v1_small_upload_is_multipart_with_checksums(server, client):
    blob = client.bucket(server.name).blob("photos/cat.txt")
    blob.upload_from_string(b"hello world", content_type="text/plain")
    assert blob.size == 11
    assert blob.md5_hash == md5_b64(b"hello world") == "XrY7u+Ae7tCTyyK7j1rNww=="
    assert blob.crc32c == crc32c_b64(b"hello world")
    assert blob.content_type == "text/plain"
    assert blob.metageneration == 1
    again = client.bucket(server.name).get_blob("photos/cat.txt")
    assert again.generation == blob.generation and again.md5_hash == blob.md5_hash


def test_v1_resumable_upload_in_several_chunks_checks_crc32c(server, client):
    content = os.urandom(5 * 262144 + 4321)
    blob = client.bucket(server.name).blob("big/random.bin", chunk_size=262144)
    blob.upload_from_string(content, content_type="application/octet-stream")
    assert blob.size == len(content)
    assert blob.crc32c == crc32c_b64(content)
    assert client.bucket(server.name).blob("big/random.bin").download_as_bytes() == content


def test_a_wrong_crc32c_given_at_a_resumable_start_is_refused_whatever_the_last_request_says(server, client):
    """Issue 54 (Google's system tests): the client sends the correct `X-Goog-Hash` with its last chunk; it once
    took the place of the wrong CRC32C declared at the start, and the object was stored."""
    content = os.urandom(1000)
    start = server.request("POST", f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "resumable"},
                           json={"name": "declared.bin", "crc32c": "AAAAAA=="})
    assert start.status_code == 200, start.text
    answer = requests.put(start.headers["Location"], data=content, timeout=30,
                          headers={"Content-Range": f"bytes 0-{len(content) - 1}/{len(content)}",
                                   "X-Goog-Hash": "crc32c=" + crc32c_b64(content)})
    assert answer.status_code == 400 and "AAAAAA==" in answer.text, answer.text
    assert client.bucket(server.name).get_blob("declared.bin") is None


def test_if_match_and_if_none_match_name_the_objects_etag(server, client):
    """Issue 54 (Google's system tests): the headers were ignored."""
    blob = client.bucket(server.name).blob("tagged.txt")
    blob.upload_from_string(b"tagged")
    path = f"/storage/v1/b/{server.name}/o/tagged.txt"
    assert server.request("GET", path, headers={"If-Match": "kittens"}).status_code == 412
    assert server.request("GET", path, headers={"If-Match": f'"{blob.etag}"'}).status_code == 200
    assert server.request("GET", path, params={"alt": "media"}, headers={"If-None-Match": blob.etag}).status_code == 304
    assert server.request("GET", path, params={"alt": "media"}, headers={"If-None-Match": '"other", *'}).status_code == 304
    answer = server.request("GET", path, params={"alt": "media"}, headers={"If-None-Match": "other"})
    assert answer.status_code == 200 and answer.content == b"tagged"


def test_v1_resumable_upload_of_a_stream_of_unknown_size(server, client):
    content = b"line of a log\n" * 40000  # 560,000 bytes: three chunks, the size told only at the end
    blob = client.bucket(server.name).blob("logs/stream.txt", chunk_size=262144)
    blob.upload_from_file(io.BytesIO(content), content_type="text/plain")
    assert blob.size == len(content)
    assert client.bucket(server.name).blob("logs/stream.txt").download_as_bytes() == content


def test_v1_empty_object(server, client):
    blob = client.bucket(server.name).blob("empty")
    blob.upload_from_file(io.BytesIO(b""))
    assert blob.size == 0 and blob.md5_hash == "1B2M2Y8AsgTpgAmY7PhCfg=="  # rule M2
    assert client.bucket(server.name).blob("empty").download_as_bytes() == b""


def test_v1_download_ranges(server, client):
    content = bytes(range(256)) * 100
    client.bucket(server.name).blob("r.bin").upload_from_string(content)
    blob = client.bucket(server.name).blob("r.bin")
    assert blob.download_as_bytes(start=10, end=19) == content[10:20]
    assert blob.download_as_bytes(start=25000) == content[25000:]
    assert blob.download_as_bytes(start=0, end=0) == content[:1]
    # A download that the client checks whole (X-Goog-Hash) and one in chunks (Content-Range on every answer).
    assert blob.download_as_bytes(checksum="crc32c") == content
    chunked = client.bucket(server.name).blob("r.bin", chunk_size=262144)
    assert chunked.download_as_bytes() == content


def test_v2_listing_pages_count_prefixes_and_tokens_survive_deletes(server, client):
    # rule L7: {a/1, b/1, c, d, e/1} in pages of 2 at the root: [a/, b/], [c, d], [e/]
    bucket = client.bucket(server.name)
    for name in ["a/1", "b/1", "c", "d", "e/1"]:
        bucket.blob(name).upload_from_string(name.encode())
    pages = client.list_blobs(server.name, delimiter="/", page_size=2).pages
    seen = [(sorted(page.prefixes), [blob.name for blob in page]) for page in pages]
    assert seen == [(["a/", "b/"], []), ([], ["c", "d"]), (["e/"], [])]
    # max_results counts items; prefixes come with the pages read.
    iterator = client.list_blobs(server.name, delimiter="/", max_results=1)
    assert [blob.name for blob in iterator] == ["c"]
    # rule L10: delete the entry a token names; the listing goes on after it.
    first = client.list_blobs(server.name, max_results=2, page_size=2)
    page = next(first.pages)
    assert [blob.name for blob in page] == ["a/1", "b/1"]
    bucket.delete_blob("b/1")
    rest = client.list_blobs(server.name, page_token=first.next_page_token)
    assert [blob.name for blob in rest] == ["c", "d", "e/1"]


def test_v2_the_json_api_lists_every_name_as_it_is(server, client):
    # rule V2 / G6: names the Firebase SDKs could not make are listed as they are, prefixes with their `/`.
    bucket = client.bucket(server.name)
    for name in ["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"]:
        bucket.blob(name).upload_from_string(b"x")
    root = client.list_blobs(server.name, delimiter="/")
    assert [blob.name for blob in root] == []
    assert sorted(root.prefixes) == ["correctPrefix/", "lonelyItem/", "wrongPrefix/"]
    wrong = client.list_blobs(server.name, prefix="wrongPrefix/", delimiter="/")
    assert [blob.name for blob in wrong] == [] and wrong.prefixes == {"wrongPrefix//"}
    lonely = client.list_blobs(server.name, prefix="lonelyItem/", delimiter="/")
    assert [blob.name for blob in lonely] == ["lonelyItem/"]
    everything = [blob.name for blob in client.list_blobs(server.name)]
    assert everything == ["correctPrefix/happyItem", "lonelyItem/", "wrongPrefix//sadItem"]
    offsets = client.list_blobs(server.name, start_offset="l", end_offset="w")
    assert [blob.name for blob in offsets] == ["lonelyItem/"]


def test_m4_m5_patch_merges_and_deletes_custom_metadata(server, client):
    bucket = client.bucket(server.name)
    bucket.blob("doc.txt").upload_from_string(b"text", content_type="text/plain")
    blob = bucket.get_blob("doc.txt")
    blob.metadata = {"owner": "ada", "team": "storage"}
    blob.cache_control = "public, max-age=60"
    blob.patch()
    assert blob.metadata == {"owner": "ada", "team": "storage"} and blob.metageneration == 2
    blob.metadata = {"team": None, "reviewed": "yes"}
    blob.patch()
    assert blob.metadata == {"owner": "ada", "reviewed": "yes"} and blob.metageneration == 3
    assert blob.cache_control == "public, max-age=60" and blob.content_type == "text/plain"
    blob.content_type = None
    blob.patch()
    assert blob.content_type is None  # rule M4: unset is absent, not empty
    blob.metadata = None
    blob.patch()
    fresh = bucket.get_blob("doc.txt")
    assert fresh.metadata is None and fresh.metageneration == 5 and fresh.updated >= fresh.time_created
    assert fresh.etag != blob.etag or fresh.metageneration == blob.metageneration


def test_v1_update_replaces_the_writable_properties(server, client):
    bucket = client.bucket(server.name)
    bucket.blob("u.txt").upload_from_string(b"u", content_type="text/plain")
    blob = bucket.get_blob("u.txt")
    blob.cache_control = "no-cache"
    blob.metadata = {"k": "v"}
    blob.update()
    fresh = bucket.get_blob("u.txt")
    assert fresh.cache_control == "no-cache" and fresh.metadata == {"k": "v"} and fresh.content_type == "text/plain"


def test_g5_preconditions_give_412_and_change_nothing(server, client):
    bucket = client.bucket(server.name)
    bucket.blob("p.txt").upload_from_string(b"v1")
    blob = bucket.get_blob("p.txt")
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("p.txt").upload_from_string(b"v2", if_generation_match=0)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("p.txt").upload_from_string(b"v2", if_generation_match=blob.generation + 1)
    # A resumable upload whose condition fails is refused when it starts, before its bytes are sent.
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("p.txt", chunk_size=262144).upload_from_file(io.BytesIO(b"v3" * 300000), if_generation_match=0)
    blob.content_type = "text/x"
    with pytest.raises(exceptions.PreconditionFailed):
        blob.patch(if_metageneration_match=blob.metageneration + 1)
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.delete_blob("p.txt", if_generation_match=blob.generation + 1)
    unchanged = bucket.get_blob("p.txt")
    assert unchanged.generation == blob.generation and unchanged.metageneration == 1
    assert unchanged.download_as_bytes() == b"v1"
    # The right preconditions succeed.
    bucket.blob("p.txt").upload_from_string(b"v2", if_generation_match=blob.generation)
    current = bucket.get_blob("p.txt")
    current.content_type = "text/plain"
    current.patch(if_metageneration_match=1)
    bucket.delete_blob("p.txt", if_generation_match=current.generation)
    assert bucket.get_blob("p.txt") is None


def test_v1_delete_copy_rewrite_and_buckets(server, client):
    bucket = client.bucket(server.name)
    source = bucket.blob("src.txt")
    source.metadata = {"k": "v"}
    source.upload_from_string(b"payload", content_type="text/plain")
    copy = bucket.copy_blob(source, bucket, "dir/copy.txt")
    assert copy.metadata == {"k": "v"} and copy.content_type == "text/plain" and copy.metageneration == 1
    assert copy.generation != source.generation
    target = bucket.blob("dir/rewritten.txt")
    token, done, total = target.rewrite(source)
    assert token is None and done == total == 7
    assert bucket.blob("dir/rewritten.txt").download_as_bytes() == b"payload"
    bucket.delete_blob("dir/copy.txt")
    with pytest.raises(exceptions.NotFound):
        bucket.delete_blob("dir/copy.txt")
    assert client.get_bucket(server.name).name == server.name
    assert [b.name for b in client.list_buckets()] == [server.name]
    assert client.lookup_bucket("another-bucket") is None


def test_firebase_admin_storage_bucket_flows(server, monkeypatch):
    """firebase-admin's storage.bucket() (the Admin SDK's own flows): it takes STORAGE_EMULATOR_HOST through
    google-cloud-storage; it always passes a credential, so tests give it the anonymous one."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    import firebase_admin
    from firebase_admin import storage
    from google.auth.credentials import AnonymousCredentials
    app = firebase_admin.initialize_app(
        AnonymousCredentials(), {"storageBucket": server.name, "projectId": "demo-app"}, name="storesh-test")
    try:
        bucket = storage.bucket(app=app)
        blob = bucket.blob("users/ada/avatar.png")
        blob.metadata = {"firebaseStorageDownloadTokens": "token-1"}
        blob.upload_from_string(b"\x89PNG", content_type="image/png")
        assert blob.download_as_bytes() == b"\x89PNG"
        assert [b.name for b in bucket.list_blobs(prefix="users/")] == ["users/ada/avatar.png"]
        listed = bucket.list_blobs(prefix="users/", delimiter="/")
        assert list(listed) == [] and listed.prefixes == {"users/ada/"}
        blob.metadata = {"reviewed": "yes"}
        blob.patch()
        assert blob.metadata == {"firebaseStorageDownloadTokens": "token-1", "reviewed": "yes"}
        blob.delete()
        assert not bucket.blob("users/ada/avatar.png").exists()
    finally:
        firebase_admin.delete_app(app)


def test_v4_the_bucket_file_holds_what_clients_were_told(server, client):
    """Every answered change is in the bucket file, which storesh itself reads while the server runs."""
    bucket = client.bucket(server.name)
    for index in range(20):
        bucket.blob(f"n/{index:02}").upload_from_string(str(index).encode())
    bucket.blob("n/05").delete()
    exported = harness.export(server.home, server.bucket_file)
    assert sorted(exported) == [f"n/{index:02}" for index in range(20) if index != 5]
    status, report = harness.check(server.home, server.bucket_file)
    assert status == 0, report


def test_v1_batch_of_patches_and_deletes(server, client):
    """client.batch(): many JSON API requests in one multipart/mixed body, answered part by part in order."""
    bucket = client.bucket(server.name)
    for index in range(30):
        bucket.blob(f"batch/{index:02}").upload_from_string(b"b")
    blobs = [bucket.blob(f"batch/{index:02}") for index in range(30)]
    with client.batch():
        for blob in blobs:
            blob.metadata = {"batched": "yes"}
            blob.patch()
    assert all(blob.metadata == {"batched": "yes"} and blob.metageneration == 2 for blob in blobs)
    with client.batch():
        for blob in blobs[:10]:
            bucket.delete_blob(blob.name)
    assert [blob.name for blob in client.list_blobs(server.name, prefix="batch/")] == [
        f"batch/{index:02}" for index in range(10, 30)]
    # A failing part fails alone; the client raises for it once the batch is answered.
    with pytest.raises(exceptions.NotFound):
        with client.batch():
            bucket.delete_blob("batch/10")
            bucket.delete_blob("batch/missing")
    assert bucket.get_blob("batch/10") is None


def test_every_metadata_answer_carries_the_content_crc32c(server, client, tmp_path):
    """The emulator and Cloud Storage give `crc32c` in every object resource, and the clients check a download
    against it: for an object the shell wrote, and one a client uploaded, in a get, a listing, a patch's answer
    and the v0 API's metadata, and a download the client checks itself."""
    status, _, err = harness.storesh(
        tmp_path, "--bucket", server.bucket_file, "--quiet", "-c", "put --data hello crc/from-shell.txt")
    assert status == 0, err
    bucket = client.bucket(server.name)
    uploaded = os.urandom(300_000)
    bucket.blob("crc/uploaded.bin").upload_from_string(uploaded)
    expected = {"crc/from-shell.txt": crc32c_b64(b"hello"), "crc/uploaded.bin": crc32c_b64(uploaded)}
    assert expected["crc/from-shell.txt"] == "mnG7TA=="
    for name, crc in expected.items():
        assert bucket.get_blob(name).crc32c == crc
    assert {blob.name: blob.crc32c for blob in client.list_blobs(server.name, prefix="crc/")} == expected
    patched = bucket.blob("crc/from-shell.txt")
    patched.cache_control = "no-cache"
    patched.patch()
    assert patched.metageneration == 2 and patched.crc32c == expected["crc/from-shell.txt"]
    assert bucket.blob("crc/uploaded.bin").download_as_bytes(checksum="crc32c") == uploaded
    v0 = server.request("GET", server.object_path("crc/from-shell.txt", api="v0"),
                        headers={"Authorization": "Firebase owner"})
    assert v0.status_code == 200 and v0.json()["crc32c"] == expected["crc/from-shell.txt"]


def test_v1_compose_joins_sources_with_their_preconditions_and_the_result_checks(server, client):
    """Issue 38: `blob.compose(sources)` of the official client, with generation preconditions on each source and on
    the destination; the result's crc32c and md5 are those of the joined content, and the client downloads it."""
    bucket = client.bucket(server.name)
    parts = [os.urandom(1000 + index) for index in range(3)]
    sources = []
    for index, part in enumerate(parts):
        blob = bucket.blob(f"parts/{index}")
        blob.upload_from_string(part, content_type="application/x-part")
        sources.append(blob)
    joined = b"".join(parts)
    destination = bucket.blob("whole.bin")
    destination.content_type = "application/x-whole"
    destination.compose(sources, if_source_generation_match=[blob.generation for blob in sources], if_generation_match=0)
    assert destination.size == len(joined) and destination.content_type == "application/x-whole"
    assert destination.crc32c == crc32c_b64(joined)
    assert bucket.blob("whole.bin").download_as_bytes(checksum="crc32c") == joined
    # A source at another generation than required, or a destination that exists where none may: nothing changes.
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob("again.bin").compose(sources, if_source_generation_match=[1, 1, 1])
    with pytest.raises(exceptions.PreconditionFailed):
        destination.compose(sources, if_generation_match=0)
    with pytest.raises(exceptions.NotFound):
        bucket.blob("none.bin").compose([bucket.blob("parts/0"), bucket.blob("parts/missing")])
    assert bucket.get_blob("again.bin") is None and bucket.get_blob("none.bin") is None
    # 32 sources at most, as the service says.
    with pytest.raises(exceptions.BadRequest, match="exceeds the maximum"):
        bucket.blob("many.bin").compose([sources[0]] * 33)
    # Composed again onto itself, as the client sends it: the destination's resource with its stale md5Hash, which
    # the service does not check (a compose once failed "the content's MD5 is …, not the expected …").
    stale = destination.md5_hash
    destination.compose(sources + [bucket.blob("parts/0")])
    assert destination.md5_hash != stale and destination.size == len(joined) + len(parts[0])
