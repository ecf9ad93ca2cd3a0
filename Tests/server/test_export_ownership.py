"""Rule V9: an export and an import touch only what they own (issue 36). A Firebase project's export directory is
shared by every emulator (auth_export/, firestore_export/, one firebase-export-metadata.json listing them) and may
hold anything else, a bucket file among them; an export writes storage_export/ and the `storage` entry alone. An
import reads only regular files inside the export, refuses what it cannot take whole, and never pours an export
into a bucket that holds other objects without --replace. And nothing is written before a server can start."""
import hashlib
import json
import os
import socket
import subprocess

import pytest

from serving import BUCKET, Server, harness
from test_firebase_export import OBJECTS, emulator_json, emulator_metadata, import_peak_kib, make_export, read_export
from test_firebase_json import project


def tree(directory, skipping=()):
    """Every file under `directory` with its SHA-256 (links as links), but those under the top-level `skipping`."""
    found = {}
    for root, folders, files in os.walk(directory):
        relative_root = os.path.relpath(root, directory)
        if relative_root.split(os.sep)[0] in skipping:
            continue
        for name in files + [folder for folder in folders if os.path.islink(os.path.join(root, folder))]:
            path = os.path.join(root, name)
            relative = os.path.normpath(os.path.join(relative_root, name))
            if relative in skipping:
                continue
            if os.path.islink(path):
                found[relative] = "link to " + os.readlink(path)
            elif not os.path.isfile(path):
                found[relative] = "not a regular file"
            else:
                found[relative] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return found


def shared_project(directory):
    """A project directory as a developer's is: sources, other emulators' exports and their hub entries."""
    (directory / "src").mkdir(parents=True)
    (directory / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (directory / "notes.txt").write_bytes(b"mine \xff\n")
    (directory / "auth_export").mkdir()
    (directory / "auth_export" / "accounts.json").write_text('{"kind": "identitytoolkit#DownloadAccountResponse"}')
    (directory / "firestore_export" / "all_namespaces").mkdir(parents=True)
    (directory / "firestore_export" / "firestore_export.overall_export_metadata").write_bytes(b"\x00\x01binary")
    hub = {"version": "13.3.0", "firestore": {"version": "1.18.2", "path": "firestore_export",
                                              "metadata_file": "firestore_export/firestore_export.overall_export_metadata"},
           "auth": {"version": "13.3.0", "path": "auth_export"}}
    (directory / "firebase-export-metadata.json").write_text(json.dumps(hub, indent=2))
    return hub


def ok(home, *arguments):
    status, out, err = harness.storesh(home, *arguments)
    assert status == 0, err.decode()
    return out.decode(), err.decode()


def failed(home, *arguments, timeout=60):
    status, _, err = harness.storesh(home, *arguments, timeout=timeout)
    assert status != 0, "expected a refusal"
    return err.decode()


def app_bucket(tmp_path, name="app.bucket"):
    source = tmp_path / "source-export"
    if not source.exists():
        make_export(source)
    bucket = tmp_path / name
    ok(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(source))
    return bucket


def test_an_export_writes_only_storage_export_and_its_hub_entry(tmp_path):
    directory = tmp_path / "proj"
    hub = shared_project(directory)
    bucket = app_bucket(tmp_path)
    # The bucket file itself lives in the directory too.
    inside = directory / "app.bucket"
    inside.write_bytes(bucket.read_bytes())
    before = tree(directory, skipping=("storage_export", "firebase-export-metadata.json"))
    ok(tmp_path, "export", "--format", "firebase", "--bucket", str(inside), str(directory))
    assert tree(directory, skipping=("storage_export", "firebase-export-metadata.json")) == before
    written = json.loads((directory / "firebase-export-metadata.json").read_text())
    assert {key: value for key, value in written.items() if key != "storage"} == hub
    assert written["storage"]["path"] == "storage_export"
    assert set(read_export(directory)) == {name for name, _, _ in OBJECTS}
    # Nothing of the work is left beside it.
    assert not [name for name in os.listdir(directory) if name.startswith(".")]
    # Again over the first: the previous storage export is replaced, everything else is still kept.
    ok(tmp_path, "--bucket", str(inside), "-c", "rm photos/cat.txt")
    ok(tmp_path, "export", "--format", "firebase", "--bucket", str(inside), str(directory))
    assert tree(directory, skipping=("storage_export", "firebase-export-metadata.json", "app.bucket")) == \
        {key: value for key, value in before.items() if key != "app.bucket"}
    assert set(read_export(directory)) == {name for name, _, _ in OBJECTS} - {"photos/cat.txt"}
    assert inside.exists()


def test_an_export_onto_a_file_or_an_unreadable_hub_is_refused_and_nothing_changes(tmp_path):
    bucket = app_bucket(tmp_path)
    afile = tmp_path / "afile.txt"
    afile.write_text("keep me")
    err = failed(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(afile))
    assert "is a file, not a directory" in err and afile.read_text() == "keep me"
    directory = tmp_path / "proj"
    directory.mkdir()
    (directory / "firebase-export-metadata.json").write_text("not json {")
    err = failed(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(directory))
    assert "is not a JSON object" in err and "will not replace it" in err
    assert os.listdir(directory) == ["firebase-export-metadata.json"]
    assert (directory / "firebase-export-metadata.json").read_text() == "not json {"


def test_other_buckets_of_the_previous_export_are_kept_and_a_failure_midway_leaves_it(tmp_path):
    bucket = app_bucket(tmp_path)
    directory = tmp_path / "proj"
    make_export(directory)
    # A second bucket's object in the previous export, as the emulator writes one for `storage` arrays.
    other = emulator_metadata("kept.txt", b"other bucket", generation=1700000000009)
    other["bucket"] = "other-bucket"
    (directory / "storage_export" / "blobs" / "other-object").write_bytes(b"other bucket")
    (directory / "storage_export" / "metadata" / "other-object.json").write_text(emulator_json(other))
    ok(tmp_path, "--bucket", str(bucket), "-c", "rm photos/cat.txt")
    ok(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(directory))
    exported = read_export(directory)
    assert exported["kept.txt"][1] == b"other bucket" and "photos/cat.txt" not in exported
    assert {entry["id"] for entry in json.loads((directory / "storage_export" / "buckets.json").read_text())["buckets"]} \
        == {BUCKET, "other-bucket"}
    # Now the other bucket's content is a FIFO: the export stops midway, and the previous one is whole.
    blob = next(path for path in (directory / "storage_export" / "blobs").iterdir()
                if json.loads((directory / "storage_export" / "metadata" / (path.name + ".json")).read_text())["bucket"] == "other-bucket")
    blob.unlink()
    os.mkfifo(blob)
    before = tree(directory)
    err = failed(tmp_path, "export", "--format", "firebase", "--bucket", str(bucket), str(directory))
    assert "is not a regular file" in err and blob.name in err
    assert tree(directory) == before
    assert not [name for name in os.listdir(directory) if name.startswith(".")]


def test_serve_export_on_exit_keeps_the_directory_and_the_bucket_file_in_it(tmp_path):
    directory = tmp_path / "proj2"
    hub = shared_project(directory)
    before = tree(directory, skipping=("storage_export", "firebase-export-metadata.json"))
    server = Server(tmp_path, directory / "app.bucket", extra=("--export-on-exit", str(directory)))
    answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "a.txt"},
                            data=b"served")
    assert answer.status_code == 200, answer.text
    status, err = server.stop()
    assert status == 0, err
    assert (directory / "app.bucket").exists()
    after = tree(directory, skipping=("storage_export", "firebase-export-metadata.json"))
    assert {key: value for key, value in after.items() if not key.startswith("app.bucket")} == before
    assert {key: value for key, value in json.loads((directory / "firebase-export-metadata.json").read_text()).items()
            if key != "storage"} == hub
    assert {name: content for name, (_, content) in read_export(directory).items()} == {"a.txt": b"served"}


def hostile(tmp_path, change):
    """An export changed by `change(storage folder)`, imported; returns the refusal, after checking nothing landed."""
    source = tmp_path / f"hostile-{change.__name__}"
    make_export(source)
    change(source / "storage_export")
    bucket = tmp_path / f"{change.__name__}.bucket"
    err = failed(tmp_path, "import", "--format", "firebase", "--bucket", str(bucket), str(source), timeout=30)
    if bucket.exists():
        assert harness.export(tmp_path, str(bucket)) == {}
    return err


def first_blob(storage):
    return sorted((storage / "blobs").iterdir())[0]


def test_a_blob_that_is_a_link_a_fifo_or_outside_the_export_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")

    def link_out(storage):
        blob = first_blob(storage)
        blob.unlink()
        blob.symlink_to(outside / "secret.txt")

    assert "symbolic link" in hostile(tmp_path, link_out)

    def fifo(storage):
        blob = first_blob(storage)
        blob.unlink()
        os.mkfifo(blob)

    assert "pipe (FIFO)" in hostile(tmp_path, fifo)

    def linked_folder(storage):
        blob = first_blob(storage)
        (outside / blob.name).write_bytes(blob.read_bytes())
        (storage / "blobs" / "sub").symlink_to(outside)
        (storage / "metadata" / "sub").mkdir()
        os.rename(storage / "metadata" / (blob.name + ".json"), storage / "metadata" / "sub" / (blob.name + ".json"))
        blob.unlink()

    assert "is not a folder" in hostile(tmp_path, linked_folder)


@pytest.mark.parametrize("path", ["/etc", "../outside", "storage_export/../../outside"])
def test_a_storage_path_outside_the_export_is_refused(tmp_path, path):
    def point(storage):
        hub = storage.parent / "firebase-export-metadata.json"
        document = json.loads(hub.read_text())
        document["storage"]["path"] = path
        hub.write_text(json.dumps(document))

    assert "leads outside the export" in hostile(tmp_path, point)


def test_a_metadata_file_named_in_bytes_that_are_not_utf8_is_refused_not_skipped(tmp_path):
    def rename(storage):
        blob = first_blob(storage)
        os.rename(bytes(storage / "metadata" / (blob.name + ".json")), bytes(storage / "metadata") + b"/caf\xe9.json")
        os.rename(bytes(blob), bytes(storage / "blobs") + b"/caf\xe9")

    assert "not UTF-8" in hostile(tmp_path, rename)


def test_two_files_of_one_object_are_refused(tmp_path):
    def duplicate(storage):
        blob = first_blob(storage)
        (storage / "blobs" / "copy").write_bytes(blob.read_bytes())
        (storage / "metadata" / "copy.json").write_text((storage / "metadata" / (blob.name + ".json")).read_text())

    err = hostile(tmp_path, duplicate)
    assert "copy.json" in err and "each object once" in err


def test_serve_import_obeys_max_object_size(tmp_path):
    source = tmp_path / "big"
    make_export(source, [("big.bin", b"x" * (2 << 20), dict(generation=1700000000000))])
    status, _, err = harness.storesh(tmp_path, "serve", "--bucket", str(tmp_path / "big.bucket"), "--port", "0",
                                     "--no-config", "--import", str(source), "--max-object-size", "1")
    assert status != 0 and "--max-object-size" in err.decode()
    assert not (tmp_path / "big.bucket").exists()


def serve_import(tmp_path, source, *extra):
    """storesh serve --import without --bucket, stopped at once; returns (status, standard error)."""
    process = harness.start(tmp_path, "serve", "--port", "0", "--no-config", "--no-log", "--import", str(source), *extra)
    line = process.stdout.readline().decode()
    if "at http" in line:
        process.send_signal(2)
    _, err = process.communicate(timeout=60)
    return process.returncode, err.decode()


def test_serve_import_without_a_bucket_serves_the_export_from_a_file_of_its_own(tmp_path):
    # The default (teaching) bucket exists, and is not what an export goes into.
    ok(tmp_path, "-c", "ls")
    default = tmp_path / "data" / "storesh" / "default.bucket"
    teaching = harness.export(tmp_path, str(default))
    source = tmp_path / "data-dir"
    make_export(source)
    status, err = serve_import(tmp_path, source, "--export-on-exit", str(source))
    assert status == 0, err
    own = tmp_path / "data" / "storesh" / "imports" / f"{BUCKET}.bucket"
    assert f"gs://{BUCKET}" in err and own.exists()
    assert harness.export(tmp_path, str(default)) == teaching
    # The export written back keeps the export's bucket name.
    assert {json.loads(text)["bucket"] for text, _ in read_export(source).values()} == {BUCKET}
    # Again, as a project's emulators:start --import --export-on-exit loop does: the file holds exactly the export.
    status, err = serve_import(tmp_path, source, "--export-on-exit", str(source))
    assert status == 0, err
    assert "already holds the 3 objects" in err
    # A change served but not exported: the file no longer holds the export's objects, and is not replaced blindly.
    ok(tmp_path, "--bucket", str(own), "-c", "rm photos/cat.txt")
    status, err = serve_import(tmp_path, source)
    assert status == 2 and "--replace" in err and "not the export's" in err
    assert "photos/cat.txt" not in harness.export(tmp_path, str(own))
    status, err = serve_import(tmp_path, source, "--replace")
    assert status == 0, err
    assert "photos/cat.txt" in harness.export(tmp_path, str(own))


def test_a_serve_that_cannot_listen_writes_nothing(tmp_path):
    """The port is taken: neither firebase.json's rules nor an import reach the bucket file."""
    bucket = app_bucket(tmp_path)
    before = harness.files_of(str(bucket))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        project(tmp_path, port)
        source = tmp_path / "other-export"
        make_export(source, [("other.txt", b"other", dict(generation=1700000000005))])
        done = subprocess.run([harness.BINARY, "serve", "--bucket", str(bucket), "--no-log", "--import", str(source),
                               "--replace"], cwd=tmp_path, capture_output=True, env=harness.environment(tmp_path),
                              timeout=60)
    assert done.returncode == 1 and b"in use" in done.stderr, done.stderr
    assert harness.files_of(str(bucket)) == before


def test_a_300_mib_blob_is_imported_a_piece_at_a_time(tmp_path):
    """An export's content streams into the bucket in pieces: a 300 MiB blob imports in a fraction of its size (it
    took 946 MB before, whole three times over)."""
    source = tmp_path / "huge-export"
    piece = os.urandom(1 << 20)
    content_hash = hashlib.md5()
    storage = source / "storage_export"
    make_export(source, [])
    with open(storage / "blobs" / "huge", "wb") as blob:
        for _ in range(300):
            blob.write(piece)
            content_hash.update(piece)
    import base64
    document = emulator_metadata("videos/huge.bin", b"", generation=1700000000000)
    document.update(size=300 << 20, md5Hash=base64.b64encode(content_hash.digest()).decode())
    del document["crc32c"]
    (storage / "metadata" / "huge.json").write_text(emulator_json(document))
    bucket = tmp_path / "huge.bucket"
    peak_kib = import_peak_kib(tmp_path, source, bucket)
    assert peak_kib < 64 << 10, f"peak RSS {peak_kib >> 10} MiB importing a 300 MiB object"
    meta = json.loads(ok(tmp_path, "--bucket", str(bucket), "--json", "-c", "meta get --raw videos/huge.bin")[0])
    assert meta["size"] == 300 << 20 and meta["md5Hash"] == document["md5Hash"]
