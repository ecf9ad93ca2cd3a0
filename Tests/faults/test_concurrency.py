"""Two and four processes writing one bucket at once: no corruption, no lost acknowledged change, and a
clear message, after a bounded wait, for a writer that cannot get the bucket.

Each writer alternates single commands (`-c put`) and two-command scripts (`run`), and now and then takes
a snapshot. Every command that exits 0 is acknowledged and must be in the bucket at the end; a command that
gave up waiting must say so and must have changed nothing.
"""
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import check, digest, export, make_bucket, storesh

COMMANDS = int(os.environ.get("STORESH_FAULT_WRITES", "12"))


def writer(home, bucket, number):
    acknowledged, refused = [], []
    for step in range(COMMANDS):
        tag = f"w{number}-{step:03d}"
        if step % 3 == 0:
            script = home / f"{tag}.store"
            script.write_text(f"put --data {tag} w{number}/{step:03d}\nput --data {tag} pair/{tag}\n"
                              f"meta set custom.last={tag} -- shared\n")
            arguments = ["run", str(script)]
            names = [f"w{number}/{step:03d}", f"pair/{tag}"]
        elif step % 5 == 4:
            arguments, names = ["-c", f"snapshot save {tag}"], []
        else:
            arguments, names = ["-c", f"put --data {tag} w{number}/{step:03d}"], [f"w{number}/{step:03d}"]
        status, _, err = storesh(home, "--bucket", bucket, *arguments)
        if status == 0:
            acknowledged.append((tag, names, arguments[0] == "run", "snapshot" in " ".join(arguments)))
        else:
            assert status == 1 and b"is busy: another process is changing it" in err, err.decode()
            refused.append((tag, names))
    return acknowledged, refused


@pytest.mark.parametrize("writers", [2, 4])
def test_concurrent_writers(tmp_path, writers):
    bucket = make_bucket(tmp_path, "shared", [{"name": "shared", "text": "start"}])
    with ThreadPoolExecutor(max_workers=writers) as pool:
        results = list(pool.map(lambda number: writer(tmp_path, bucket, number), range(writers)))
    status, report = check(tmp_path, bucket)
    assert status == 0 and report["sound"], report
    objects = export(tmp_path, bucket)
    status, out, err = storesh(tmp_path, "--bucket", bucket, "-c", "snapshot list")
    snapshot_list = out.decode()
    scripts = set()
    for acknowledged, refused in results:
        for tag, names, is_script, is_snapshot in acknowledged:
            for name in names:
                assert objects.get(name, {}).get("text") == tag, f"acknowledged {tag} lost {name}"
            if is_script:
                scripts.add(tag)
            if is_snapshot:
                assert snapshot_list.count(tag + " ") == 1, f"acknowledged snapshot {tag} lost"
        for tag, names in refused:
            assert all(name not in objects for name in names), f"refused {tag} left changes"
    assert objects["shared"].get("customMetadata", {}).get("last") in scripts
    expected = 1 + sum(len(names) for acknowledged, _ in results for _, names, _, _ in acknowledged)
    assert len(objects) == expected


def test_a_writer_that_cannot_get_the_bucket_says_so_and_changes_nothing(tmp_path):
    bucket = make_bucket(tmp_path, "held", [{"name": "a", "text": "a"}])
    before = export(tmp_path, bucket)
    holder = sqlite3.connect(bucket, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        status, _, err = storesh(tmp_path, "--bucket", bucket, "-c", "put --data b b", STORESH_BUSY_TIMEOUT_MS="300")
        assert status == 1
        assert b"is busy: another process is changing it (waited 0.3 s). Nothing was changed" in err, err
        # Readers are not held up by a writer.
        status, out, _ = storesh(tmp_path, "--bucket", bucket, "-c", "cat a")
        assert status == 0 and out == b"a"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert export(tmp_path, bucket) == before
