"""The bucket file's lifecycle: every way out of storesh leaves the bucket as one file (no log beside it), a log
left by a crash is applied to its own file only, and `storesh backup` makes copies and restores them safely.

The three findings these reproduce: a log left behind made every later open replay it (slow cold starts); a
deleted default bucket came back from its log when it was re-created; and a copy put over a bucket file was
overlaid with the old file's log.
"""
import os
import shutil
import signal
import time

from harness import digest, export, make_bucket, start, storesh

SIDECARS = ("-wal", "-shm", "-journal")


def sidecars(bucket):
    return [suffix for suffix in SIDECARS if os.path.exists(bucket + suffix)]


def wait_until_open(bucket, process):
    """Until `process` has the bucket open (SQLite's index beside it exists) or has ended; bounded."""
    for _ in range(2000):
        if os.path.exists(bucket + "-shm") or process.poll() is not None:
            return
        time.sleep(0.005)


def names(home, bucket):
    return sorted(export(home, bucket))


def test_every_way_out_leaves_one_file(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": f"k/{i:04d}", "text": "x"} for i in range(2000)])
    assert sidecars(bucket) == [], "import"
    script = tmp_path / "fix.store"
    script.write_text("meta set cacheControl=no-cache -- k/**\nexit\nrm k/0001\n")
    ways = {
        "a command that succeeds": (["-c", "put --data one a"], 0),
        "a command that fails": (["-c", "rm missing"], 1),
        "a syntax error": (["-c", "ls --al"], 2),
        "a script ending in exit": (["run", str(script)], 0),
        "a dry run": (["run", "--dry-run", str(script)], 0),
        "a script that fails halfway": (["-c", "rm k/0002; rm missing"], 1),
        "a script on standard input": ([], 0),
        "export": (["export", str(tmp_path / "out.json")], 0),
        "check": (["check"], 0),
        "backup": (["backup", str(tmp_path / "copy.bucket")], 0),
        "an unknown option": (["--frobnicate"], 2),
    }
    for way, (arguments, expected) in ways.items():
        status, _, err = storesh(tmp_path, "--bucket", bucket, *arguments, stdin=b"ls -n 1\n")
        assert status == expected, f"{way}: {err}"
        assert sidecars(bucket) == [], f"{way} left {sidecars(bucket)}"
    assert sidecars(str(tmp_path / "copy.bucket")) == []


def test_interrupted_script_closes_the_bucket(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": f"k/{i:04d}", "text": "x"} for i in range(2000)])
    before = export(tmp_path, bucket)
    script = tmp_path / "long.store"
    script.write_text("".join(f"meta set custom.round={n} -- k/**\n" for n in range(400)))
    process = start(tmp_path, "--bucket", bucket, "run", str(script))
    wait_until_open(bucket, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert b"Interrupted; nothing of this run was saved." in err
    assert sidecars(bucket) == []
    assert export(tmp_path, bucket) == before


def test_a_crash_leaves_a_log_that_is_applied_to_its_own_file(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": "x", "text": "one"}])
    status, _, _ = storesh(tmp_path, "--bucket", bucket, "-c", "put --data two y", STORESH_FAULT="crash-after-commit")
    assert status == -signal.SIGKILL
    assert os.path.getsize(bucket + "-wal") > 0, "the crash left the change in the log"
    assert names(tmp_path, bucket) == ["x", "y"], "the change landed before the crash"
    assert sidecars(bucket) == []


def test_a_deleted_bucket_does_not_come_back_from_its_log(tmp_path):
    default = tmp_path / "data" / "storesh" / "default.bucket"
    status, _, err = storesh(tmp_path, "-c", "put --data secret notes/secret.txt",
                             STORESH_FAULT="crash-after-commit")
    assert status == -signal.SIGKILL, err
    assert os.path.getsize(str(default) + "-wal") > 0
    os.remove(default)
    status, out, err = storesh(tmp_path, "-c", "ls notes")
    assert status == 0, err
    assert b"created the default bucket gs://teaching from the teaching sample" in err
    assert b"secret" not in out, "the deleted bucket's object came back from its log"
    status, out, _ = storesh(tmp_path, "check")
    assert status == 0, out


def test_a_copy_put_over_a_bucket_with_a_log_is_refused_and_backup_restores_it(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": "x", "text": "one"}])
    backup = str(tmp_path / "backup.bucket")
    status, _, err = storesh(tmp_path, "backup", "--bucket", bucket, backup)
    assert status == 0, err
    assert b"backed up gs://b (1 object)" in err
    assert storesh(tmp_path, "--bucket", bucket, "-c", "put --data two y")[0] == 0
    status, _, _ = storesh(tmp_path, "--bucket", bucket, "-c", "put --data three z", STORESH_FAULT="crash-after-commit")
    assert status == -signal.SIGKILL
    # The finding: cp of a copy over a file whose log a crash left. The log must not be applied to the copy.
    shutil.copyfile(backup, bucket)
    copied = digest(bucket)
    status, out, err = storesh(tmp_path, "--bucket", bucket, "-c", "ls")
    assert status == 1
    assert f"{bucket}-wal was not written for {bucket}".encode() in err, err
    assert b"storesh will not apply it" in err
    assert digest(bucket) == copied, "a refused open changed the file"
    # The safe way: storesh backup from the copy over the bucket.
    status, _, err = storesh(tmp_path, "backup", "--bucket", backup, bucket)
    assert status == 0, err
    assert names(tmp_path, bucket) == ["x"]
    assert sidecars(bucket) == [] and sidecars(backup) == []


def test_backup_refusals(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": "x", "text": "one"}])
    document = tmp_path / "notes.txt"
    document.write_text("mine")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    cases = {
        str(document): b"exists and is not a storesh bucket; storesh will not overwrite it",
        str(empty): b"exists and is not a storesh bucket; storesh will not overwrite it",
        bucket: b"is the bucket itself",
        str(tmp_path) + "/": b"is a directory; give the path of the copy to write, e.g. " + str(tmp_path).encode() + b"/b.bucket",
        str(tmp_path / "nodir" / "x.bucket"): b"there is no directory " + str(tmp_path / "nodir").encode(),
    }
    for destination, message in cases.items():
        status, _, err = storesh(tmp_path, "backup", "--bucket", bucket, destination)
        assert status == 1 and message in err, (destination, err)
    assert document.read_text() == "mine" and empty.read_text() == ""
    status, _, err = storesh(tmp_path, "backup", "--bucket", str(tmp_path / "none.bucket"), str(tmp_path / "c.bucket"))
    assert status == 1 and b"does not exist" in err, err
    assert not os.path.exists(tmp_path / "none.bucket") and not os.path.exists(tmp_path / "c.bucket")


def test_backup_while_another_process_writes(tmp_path):
    bucket = make_bucket(tmp_path, "b", [{"name": f"k/{i:04d}", "text": "x"} for i in range(500)])
    script = tmp_path / "grow.store"
    script.write_text("".join(f"put --data {n} new/{n:05d}\n" for n in range(3000)))
    writer = start(tmp_path, "--bucket", bucket, "run", str(script))
    wait_until_open(bucket, writer)
    copy = str(tmp_path / "copy.bucket")
    status, _, err = storesh(tmp_path, "backup", "--bucket", bucket, copy)
    assert status == 0, err
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    # The copy is one state of the bucket: before the script's transaction or after it, never inside it.
    copied = names(tmp_path, copy)
    assert len(copied) in (500, 3500), len(copied)
    status, out, _ = storesh(tmp_path, "check", "--bucket", copy)
    assert status == 0, out
    assert len(names(tmp_path, bucket)) == 3500
