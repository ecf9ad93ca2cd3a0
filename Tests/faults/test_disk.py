"""A full disk and a read-only bucket file: a clear error, exit 1, and the bucket unchanged.

The disk is a 1 MiB tmpfs mounted in a private mount namespace (`unshare`), so the test needs no
privileges where user namespaces are allowed, and leaves nothing mounted behind.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HELPER = os.path.join(os.path.dirname(__file__), "disk_helper.py")


def namespace_command():
    for command in (["unshare", "-rm"], ["unshare", "-m"]):
        if shutil.which("unshare") and subprocess.run(command + ["true"], capture_output=True).returncode == 0:
            return command
    return None


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    command = namespace_command()
    if command is None:
        pytest.skip("cannot make a private mount namespace here (unshare -rm and -m both refused)")
    home = tmp_path_factory.mktemp("disk")
    done = subprocess.run(command + [sys.executable, HELPER, str(home), str(home / "mnt")], capture_output=True,
                          env={**os.environ}, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


@pytest.mark.parametrize("attempt", ["put too big", "script too big", "meta set on a full disk"])
def test_full_disk(results, attempt):
    outcome = results[attempt]
    assert outcome["status"] == 1
    assert "is full; nothing was changed" in outcome["stderr"], outcome["stderr"]
    assert outcome["export"] == results["before"]
    status, report = outcome["check"]
    assert status == 0 and report["sound"], report


def test_read_only(results):
    outcome = results["put on read-only"]
    assert outcome["status"] == 1
    assert "is read-only" in outcome["stderr"] and "nothing was changed" in outcome["stderr"], outcome["stderr"]
    assert outcome["export"] == results["before"]
    assert outcome["check"][0] == 0
    assert results["cat on read-only"]["status"] == 0 and results["cat on read-only"]["stdout"].startswith("#")
    assert results["digest after"] == results["digest read-only"]
