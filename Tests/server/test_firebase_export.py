"""storesh as a drop-in for the Firebase Storage emulator's data (issue 25): the firebase-tools export layout
(`firebase emulators:export DIR`, `--import DIR`, `--export-on-exit DIR`), made here from its documented format
(firebase-tools src/emulator/storage: files.ts, metadata.ts, crc.ts; hubExport.ts), read by `storesh import
--format firebase` and `storesh serve --import`, and written back byte for byte by `storesh export --format
firebase` and `--export-on-exit`."""
import base64
import hashlib
import json
import os
import signal
import subprocess
import uuid

import google_crc32c
import requests

from serving import Server, harness

BUCKET = "demo-app.appspot.com"


def crc32c(data):
    """CRC-32C (Castagnoli), as the emulator's crc.ts computes it, by the C library google-cloud-storage uses."""
    return google_crc32c.value(data)


def emulator_json(value):
    """As the emulator writes its files: JSON.stringify(value, undefined, 2), no newline at the end."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def emulator_metadata(name, content, *, generation, metageneration=1, content_type="application/octet-stream",
                      tokens=(), custom=None, extra=None, created="2023-11-14T22:13:20.000Z", updated=None):
    """An object's metadata file, keys in the emulator's order (metadata.ts, StoredFileMetadata)."""
    document = {"name": name, "bucket": BUCKET, "metageneration": metageneration, "generation": generation,
                "contentType": content_type, "storageClass": "STANDARD"}
    document.update(extra or {})
    etag = base64.b64encode(hashlib.sha1(f"{generation}/{metageneration}".encode()).digest()).decode()[:-1]
    document.update({"downloadTokens": list(tokens), "etag": etag})
    if custom:
        document["customMetadata"] = custom
    document.update({"timeCreated": created, "updated": updated or created, "size": len(content),
                     "md5Hash": base64.b64encode(hashlib.md5(content).digest()).decode(), "crc32c": str(crc32c(content))})
    return document


# Names a teacher's or an app's bucket holds: nested, odd characters, a folder object, an empty file.
OBJECTS = [
    ("photos/cat.txt", b"hello world", dict(generation=1700000000000, content_type="text/plain",
                                          tokens=[str(uuid.UUID(int=1))], custom={"owner": "alice", "rating": "5"},
                                          extra={"contentDisposition": "inline", "cacheControl": "public, max-age=60"})),
    ("users/ada/é ü+%.bin", bytes(range(256)), dict(generation=1700000000001, metageneration=3,
                                                   tokens=[str(uuid.UUID(int=2)), str(uuid.UUID(int=3))],
                                                   updated="2023-11-15T08:00:00.123Z")),
    ("folder/", b"", dict(generation=1700000000002, content_type="text/plain")),
]


def make_export(directory, objects=OBJECTS, nested=False):
    """An export directory as the emulator writes it (nested=True: the older nested layout, which it still reads)."""
    storage = directory / "storage_export"
    (storage / "blobs").mkdir(parents=True)
    (storage / "metadata").mkdir(parents=True)
    (directory / "firebase-export-metadata.json").write_text(
        emulator_json({"version": "15.28.1", "storage": {"version": "15.28.1", "path": "storage_export"}}))
    (storage / "buckets.json").write_text(emulator_json({"buckets": [{"id": BUCKET}]}))
    documents = {}
    for name, content, options in objects:
        file = f"{BUCKET}/{name}" if nested and not name.endswith("/") else str(uuid.uuid4())
        (storage / "blobs" / file).parent.mkdir(parents=True, exist_ok=True)
        (storage / "metadata" / file).parent.mkdir(parents=True, exist_ok=True)
        (storage / "blobs" / file).write_bytes(content)
        documents[name] = emulator_json(emulator_metadata(name, content, **options))
        (storage / "metadata" / f"{file}.json").write_text(documents[name])
    return documents


def read_export(directory):
    """An export's objects: name → (metadata file text, content), whatever the files are named."""
    storage = directory / "storage_export"
    found = {}
    for root, _, files in os.walk(storage / "metadata"):
        for file in files:
            text = open(os.path.join(root, file), encoding="utf-8").read()
            relative = os.path.relpath(os.path.join(root, file), storage / "metadata")[:-len(".json")]
            found[json.loads(text)["name"]] = (text, (storage / "blobs" / relative).read_bytes())
    return found


def ok(home, *arguments):
    status, out, err = harness.storesh(home, *arguments)
    assert status == 0, err.decode()
    return out.decode(), err.decode()


def test_an_emulator_export_round_trips_byte_for_byte_through_storesh(tmp_path):
    source = tmp_path / "emulator-data"
    documents = make_export(source)
    bucket = tmp_path / "app.bucket"
    _, err = ok(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(source))
    assert "3 objects" in err
    # What storesh then holds: the metadata, custom metadata and tokens, generations and times of the export.
    meta = json.loads(ok(tmp_path, "--bucket", str(bucket), "--json", "-c", "meta get --raw photos/cat.txt")[0])
    assert meta["contentType"] == "text/plain" and meta["cacheControl"] == "public, max-age=60"
    assert meta["customMetadata"] == {"owner": "alice", "rating": "5", "firebaseStorageDownloadTokens": str(uuid.UUID(int=1))}
    assert meta["generation"] == "1700000000000" and meta["timeCreated"] == "2023-11-14T22:13:20.000Z"
    assert ok(tmp_path, "--bucket", str(bucket), "-c", "cat photos/cat.txt")[0] == "hello world"
    # Written back: every metadata file and every content byte for byte, in the emulator's format.
    out = tmp_path / "exported"
    ok(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(out))
    exported = read_export(out)
    assert {name: text for name, (text, _) in exported.items()} == documents
    assert {name: content for name, (_, content) in exported.items()} == {name: content for name, content, _ in OBJECTS}
    assert json.loads((out / "firebase-export-metadata.json").read_text())["storage"]["path"] == "storage_export"
    assert json.loads((out / "storage_export" / "buckets.json").read_text()) == {"buckets": [{"id": BUCKET}]}


def test_the_older_nested_layout_is_read_too(tmp_path):
    source = tmp_path / "emulator-data"
    make_export(source, nested=True)
    bucket = tmp_path / "app.bucket"
    ok(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(source))
    listed = json.loads(ok(tmp_path, "--bucket", str(bucket), "--json", "-c", "ls users/ada")[0])
    assert listed["items"] == ["users/ada/é ü+%.bin"]


def test_a_damaged_export_is_refused_naming_the_file_and_nothing_is_imported(tmp_path):
    source = tmp_path / "emulator-data"
    make_export(source)
    blob = next((source / "storage_export" / "blobs").iterdir())
    blob.write_bytes(blob.read_bytes() + b"!")
    bucket = tmp_path / "app.bucket"
    status, _, err = harness.storesh(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(source))
    assert status == 1
    assert blob.name + ".json" in err.decode() and "the content beside it" in err.decode()
    status, _, err = harness.storesh(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(tmp_path / "nowhere"))
    assert status == 1 and "firebase-export-metadata.json" in err.decode()


def test_serve_imports_an_export_and_writes_one_on_exit_with_what_the_clients_changed(tmp_path, monkeypatch):
    source = tmp_path / "emulator-data"
    make_export(source)
    out = tmp_path / "on-exit"
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--import", str(source), "--export-on-exit", str(out)))
    try:
        # The new bucket file is named after the export's bucket, and holds its objects.
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        client = storage.Client(project="demo-app", credentials=AnonymousCredentials())
        bucket = client.bucket(BUCKET)
        assert bucket.blob("photos/cat.txt").download_as_bytes() == b"hello world"
        bucket.blob("new/upload.txt").upload_from_string(b"made while served", content_type="text/plain")
        # A download through the Firebase v0 API with the imported token works.
        token = str(uuid.UUID(int=1))
        answer = requests.get(f"{server.url}/v0/b/{BUCKET}/o/photos%2Fcat.txt?alt=media&token={token}", timeout=30)
        assert answer.status_code == 200 and answer.content == b"hello world"
    finally:
        status, err = server.stop(signal.SIGINT)
    assert status == 0, err
    # One line says what the served bucket holds: the export's objects (not that a new file was empty).
    assert f"gs://{BUCKET} now holds exactly the export's 3 objects from {source}" in err
    assert "created an empty bucket" not in err
    exported = read_export(out)
    assert set(exported) == {name for name, _, _ in OBJECTS} | {"new/upload.txt"}
    text, content = exported["new/upload.txt"]
    made = json.loads(text)
    assert content == b"made while served" and made["size"] == len(content)
    assert made["crc32c"] == str(crc32c(content)) and made["md5Hash"] == base64.b64encode(hashlib.md5(content).digest()).decode()
    assert made["bucket"] == BUCKET and made["contentType"] == "text/plain"
    assert exported["photos/cat.txt"][1] == b"hello world"


def import_peak_kib(home, source, bucket):
    """`storesh import --format firebase` of `source` into `bucket`, measured: its peak RSS in KiB."""
    measure = home / "peak.txt"
    done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(measure), harness.BINARY, "import", "--format",
                           "firebase", "--bucket", str(bucket), str(source)],
                          capture_output=True, env=harness.environment(home), timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    return int(measure.read_text().split()[-1])


def test_an_import_holds_one_object_at_a_time_not_the_export(tmp_path):
    """An export of 192 MiB (48 objects of 4 MiB) is checked and imported with a peak memory well under its size:
    each content is measured a piece at a time, and read whole only in its turn to be written."""
    piece = os.urandom(4 << 20)
    objects = [(f"videos/{index:02}.bin", piece[index:] + piece[:index], dict(generation=1700000000000 + index))
               for index in range(48)]
    source = tmp_path / "big-export"
    make_export(source, objects)
    bucket = tmp_path / "big.bucket"
    peak_kib = import_peak_kib(tmp_path, source, bucket)
    assert peak_kib < 96 << 10, f"peak RSS {peak_kib >> 10} MiB importing a 192 MiB export"
    back = tmp_path / "back"
    ok(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(back))
    exported = read_export(back)
    assert len(exported) == 48
    assert all(exported[name][1] == content for name, content, _ in objects)


def test_a_server_whose_standard_error_is_gone_still_stops_and_exports(tmp_path):
    """`storesh serve … 2>&1 | tee log` stopped with Ctrl-C: tee goes first, so the server's last words meet a
    closed pipe. They are lost, nothing else: it stops with 0 and writes its export (it crashed before)."""
    import re
    export = tmp_path / "on-exit"
    process = harness.start(tmp_path, "serve", "--bucket", str(tmp_path / "app.bucket"), "--name", BUCKET, "--port", "0",
                            "--no-config", "--log", "--export-on-exit", str(export))
    url = re.search(r"at (http://127\.0\.0\.1:\d+)", process.stdout.readline().decode()).group(1)
    process.stderr.close()  # whoever read standard error is gone
    answer = requests.post(f"{url}/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "kept.txt"},
                           data=b"kept", timeout=30)
    assert answer.status_code == 200, answer.text
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0
    assert {name: content for name, (_, content) in read_export(export).items()} == {"kept.txt": b"kept"}


def test_an_export_in_the_emulators_layout_keeps_the_storage_class_and_says_what_it_leaves_out(tmp_path):
    """The emulator's metadata files have a storage class, and no place for holds, retention, custom times, contexts,
    generations other than the live one or bucket settings: the class goes there and comes back; the rest is named as
    left out, never dropped without a word (issue 54)."""
    bucket = tmp_path / "fields.bucket"
    status, _, err = harness.storesh(tmp_path, "--bucket", str(bucket), "--quiet", "-c",
                                     "put --data a a.txt; put --data b b.txt; meta set storageClass=NEARLINE -- a.txt; "
                                     "meta set temporaryHold=true -- b.txt")
    assert status == 0, err.decode()
    status, _, err = harness.storesh(tmp_path, "--bucket", str(bucket), "export", "--format", "firebase", str(tmp_path / "exp"))
    assert status == 0, err.decode()
    assert (b"storesh: warning: left out, as the Firebase emulator's export has no place for them: Cloud Storage's own fields "
            b"(holds, retention, custom time, contexts) of 1 object (storesh export, as JSON, keeps them)") in err, err.decode()
    back = tmp_path / "back.bucket"
    status, _, err = harness.storesh(tmp_path, "--bucket", str(back), "import", "--format", "firebase", str(tmp_path / "exp"))
    assert status == 0, err.decode()
    status, out, err = harness.storesh(tmp_path, "--bucket", str(back), "--quiet", "--json", "-c", "meta get a.txt")
    assert status == 0 and json.loads(out)["storageClass"] == "NEARLINE", out + err
