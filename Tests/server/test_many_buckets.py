"""Rule V6: one `storesh serve` serves every bucket a client names, each from a bucket file of its own (NAME.bucket
in the --buckets directory, by default the served file's), made on the first write as the Firebase emulator makes a
bucket on its first upload; firebase.json's `storage` list gives each bucket its rules; the page lists the buckets;
export and import carry every one. Rule V7's rewrite continuation (`rewriteToken`) and firebase-tools' habits with
--import and --export-on-exit are here too. Tried with the official Python client, as an app with a second bucket
uses it."""
import json
import os
import re
import signal

import pytest
import requests
from google.api_core import exceptions

from serving import BUCKET, Server, harness, until

OPEN = "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n    match /{all=**} { allow read, write: if true; }\n  }\n}\n"
CLOSED = OPEN.replace("if true", "if false")


@pytest.fixture
def server(tmp_path):
    """A server that makes a bucket on any write to it, as the Firebase emulator does (--create-buckets-on-write):
    these tests are of the buckets a write makes. Without the flag, the JSON API answers such a write 404, as Cloud
    Storage does (test_without_the_flag_…)."""
    running = Server(tmp_path, tmp_path / "served.bucket", extra=("--create-buckets-on-write",))
    yield running
    status, err = running.stop()
    assert status == 0, err


def test_without_the_flag_a_json_api_write_to_no_bucket_is_404_and_the_firebase_api_makes_it(tmp_path):
    """Rule V6, issue 54: as on Cloud Storage, the JSON API does not make a bucket by writing to it (suites written
    for the service expect 404); the Firebase API does, as the emulator; buckets.insert makes one."""
    server = Server(tmp_path, tmp_path / "served.bucket")
    try:
        answer = server.request("POST", "/upload/storage/v1/b/never-written/o", params={"uploadType": "media", "name": "a"},
                                data=b"a")
        assert answer.status_code == 404 and "does not exist" in answer.json()["error"]["message"], answer.text
        copied = server.request("POST", f"/storage/v1/b/{BUCKET}/o/x/copyTo/b/never-written/o/y", json={})
        assert copied.status_code == 404, copied.text
        assert not (tmp_path / "never-written.bucket").exists()
        made = server.request("POST", "/v0/b/firebase-made/o", params={"name": "a.txt"}, data=b"a",
                              headers={"Authorization": "Bearer owner"})
        assert made.status_code == 200, made.text
        assert (tmp_path / "firebase-made.bucket").exists()
        assert server.request("POST", "/storage/v1/b", json={"name": "inserted-bucket"}).status_code == 200
        stored = server.request("POST", "/upload/storage/v1/b/inserted-bucket/o", params={"uploadType": "media", "name": "a"},
                                data=b"a")
        assert stored.status_code == 200, stored.text
    finally:
        status, err = server.stop()
    assert status == 0, err


def checked(home, *files):
    """`storesh check` says each bucket file is sound."""
    for file in files:
        status, out, err = harness.storesh(home, "check", "--bucket", str(file))
        assert status == 0, (file, out.decode(), err.decode())


def client_for(server, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    monkeypatch.setenv("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    return storage.Client(project="demo-app", credentials=AnonymousCredentials())


def test_a_second_and_third_bucket_are_served_from_files_of_their_own(server, client, tmp_path):
    client.bucket(BUCKET).blob("first.txt").upload_from_string(b"first")
    client.bucket("other-bucket").blob("a/b.txt").upload_from_string(b"second", content_type="text/plain")
    third = client.create_bucket("third.example.com")
    third.blob("c.txt").upload_from_string(b"third")
    # Each bucket is a file of its own beside the served one, holding its objects only.
    assert (tmp_path / "other-bucket.bucket").is_file() and (tmp_path / "third.example.com.bucket").is_file()
    assert [blob.name for blob in client.list_blobs("other-bucket")] == ["a/b.txt"]
    assert [blob.name for blob in client.list_blobs(BUCKET)] == ["first.txt"]
    assert client.bucket("other-bucket").blob("a/b.txt").download_as_bytes() == b"second"
    assert sorted(bucket.name for bucket in client.list_buckets()) == sorted([BUCKET, "other-bucket", "third.example.com"])
    # A bucket no one wrote to does not exist, and reading it makes no file.
    with pytest.raises(exceptions.NotFound):
        client.get_bucket("never-written")
    with pytest.raises(exceptions.NotFound):
        list(client.list_blobs("never-written"))
    assert not (tmp_path / "never-written.bucket").exists()
    with pytest.raises(exceptions.Conflict):
        client.create_bucket("other-bucket")
    # A copy to another bucket, and a delete there.
    client.bucket(BUCKET).copy_blob(client.bucket(BUCKET).blob("first.txt"), third, "copied.txt")
    assert third.blob("copied.txt").download_as_bytes() == b"first"
    third.blob("c.txt").delete()
    assert [blob.name for blob in client.list_blobs(third)] == ["copied.txt"]
    # The shell reaches each of them through the same variable the clients read.
    status, out, err = harness.storesh(tmp_path, "--bucket", "gs://other-bucket", "-c", "ls a/", STORAGE_EMULATOR_HOST=server.url)
    assert status == 0, err.decode()
    assert "b.txt" in out.decode()
    assert server.stop()[0] == 0
    checked(tmp_path, server.bucket_file, tmp_path / "other-bucket.bucket", tmp_path / "third.example.com.bucket")


def test_a_file_named_after_a_bucket_it_does_not_hold_is_not_served_under_that_name(server, client, tmp_path):
    # A bucket file made as gs://someone, then renamed.
    status, _, err = harness.storesh(tmp_path, "import", "--bucket", str(tmp_path / "someone.bucket"), "-",
                                     stdin=json.dumps({"format": "storesh-bucket", "version": 1, "objects": []}).encode())
    assert status == 0, err.decode()
    os.rename(tmp_path / "someone.bucket", tmp_path / "impostor.bucket")
    answer = requests.post(f"{server.url}/upload/storage/v1/b/impostor/o", params={"uploadType": "media", "name": "x"},
                           data=b"x", timeout=30)
    assert answer.status_code == 409 and "holds gs://someone" in answer.json()["error"]["message"]
    assert "impostor" not in [bucket.name for bucket in client.list_buckets()]


def test_a_rewrite_of_a_large_object_goes_in_steps_and_lands_whole(server, client, tmp_path):
    content = os.urandom(40 << 20)
    source = client.bucket(BUCKET).blob("large.bin")
    source.upload_from_string(content)
    destination = client.bucket("archive-bucket").blob("large-copy.bin")
    token, rewritten, total = destination.rewrite(source)
    # One call's share is 32 MiB: the first call is not the last, and nothing is visible yet.
    assert token and rewritten == 32 << 20 and total == len(content)
    assert not destination.exists()
    calls = 1
    while token:
        token, rewritten, total = destination.rewrite(source, token=token)
        calls += 1
    assert calls == 2 and rewritten == total == len(content)
    assert destination.download_as_bytes() == content
    # A token is for its own copy only, and a source that changed meanwhile fails the rewrite.
    small = client.bucket(BUCKET).blob("small.bin")
    small.upload_from_string(b"s" * 3000)
    answer = server.request("POST", f"/storage/v1/b/{BUCKET}/o/small.bin/rewriteTo/b/{BUCKET}/o/small-copy.bin",
                            params={"maxBytesRewrittenPerCall": 1024}, json={})
    step = answer.json()
    assert answer.status_code == 200 and step["done"] is False and step["totalBytesRewritten"] == "1024", answer.text
    wrong = server.request("POST", f"/storage/v1/b/{BUCKET}/o/small.bin/rewriteTo/b/{BUCKET}/o/elsewhere.bin",
                           params={"rewriteToken": step["rewriteToken"]}, json={})
    assert wrong.status_code == 400 and "rewriteToken" in wrong.json()["error"]["message"]
    small.upload_from_string(b"changed")
    changed = server.request("POST", f"/storage/v1/b/{BUCKET}/o/small.bin/rewriteTo/b/{BUCKET}/o/small-copy.bin",
                             params={"rewriteToken": step["rewriteToken"], "maxBytesRewrittenPerCall": 1 << 20}, json={})
    assert changed.status_code in (404, 412), changed.text
    assert not client.bucket(BUCKET).blob("small-copy.bin").exists()
    assert server.stop()[0] == 0
    checked(tmp_path, server.bucket_file, tmp_path / "archive-bucket.bucket")


def upload_v0(url, bucket, name, data):
    return requests.post(f"{url}/v0/b/{bucket}/o", params={"name": name}, data=data, timeout=30,
                         headers={"Content-Type": "text/plain"})


def test_firebase_json_gives_each_bucket_its_rules_and_reloads_them(tmp_path):
    (tmp_path / "open.rules").write_text(OPEN)
    (tmp_path / "closed.rules").write_text(CLOSED)
    (tmp_path / "firebase.json").write_text(json.dumps({"storage": [
        {"bucket": BUCKET, "rules": "open.rules"},
        {"bucket": "private-bucket", "rules": "closed.rules"},
    ]}))
    server = Server(tmp_path, tmp_path / "served.bucket", config=tmp_path / "firebase.json")
    try:
        # A bucket the project names is served from the start, with its rules.
        assert upload_v0(server.url, BUCKET, "a.txt", b"a").status_code == 200
        assert upload_v0(server.url, "private-bucket", "a.txt", b"a").status_code == 403
        # The Firebase emulator lists a bucket no one wrote to as empty.
        empty = requests.get(f"{server.url}/v0/b/unnamed-bucket/o", params={"prefix": "", "delimiter": "/"}, timeout=30)
        assert empty.status_code == 200 and empty.json() == {"prefixes": [], "items": []}
        # A change of one bucket's rules file reaches that bucket only.
        (tmp_path / "closed.rules").write_text(OPEN)
        until(lambda: upload_v0(server.url, "private-bucket", "b.txt", b"b").status_code == 200, "private-bucket's rules reloaded")
        # setRules with a resource each, as @firebase/rules-unit-testing sends them for several buckets.
        answer = server.request("PUT", "/internal/setRules", json={"rules": {"files": [
            {"name": "a.rules", "content": CLOSED, "resource": BUCKET},
            {"name": "b.rules", "content": OPEN, "resource": "private-bucket"},
        ]}})
        assert answer.status_code == 200, answer.text
        assert upload_v0(server.url, BUCKET, "c.txt", b"c").status_code == 403
        assert upload_v0(server.url, "private-bucket", "c.txt", b"c").status_code == 200
    finally:
        status, err = server.stop()
    assert status == 0, err
    assert "in force for gs://private-bucket" in err
    checked(tmp_path, server.bucket_file, tmp_path / "private-bucket.bucket")


def test_the_page_lists_the_buckets_and_shows_one_at_a_time(server, client):
    client.bucket(BUCKET).blob("here.txt").upload_from_string(b"1")
    client.bucket("second-bucket").blob("folder/there.txt").upload_from_string(b"2")
    first = server.request("GET", "/")
    assert first.status_code == 200 and "here.txt" in first.text and "there.txt" not in first.text
    assert 'href="/?bucket=second-bucket"' in first.text
    second = server.request("GET", "/", params={"bucket": "second-bucket"})
    assert second.status_code == 200 and "gs://second-bucket" in second.text
    # Its links stay in the bucket shown.
    assert "/?bucket=second-bucket&amp;path=folder%2F" in second.text
    folder = server.request("GET", "/", params={"bucket": "second-bucket", "path": "folder/"})
    assert "there.txt" in folder.text
    assert server.request("GET", "/", params={"bucket": "no-such-bucket"}).status_code == 404


def test_export_and_import_carry_every_bucket(tmp_path, monkeypatch):
    export = tmp_path / "emulator-data"
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--export-on-exit", str(export), "--create-buckets-on-write"))
    try:
        client = client_for(server, monkeypatch)
        client.bucket(BUCKET).blob("one.txt").upload_from_string(b"one")
        client.bucket("second-bucket").blob("two.txt").upload_from_string(b"two")
        client.bucket("third-bucket").blob("three/3.txt").upload_from_string(b"three")
    finally:
        status, err = server.stop(signal.SIGINT)
    assert status == 0, err
    listed = json.loads((export / "storage_export" / "buckets.json").read_text())
    assert [entry["id"] for entry in listed["buckets"]] == [BUCKET, "second-bucket", "third-bucket"]
    # Served again from the export alone: each bucket from a file of its own, beside the first.
    home = tmp_path / "again"
    home.mkdir()
    again = Server(home, home / "app.bucket", extra=("--import", str(export)))
    try:
        client = client_for(again, monkeypatch)
        assert client.bucket("second-bucket").blob("two.txt").download_as_bytes() == b"two"
        assert client.bucket("third-bucket").blob("three/3.txt").download_as_bytes() == b"three"
        assert client.bucket(BUCKET).blob("one.txt").download_as_bytes() == b"one"
    finally:
        status, err = again.stop()
    assert status == 0, err
    checked(home, home / "app.bucket", home / "second-bucket.bucket", home / "third-bucket.bucket")


def test_import_of_a_directory_not_there_yet_starts_empty_and_a_bare_export_on_exit_writes_it(tmp_path, monkeypatch):
    """firebase emulators:start --import DIR --export-on-exit: the first run starts empty, the next one imports."""
    data = tmp_path / "emulator-data"
    arguments = ("serve", "--bucket", str(tmp_path / "app.bucket"), "--name", BUCKET, "--port", "0", "--no-config",
                 "--no-log", "--import", str(data), "--export-on-exit")
    err = run_once(tmp_path, arguments, lambda url: requests.post(
        f"{url}/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "kept.txt"}, data=b"kept", timeout=30))
    assert "does not exist yet" in err and f"exported 1 object to {data}" in err
    assert (data / "firebase-export-metadata.json").is_file()
    # Again, on a new bucket file: the export is imported.
    os.remove(tmp_path / "app.bucket")
    run_once(tmp_path, arguments, lambda url: requests.get(
        f"{url}/download/storage/v1/b/{BUCKET}/o/kept.txt", params={"alt": "media"}, timeout=30).content == b"kept")


def run_once(home, arguments, use):
    """Starts storesh with `arguments`, gives `use` its URL (what it returns must be true, or a 200), stops it with
    Ctrl-C's signal whatever happens, and returns its standard error once it exited with 0."""
    process = harness.start(home, *arguments)
    try:
        url = re.search(r"at (http://127\.0\.0\.1:\d+)", process.stdout.readline().decode()).group(1)
        result = use(url)
        assert result is True or getattr(result, "status_code", None) == 200, getattr(result, "text", result)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    return err.decode()


def test_a_bare_export_on_exit_needs_an_import_directory(tmp_path):
    status, _, err = harness.storesh(tmp_path, "serve", "--bucket", str(tmp_path / "app.bucket"), "--no-config",
                                     "--export-on-exit")
    assert status == 2 and "--import" in err.decode()
    assert not (tmp_path / "app.bucket").exists()


def test_an_export_naming_a_bucket_outside_the_directory_is_refused_and_nothing_is_made(tmp_path):
    """serve --import of an export whose buckets.json names `../../escaped`: the name is not a bucket name, so no
    path is made from it (it once made escaped.bucket two levels above --buckets)."""
    export = tmp_path / "deep" / "er" / "emulator-data"
    storage = export / "storage_export"
    (storage / "metadata").mkdir(parents=True)
    (storage / "blobs").mkdir()
    (export / "firebase-export-metadata.json").write_text(json.dumps({"storage": {"path": "storage_export"}}))
    (storage / "buckets.json").write_text(json.dumps({"buckets": [{"id": BUCKET}, {"id": "../../escaped"}]}))
    served = tmp_path / "deep" / "er" / "served"
    served.mkdir()
    before = sorted(str(path) for path in tmp_path.rglob("*"))
    status, _, err = harness.storesh(tmp_path, "serve", "--bucket", str(served / "app.bucket"), "--name", BUCKET,
                                     "--port", "0", "--no-config", "--import", str(export))
    assert status != 0 and "../../escaped" in err.decode() and "not a bucket name" in err.decode(), err.decode()
    assert sorted(str(path) for path in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("name, why", [
    ("192.168.5.4", "IP address"), ("goog-photos", "begin with \"goog\""), ("my-google-bucket", "google"),
    ("my-g00gle-bucket", "misspelling"), ("a" * 64, "3 to 63"), ("ab", "3 to 63"), ("Upper", "lowercase"),
])
def test_bucket_names_the_service_refuses_are_refused(server, name, why):
    answer = server.request("POST", "/storage/v1/b", json={"name": name})
    assert answer.status_code == 400 and why in answer.json()["error"]["message"], answer.text
    assert not list(server.home.glob("*" + name + "*"))


def test_the_longest_bucket_names_are_served(server):
    """222 characters, four parts of up to 63 between dots: its file's temporary names still fit a file name."""
    name = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 30])
    assert len(name) == 222
    made = server.request("POST", "/storage/v1/b", json={"name": name})
    assert made.status_code == 200, made.text
    stored = server.request("POST", f"/upload/storage/v1/b/{name}/o", params={"uploadType": "media", "name": "x.txt"}, data=b"x")
    assert stored.status_code == 200, stored.text
    assert server.request("GET", f"/storage/v1/b/{name}/o/x.txt", params={"alt": "media"}).content == b"x"


def test_an_export_on_exit_leaves_out_files_it_cannot_trust_and_exports_the_rest(tmp_path, monkeypatch):
    """A junk or empty NAME.bucket, or one that is a symbolic link, beside the served bucket once made
    --export-on-exit write no export at all (after acknowledged writes), or follow the link out of the directory."""
    export = tmp_path / "emulator-data"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.bucket"
    secret.write_bytes(b"not yours")
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--export-on-exit", str(export), "--create-buckets-on-write"))
    try:
        client = client_for(server, monkeypatch)
        client.bucket(BUCKET).blob("one.txt").upload_from_string(b"one")
        client.bucket("second-bucket").blob("two.txt").upload_from_string(b"two")
        (tmp_path / "junk-bucket.bucket").write_bytes(os.urandom(4096))
        (tmp_path / "empty-bucket.bucket").write_bytes(b"")
        os.symlink(secret, tmp_path / "linked-bucket.bucket")
    finally:
        status, err = server.stop(signal.SIGINT)
    assert status == 0, err
    listed = json.loads((export / "storage_export" / "buckets.json").read_text())
    assert [entry["id"] for entry in listed["buckets"]] == [BUCKET, "second-bucket"]
    for name in ["junk-bucket.bucket", "empty-bucket.bucket", "linked-bucket.bucket"]:
        assert re.search(r"not exported: \S*" + re.escape(name), err), err
    assert secret.read_bytes() == b"not yours"


def refused_requests(bucket):
    """Requests a client may send to a bucket no one has written to yet, each refused (method, path, arguments)."""
    from test_bad_requests import multipart, MULTIPART
    upload = f"/upload/storage/v1/b/{bucket}/o"
    return [
        ("no name", "POST", upload, {"params": {"uploadType": "media"}, "data": b"x"}),
        ("a bad uploadType", "POST", upload, {"params": {"uploadType": "sideways", "name": "x"}, "data": b"x"}),
        ("412", "POST", upload, {"params": {"uploadType": "media", "name": "x", "ifGenerationMatch": "5"}, "data": b"x"}),
        ("413", "POST", upload, {"params": {"uploadType": "resumable"}, "json": {"name": "x"},
                                 "headers": {"X-Upload-Content-Length": str(10 << 40)}}),
        ("a wrong CRC32C", "POST", upload, {"params": {"uploadType": "multipart"},
                                            "data": multipart('{"name":"x","crc32c":"AAAAAA=="}', b"x"), "headers": MULTIPART}),
        ("compose of a missing source", "POST", f"/storage/v1/b/{bucket}/o/x/compose",
         {"json": {"sourceObjects": [{"name": "missing"}]}}),
        ("copy of a missing source", "POST", f"/storage/v1/b/{bucket}/o/missing/copyTo/b/{bucket}/o/x", {}),
        ("copy from a missing bucket", "POST", f"/storage/v1/b/{BUCKET}/o/missing/copyTo/b/{bucket}/o/x", {}),
        ("a malformed v0 token", "POST", f"/v0/b/{bucket}/o", {"params": {"name": "x"}, "data": b"x",
                                                               "headers": {"Authorization": "Firebase not-a-token"}}),
        ("a v0 upload the rules deny", "POST", f"/v0/b/{bucket}/o", {"params": {"name": "denied/x"}, "data": b"x"}),
    ]


def test_a_refused_request_makes_no_bucket_file(server):
    """Each of these once left NAME.bucket behind, which then showed in the bucket list and in exports: a client the
    rules deny every write could fill the directory. A bucket is made when its first change lands."""
    rules = ("rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /{all=**} { allow read;"
             " allow write: if !request.path.matches('.*/o/denied/.*'); } } }")
    assert server.request("PUT", "/internal/setRules",
                          json={"rules": {"files": [{"name": "storage.rules", "content": rules}]}}).status_code == 200
    before = sorted(path.name for path in server.home.iterdir())
    for what, method, path, arguments in refused_requests("never-made"):
        answer = server.request(method, path, **arguments)
        assert 400 <= answer.status_code < 500, f"{what}: {answer.status_code} {answer.text}"
        assert sorted(path.name for path in server.home.iterdir()) == before, what
        listed = server.request("GET", "/storage/v1/b", params={"project": "demo"}).json()
        assert "never-made" not in [item["name"] for item in listed.get("items", [])], what
    # Reads of it say it does not exist; its first landed write makes it, and it is there from then on.
    assert server.request("GET", "/storage/v1/b/never-made/o").status_code == 404
    made = server.request("POST", "/upload/storage/v1/b/never-made/o", params={"uploadType": "media", "name": "x"}, data=b"x")
    assert made.status_code == 200, made.text
    assert (server.home / "never-made.bucket").exists()
    assert server.request("GET", "/storage/v1/b/never-made/o/x", params={"alt": "media"}).content == b"x"
    listed = server.request("GET", "/storage/v1/b", params={"project": "demo"}).json()
    assert "never-made" in [item["name"] for item in listed["items"]]


def test_a_resumable_upload_to_a_new_bucket_makes_it_only_when_it_lands(server):
    started = server.request("POST", "/upload/storage/v1/b/later-bucket/o", params={"uploadType": "resumable"},
                             json={"name": "big.bin"})
    assert started.status_code == 200, started.text
    assert not (server.home / "later-bucket.bucket").exists()
    location = started.headers["Location"].split(server.url, 1)[-1]
    assert server.request("PUT", location, data=b"a" * 10, headers={"Content-Range": "bytes 0-9/*"}).status_code == 308
    assert not (server.home / "later-bucket.bucket").exists()
    finished = server.request("PUT", location, data=b"b" * 5, headers={"Content-Range": "bytes 10-14/15"})
    assert finished.status_code == 200, finished.text
    assert (server.home / "later-bucket.bucket").exists()
    assert server.request("GET", "/storage/v1/b/later-bucket/o/big.bin", params={"alt": "media"}).content == b"a" * 10 + b"b" * 5


def serve_at_256_descriptors(tmp_path):
    """storesh serve under `ulimit -n 256`, making a bucket on any write; its first line says where it listens."""
    import resource
    import subprocess
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    return subprocess.Popen([harness.BINARY, "serve", "--bucket", str(tmp_path / "served.bucket"), "--name", BUCKET,
                             "--port", "0", "--no-log", "--no-config", "--create-buckets-on-write"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=harness.environment(tmp_path), preexec_fn=limit)


def test_buckets_past_the_descriptor_bound_close_while_idle_and_503_only_when_all_are_in_use(tmp_path):
    """At a descriptor limit of 256, naming buckets once exhausted the server: every bucket's requests failed with
    'Too many open files'. Now the bucket idle longest closes to make room and opens again when it is used; only when
    every open bucket is in use (here: a live page watches each) is a new one 503 with Retry-After, and nothing of it
    is made; the open ones, and the first, go on."""
    process = serve_at_256_descriptors(tmp_path)
    pages = []
    try:
        url = re.search(r"at (http://127\.0\.0\.1:\d+)", process.stdout.readline().decode()).group(1)
        upload = lambda bucket, data: requests.post(f"{url}/upload/storage/v1/b/{bucket}/o",
                                                    params={"uploadType": "media", "name": "x"}, data=data, timeout=30)
        # Forty buckets, one after another, each written and then read again: far more than fit open at once.
        for index in range(40):
            stored = upload(f"many-{index:02}", f"x{index}".encode())
            assert stored.status_code == 200, (index, stored.text)
        for index in range(40):
            assert requests.get(f"{url}/storage/v1/b/many-{index:02}/o/x", params={"alt": "media"},
                                timeout=30).content == f"x{index}".encode()
        descriptors = len(os.listdir(f"/proc/{process.pid}/fd"))
        assert descriptors < 200, descriptors
        # A live page holds its bucket open: with one on each bucket, the bound is reached, and a bucket past it
        # is refused.
        refused = None
        for index in range(40):
            page = requests.get(f"{url}/_storesh/events", params={"bucket": f"many-{index:02}"}, stream=True, timeout=30)
            if page.status_code != 200:
                refused = (index, page)
                break
            pages.append(page)
        assert refused and len(pages) >= 7, [page.status_code for page in pages]
        index, answer = refused
        assert answer.status_code == 503 and answer.headers.get("Retry-After"), answer.text
        assert "file descriptor limit" in answer.json()["error"]["message"]
        new = upload("never-made", b"n")
        assert new.status_code == 503 and new.headers.get("Retry-After"), new.text
        assert not (tmp_path / "never-made.bucket").exists()
        # The watched buckets and the first still read and write.
        for watched in range(len(pages)):
            assert upload(f"many-{watched:02}", b"again").status_code == 200
        assert upload(BUCKET, b"first").status_code == 200
        # A page that goes gives its bucket back to the idle ones, and the new bucket is made.
        pages.pop().close()
        until(lambda: upload("never-made", b"n").status_code == 200, "a closed page's bucket was never let go")
        assert (tmp_path / "never-made.bucket").exists()
    finally:
        for page in pages:
            page.close()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()
    checked(tmp_path, *sorted(tmp_path.glob("many-*.bucket")))


def test_a_junk_bucket_file_is_a_conflict_and_a_missing_compose_source_is_named(server):
    (server.home / "junk-bucket.bucket").write_bytes(os.urandom(2048))
    answer = server.request("GET", "/storage/v1/b/junk-bucket/o")
    assert answer.status_code == 409 and "not a bucket file storesh can read" in answer.json()["error"]["message"], answer.text
    assert server.request("POST", "/upload/storage/v1/b/x-bucket/o", params={"uploadType": "media", "name": "dest"},
                          data=b"d").status_code == 200
    composed = server.request("POST", "/storage/v1/b/x-bucket/o/dest/compose", json={"sourceObjects": [{"name": "absent"}]})
    assert composed.status_code == 404
    message = composed.json()["error"]["message"]
    assert "x-bucket/absent" in message and "dest" not in message, message


def test_refused_writes_naming_new_buckets_do_not_grow_the_server(server):
    """A client the server refuses every write, naming a new bucket with each request, once grew serve by about
    1.3 KB a name without bound (each name stayed a pending bucket). Pending buckets nothing uses are forgotten."""
    session = requests.Session()
    refuse = lambda index: session.post(f"{server.url}/upload/storage/v1/b/refused-{index}/o",
                                        params={"uploadType": "no-such-type"}, data=b"x", timeout=30)
    assert refuse(0).status_code == 400
    resident = lambda: int(next(line for line in open(f"/proc/{server.process.pid}/status")
                                if line.startswith("VmRSS")).split()[1])
    before = resident()
    for index in range(1, 8001):
        assert refuse(index).status_code == 400
    grown = resident() - before
    assert grown < 5 * 1024, f"{grown} KiB for 8,000 refused names"
    assert not list(server.home.glob("refused-*.bucket"))


def test_idle_connections_never_take_the_descriptors_the_buckets_need(tmp_path):
    """At `ulimit -n 256`, 300 idle connections once took every descriptor (256 open). Connections are bounded by
    the descriptors kept for them; the others wait to be accepted, and the buckets keep theirs."""
    import socket
    process = serve_at_256_descriptors(tmp_path)
    idle = []
    try:
        url = re.search(r"at (http://127\.0\.0\.1:(\d+))", process.stdout.readline().decode())
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", int(url.group(2))), timeout=30))
        # The server accepts what it can serve: its descriptors stay below the limit.
        until(lambda: len(os.listdir(f"/proc/{process.pid}/fd")) >= 100, "the idle connections were never accepted")
        assert len(os.listdir(f"/proc/{process.pid}/fd")) < 200
        for connection in idle:
            connection.close()
        idle = []
        stored = requests.post(f"{url.group(1)}/upload/storage/v1/b/after-idle/o", params={"uploadType": "media", "name": "x"},
                               data=b"x", timeout=60)
        assert stored.status_code == 200, stored.text
    finally:
        for connection in idle:
            connection.close()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()
