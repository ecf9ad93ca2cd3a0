"""What a killed storesh left of its own making is removed by the next run that works there, and only that: its
temporary names carry its process number, so a live process's files, and every other file, stay (issue 53)."""
import os
import subprocess
import uuid

import harness


def dead_pid():
    """The number of a process that has ended (ours to start and wait for)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_killed_bucket_creation_leaves_nothing_the_next_creation_does_not_remove(tmp_path):
    gone = dead_pid()
    stale = [f".new.bucket.creating-{gone}-12345", f".new.bucket.creating-{gone}-12345-wal", f".old.bucket.backup-{gone}-7"]
    kept = [f".new.bucket.creating-{os.getpid()}-1", ".new.bucket.creating-notanumber-1", "notes.txt", f"creating-{gone}-1"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x")
    status, _, err = harness.storesh(tmp_path, "--bucket", str(tmp_path / "made.bucket"), "-c", "ls")
    assert status == 0, err.decode()
    left = {path.name for path in tmp_path.iterdir()}
    assert not left & set(stale), left
    assert set(kept) <= left


def test_a_killed_export_leaves_nothing_the_next_export_does_not_remove(tmp_path):
    bucket = str(tmp_path / "app.bucket")
    assert harness.storesh(tmp_path, "--bucket", bucket, "--quiet", "-c", "put --data one a.txt")[0] == 0
    export = tmp_path / "emulator-data"
    export.mkdir()
    gone, alive = dead_pid(), os.getpid()
    stale_folder = export / f".storage_export.storesh-{gone}-{str(uuid.uuid4()).upper()}"
    (stale_folder / "blobs").mkdir(parents=True)
    (stale_folder / "blobs" / "x").write_bytes(b"half an export")
    retired = export / f".storage_export.storesh-old-{gone}-{str(uuid.uuid4()).upper()}"
    retired.mkdir()
    stale_hub = export / f".firebase-export-metadata.json.storesh-{gone}-{str(uuid.uuid4()).upper()}"
    stale_hub.write_text("{}")
    live = export / f".storage_export.storesh-{alive}-{str(uuid.uuid4()).upper()}"
    live.mkdir()
    other = export / "auth_export"
    other.mkdir()
    status, _, err = harness.storesh(tmp_path, "export", "--format", "firebase", "--bucket", bucket, str(export))
    assert status == 0, err.decode()
    assert not stale_folder.exists() and not retired.exists() and not stale_hub.exists()
    assert live.exists() and other.exists() and (export / "storage_export" / "buckets.json").exists()
