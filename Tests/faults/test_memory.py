"""Bulk edits in bounded memory (issue 23): a plan is streamed through its store, never held whole.

A 200,000-object dry run and apply must stay far under what a whole-plan run takes (about 470 MB for 200,000
objects before plans were streamed: 2.35 GB for 1,000,000). Peak RSS is the kernel's count for the child
(ru_maxrss), so a regression to gathering the plan in memory fails here. Timings live in scripts/bench.
"""
import json
import os
import resource
import subprocess

from harness import BINARY, environment

OBJECTS = 200_000
# Whole-plan memory for this many objects is several hundred MiB; streamed, a debug build stays near 100 MiB.
LIMIT_MIB = 192


def peak_rss_mib(home, *arguments, binary=BINARY, **extra):
    """Runs storesh (or, with binary=None, the command in arguments) in a child of its own and returns (status,
    stdout, stderr, its peak RSS in MiB)."""
    script = ("import resource, subprocess, sys\n"
              "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
              "sys.stdout.buffer.write(done.stdout); sys.stderr.buffer.write(done.stderr)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
              "sys.exit(done.returncode)\n")
    command = [binary, *arguments] if binary else list(arguments)
    done = subprocess.run(["python3", "-c", script, *command], capture_output=True,
                          env=environment(home, **extra), timeout=900)
    *err, rss = done.stderr.decode().rstrip("\n").split("\n")
    return done.returncode, done.stdout.decode(), "\n".join(err), int(rss) / 1024


def imported_bucket(home, name, object_names):
    """NAME.bucket in `home`, holding an object of one byte for each name, imported from an archive written a line
    at a time (and removed after)."""
    archive = home / f"{name}.json"
    with open(archive, "w") as out:
        out.write('{"format":"storesh-bucket","version":1,"bucket":"%s","objects":[\n' % name)
        out.write(",\n".join(json.dumps({"name": object_name, "text": "x"}) for object_name in object_names))
        out.write("\n]}\n")
    bucket = str(home / f"{name}.bucket")
    done = subprocess.run([BINARY, "import", "--bucket", bucket, str(archive)], capture_output=True,
                          env=environment(home), timeout=900)
    assert done.returncode == 0, done.stderr
    os.remove(archive)
    return bucket


def test_a_bulk_edit_of_200000_objects_runs_in_bounded_memory(tmp_path):
    bucket = imported_bucket(tmp_path, "big", (f"users/u{n // 100:05d}/photos/{n % 100:03d}.jpg" for n in range(OBJECTS)))
    edit = "meta set cacheControl=no-cache custom.k=v -- users/**"

    status, out, err, dry = peak_rss_mib(tmp_path, "--bucket", bucket, "--dry-run", "--summary", "-c", edit)
    assert status == 0, err
    assert "would update 200,000 objects, 0 unchanged" in out
    assert dry < LIMIT_MIB, f"a dry run of {OBJECTS} objects peaked at {dry:.0f} MiB"

    status, out, err, applied = peak_rss_mib(tmp_path, "--bucket", bucket, "--json", "-c", edit)
    assert status == 0, err
    document = json.loads(out)
    assert len(document["updated"]) == OBJECTS and document["unchanged"] == []
    assert applied < LIMIT_MIB, f"applying to {OBJECTS} objects peaked at {applied:.0f} MiB"

    # Again: every object is unchanged now, and the document still lists each (written in pieces).
    status, out, err, again = peak_rss_mib(tmp_path, "--bucket", bucket, "--json", "-c", edit)
    assert status == 0, err
    document = json.loads(out)
    assert document["updated"] == [] and len(document["unchanged"]) == OBJECTS
    assert document["unchanged"][0] == "users/u00000/photos/000.jpg"
    assert again < LIMIT_MIB


# Rule N2: a snapshot's differences go through a page at a time. Gathered whole, diff and restore took about
# 1.3 KB a difference (213 to 254 MB for 150,000).
SNAPSHOT_LIMIT_MIB = 64


def test_a_snapshot_diff_and_restore_of_200000_differences_run_in_bounded_memory(tmp_path):
    bucket = imported_bucket(tmp_path, "snap", (f"d/{n:06d}.txt" for n in range(OBJECTS)))
    done = subprocess.run([BINARY, "--bucket", bucket, "--quiet", "--summary", "-c", "snapshot save s1; meta set custom.k=v -- d/*"],
                          capture_output=True, env=environment(tmp_path), timeout=900)
    assert done.returncode == 0, done.stderr

    status, out, err, diffed = peak_rss_mib(tmp_path, "--bucket", bucket, "--quiet", "-c", "snapshot diff s1")
    assert status == 0, err
    assert out.count("\n") == 2 * OBJECTS + 1 and out.endswith(f"{OBJECTS:,} objects differ from snapshot s1 to now: 0 added, 0 removed, {OBJECTS:,} changed\n")
    assert diffed < SNAPSHOT_LIMIT_MIB, f"a diff of {OBJECTS} differences peaked at {diffed:.0f} MiB"
    # As JSON, the one document is written from spools, not gathered (issue 52).
    status, out, err, as_json = peak_rss_mib(tmp_path, "--bucket", bucket, "--quiet", "--json", "-c", "snapshot diff s1")
    assert status == 0, err
    document = json.loads(out)
    assert (document["from"], document["to"], document["added"], document["removed"]) == ("s1", None, [], [])
    assert len(document["changed"]) == OBJECTS
    assert document["changed"][0]["path"] == "d/000000.txt" and "custom.k" in document["changed"][0]["changes"]
    assert as_json < SNAPSHOT_LIMIT_MIB, f"a JSON diff of {OBJECTS} differences peaked at {as_json:.0f} MiB"

    status, out, err, restored = peak_rss_mib(tmp_path, "--bucket", bucket, "--quiet", "-c", "snapshot restore s1")
    assert status == 0, err
    assert out == f"restored snapshot s1: 0 added, 0 removed, {OBJECTS:,} changed\n"
    assert restored < SNAPSHOT_LIMIT_MIB, f"a restore of {OBJECTS} differences peaked at {restored:.0f} MiB"
    status, out, _, _ = peak_rss_mib(tmp_path, "--bucket", bucket, "--quiet", "--summary", "-c", "snapshot diff s1")
    assert out == "no differences from snapshot s1 to now\n"


# A 200 MiB object passes through a piece at a time: a whole-object read alone would take 200 MiB.
LARGE_OBJECT_MIB = 200
LARGE_OBJECT_LIMIT_MIB = 96


def test_a_200_mib_object_goes_in_and_out_of_a_bucket_file_in_bounded_memory(tmp_path):
    import hashlib
    source = tmp_path / "large.bin"
    digest = hashlib.md5()
    with open(source, "wb") as out:
        for n in range(LARGE_OBJECT_MIB):
            piece = (n.to_bytes(4, "big") * (1 << 18))  # 1 MiB, each different
            digest.update(piece)
            out.write(piece)
    bucket = str(tmp_path / "large.bucket")

    status, out, err, put = peak_rss_mib(tmp_path, "--bucket", bucket, "-c", f"put {source} videos/large.bin")
    assert status == 0, err
    assert put < LARGE_OBJECT_LIMIT_MIB, f"put of {LARGE_OBJECT_MIB} MiB peaked at {put:.0f} MiB"

    copy = tmp_path / "copy.bin"
    status, out, err, got = peak_rss_mib(tmp_path, "--bucket", bucket, "-c", f"get videos/large.bin {copy}")
    assert status == 0, err
    assert got < LARGE_OBJECT_LIMIT_MIB, f"get of {LARGE_OBJECT_MIB} MiB peaked at {got:.0f} MiB"
    received = hashlib.md5()
    with open(copy, "rb") as data:
        while piece := data.read(1 << 20):
            received.update(piece)
    assert copy.stat().st_size == LARGE_OBJECT_MIB << 20
    assert received.hexdigest() == digest.hexdigest()

    # cat prints the content as it arrives: to a file here, through the same bounded pieces.
    printed = tmp_path / "printed.bin"
    script = ("import resource, subprocess, sys\n"
              "with open(sys.argv[1], 'wb') as out: done = subprocess.run(sys.argv[2:], stdout=out)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
              "sys.exit(done.returncode)\n")
    done = subprocess.run(["python3", "-c", script, str(printed), BINARY, "--bucket", bucket, "-c", "cat videos/large.bin"],
                          capture_output=True, env=environment(tmp_path), timeout=900)
    assert done.returncode == 0, done.stderr
    catted = int(done.stderr.decode().rstrip("\n").split("\n")[-1]) / 1024
    assert catted < LARGE_OBJECT_LIMIT_MIB, f"cat of {LARGE_OBJECT_MIB} MiB peaked at {catted:.0f} MiB"
    assert printed.read_bytes() == copy.read_bytes()

    # A Firebase emulator export writes the content a piece at a time (a 999 MB object once took 1.98 GB).
    export = tmp_path / "emulator-data"
    status, out, err, exported = peak_rss_mib(tmp_path, "export", "--format", "firebase", "--bucket", bucket, str(export))
    assert status == 0, err
    assert exported < LARGE_OBJECT_LIMIT_MIB, f"export of {LARGE_OBJECT_MIB} MiB peaked at {exported:.0f} MiB"
    blobs = list((export / "storage_export" / "blobs").iterdir())
    assert len(blobs) == 1 and blobs[0].read_bytes() == copy.read_bytes()


SCRIPT_LINES = 100_000
# Parsed whole before it ran, a script held about 1.2 KB a line (120 MiB for these); read a command at a time,
# a debug build stays near 50 MiB whatever the length.
SCRIPT_LIMIT_MIB = 96


def test_a_script_of_100000_lines_runs_in_bounded_memory_from_a_file_and_through_a_pipe(tmp_path):
    script = tmp_path / "load.store"
    with open(script, "w") as out:
        for n in range(SCRIPT_LINES):
            out.write(f"put --raw --data x users/u{n // 10:06d}/photos/{n % 10:03d}.jpg\n")
    for how in ("file", "pipe"):
        bucket = str(tmp_path / f"{how}.bucket")
        if how == "file":
            status, out, err, rss = peak_rss_mib(tmp_path, "--bucket", bucket, "run", str(script))
        else:
            # Through a pipe the script is kept as it is read (in a temporary file of its own past 1 MiB), since
            # a pipe cannot be read twice.
            status, out, err, rss = peak_rss_mib(tmp_path, "sh", "-c", f'cat "$1" | exec "$2" --bucket "$3"', "sh",
                                                 str(script), BINARY, bucket, binary=None,
                                                 TMPDIR=str(tmp_path))
        assert status == 0, err
        assert out.count("\nwrote ") + out.startswith("wrote ") == SCRIPT_LINES, how
        assert rss < SCRIPT_LIMIT_MIB, f"a script of {SCRIPT_LINES} lines ({how}) peaked at {rss:.0f} MiB"
    # Nothing of the kept input is left behind in TMPDIR.
    assert not [name for name in os.listdir(tmp_path) if name.startswith("storesh-script-")]
