"""Damaged bucket files: truncated, bytes flipped, or not a bucket at all.

Every command must report the damage with a clear message and exit 1, and no command may change the
file. A flipped byte may land where nothing is stored (free space inside a page); then `storesh check`
may find the bucket sound, and the bucket must read back exactly as before. What is never allowed: check
calling a bucket sound while it reads back differently.

STORESH_FAULT_FLIPS sets how many single-byte flips to try (scripts/test: a short form).
"""
import json
import os
import random
import shutil
import sqlite3

import pytest

from harness import check, digest, export, storesh, teaching_bucket

FLIPS = int(os.environ.get("STORESH_FAULT_FLIPS", "40"))
SEED = int(os.environ.get("STORESH_FAULT_SEED", "1"))
DAMAGE_WORDS = ("damaged", "not a storesh bucket", "truncated", "empty file", "is a directory")


def assert_refused(home, bucket, words=DAMAGE_WORDS):
    """Reading, writing and checking the file all fail with a message naming the damage; the file is unchanged."""
    before = digest(bucket) if os.path.isfile(bucket) else None
    for arguments in (["-c", "ls"], ["-c", "put --data x new"], ["export"], ["check"]):
        status, out, err = storesh(home, "--bucket", bucket, *arguments) if arguments[0] == "-c" else \
            storesh(home, *arguments, "--bucket", bucket)
        text = (out + err).decode()
        assert status == 1, f"{arguments} on a damaged file exited {status}: {text}"
        assert any(word in text for word in words), f"{arguments}: unclear message: {text}"
        if before is not None:
            assert digest(bucket) == before, f"{arguments} changed the damaged file"


@pytest.fixture
def sound_bucket(tmp_path):
    bucket = teaching_bucket(tmp_path)
    return bucket, export(tmp_path, bucket)


@pytest.mark.parametrize("keep", ["header", "one page", "half", "all but one page"])
def test_truncated(tmp_path, sound_bucket, keep):
    bucket, _ = sound_bucket
    size = os.path.getsize(bucket)
    length = {"header": 60, "one page": 4096, "half": size // 2, "all but one page": size - 4096}[keep]
    with open(bucket, "r+b") as file:
        file.truncate(length)
    assert_refused(tmp_path, bucket)


def test_flipped_bytes(tmp_path, sound_bucket):
    bucket, original = sound_bucket
    generator = random.Random(SEED)
    pristine = bucket + ".pristine"
    shutil.copyfile(bucket, pristine)
    size = os.path.getsize(pristine)
    counts = {"flips": 0, "detected": 0, "harmless": 0}
    for _ in range(FLIPS):
        shutil.copyfile(pristine, bucket)
        position = generator.randrange(size)
        with open(bucket, "r+b") as file:
            file.seek(position)
            byte = file.read(1)[0]
            file.seek(position)
            file.write(bytes([byte ^ (1 << generator.randrange(8))]))
        damaged = digest(bucket)
        status, report = check(tmp_path, bucket)
        counts["flips"] += 1
        assert digest(bucket) == damaged, f"check changed the file (flip at {position})"
        if status == 0:
            assert report["sound"]
            assert export(tmp_path, bucket) == original, f"flip at byte {position}: check says sound, data differs"
            counts["harmless"] += 1
        else:
            assert status == 1 and ("error" in report or not report["sound"]), report
            counts["detected"] += 1
        assert digest(bucket) == damaged, f"reading changed the file (flip at {position})"
    print(f"\nflipped bytes (seed {SEED}): " + " ".join(f"{key}={value}" for key, value in counts.items()))
    if os.environ.get("STORESH_FAULT_REPORT"):
        with open(os.environ["STORESH_FAULT_REPORT"], "a") as file:
            file.write(json.dumps({"test": "flips", "seed": SEED, **counts}) + "\n")
    assert counts["detected"] > 0


def test_value_flipped_in_a_row_is_refused_by_every_command_that_reads_it(tmp_path, sound_bucket):
    bucket, _ = sound_bucket
    data = bytearray(open(bucket, "rb").read())
    position = data.find(b"images/forest.jpg")
    assert position > 0
    for index in range(len(data) - 17):
        if data[index:index + 17] == b"images/forest.jpg":
            data[index + 7] = ord("F")  # images/Forest.jpg in the row and in the name index alike
    open(bucket, "wb").write(bytes(data))
    before = digest(bucket)
    for script in ["meta get images/Forest.jpg", "cat images/Forest.jpg", "meta set contentType=x -- images/*"]:
        status, _, err = storesh(tmp_path, "--bucket", bucket, "-c", script)
        assert status == 1 and b"is damaged" in err, (script, err)
    assert digest(bucket) == before
    status, report = check(tmp_path, bucket)
    assert status == 1 and not report["sound"]
    assert any("images/Forest.jpg" in problem for problem in report["problems"]), report


def make_foreign_sqlite(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    connection.close()


def make_newer_bucket(path, source):
    shutil.copyfile(source, path)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 99")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("kind, words", [
    ("png", ("not a storesh bucket",)),
    ("text", ("not a storesh bucket",)),
    ("empty", ("empty file",)),
    ("directory", ("is a directory",)),
    ("foreign sqlite", ("not a storesh bucket",)),
    ("archive json", ("not a storesh bucket",)),
    ("newer format", ("newer storesh",)),
])
def test_not_a_bucket(tmp_path, sound_bucket, kind, words):
    path = str(tmp_path / "wrong.bucket")
    if kind == "png":
        open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    elif kind == "text":
        open(path, "w").write("these are my notes, not a bucket\n" * 200)
    elif kind == "empty":
        open(path, "w").close()
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "foreign sqlite":
        make_foreign_sqlite(path)
    elif kind == "archive json":
        shutil.copyfile(os.path.join(os.path.dirname(__file__), "..", "..", "samples", "teaching.json"), path)
    else:
        make_newer_bucket(path, sound_bucket[0])
    assert_refused(tmp_path, path, words)
