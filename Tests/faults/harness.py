"""Running the built storesh on bucket files, for the fault and bad-input tests.

STORESH_BINARY names the binary under test (scripts/test sets it). Every process gets a clean environment
with its own HOME, so nothing here touches the user's default bucket.
"""
import hashlib
import json
import os
import subprocess

BINARY = os.path.abspath(os.environ.get("STORESH_BINARY", ".build/debug/storesh"))
SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "teaching.json")


def environment(home, **extra):
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home) + "/data", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "NO_COLOR": "1"}
    env.update(extra)
    return env


def storesh(home, *arguments, stdin=None, timeout=120, **extra):
    """Runs storesh to the end: (status, stdout, stderr), the output as bytes."""
    done = subprocess.run([BINARY, *arguments], input=stdin, capture_output=True, env=environment(home, **extra),
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def start(home, *arguments, **extra):
    """Starts storesh without waiting (for the kill tests)."""
    return subprocess.Popen([BINARY, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=environment(home, **extra))


def make_bucket(home, name, objects):
    """NAME.bucket holding `objects` (archive entries), made with `storesh import`."""
    bucket = str(home / f"{name}.bucket")
    archive = home / f"{name}.json"
    archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1, "objects": objects}))
    status, _, err = storesh(home, "import", "--bucket", bucket, str(archive))
    assert status == 0, err
    return bucket


def teaching_bucket(home, name="teaching"):
    bucket = str(home / f"{name}.bucket")
    status, _, err = storesh(home, "import", "--bucket", bucket, SAMPLE)
    assert status == 0, err
    return bucket


def export(home, bucket):
    """The bucket's objects (metadata and content) by name, read through storesh."""
    status, out, err = storesh(home, "export", "--bucket", bucket)
    assert status == 0, err
    return {entry["name"]: entry for entry in json.loads(out)["objects"]}


def check(home, bucket):
    """`storesh check --json`: (status, report or error document)."""
    status, out, err = storesh(home, "check", "--json", "--bucket", bucket)
    return status, json.loads(out or err)


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def files_of(bucket):
    """The bucket file and whatever SQLite keeps beside it, with their digests."""
    return {suffix: digest(bucket + suffix) for suffix in ("", "-wal", "-shm", "-journal")
            if os.path.exists(bucket + suffix) and (suffix == "" or os.path.getsize(bucket + suffix) > 0)}
