"""storesh serve in a Firebase project (issue 25): it reads firebase.json as `firebase emulators:start --only storage`
does (emulators.storage.host and .port, storage.rules), here or in a directory above, and puts the rules file back in
force whenever it changes, saying so; a broken change keeps the rules in force. The command line's options come
first, and --no-config reads none."""
import json
import os
import re
import socket
import subprocess

import pytest
import requests

from serving import BUCKET, Server, harness, until

DENY = "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n    match /{all=**} { allow read: if false; }\n  }\n}\n"
ALLOW = DENY.replace("if false", "if true")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def project(directory, port, rules=DENY, storage=None):
    """A Firebase project: firebase.json (the storage emulator on `port`) and its rules file."""
    (directory / "storage.rules").write_text(rules)
    config = {"emulators": {"storage": {"host": "127.0.0.1", "port": port}, "ui": {"enabled": False}},
              "storage": storage if storage is not None else {"rules": "storage.rules"}}
    (directory / "firebase.json").write_text(json.dumps(config))


def listing_status(url):
    return requests.get(url + f"/v0/b/{BUCKET}/o", params={"prefix": "", "delimiter": "/"}, timeout=10).status_code


def start(tmp_path, *arguments, cwd):
    """storesh serve in `cwd`, its standard error in a file (read while it runs); returns (process, error file)."""
    errors = tmp_path / "serve.err"
    process = subprocess.Popen(
        [harness.BINARY, "serve", "--bucket", str(tmp_path / "app.bucket"), "--name", BUCKET, "--no-log", *arguments],
        cwd=cwd, stdout=subprocess.PIPE, stderr=open(errors, "wb"), env=harness.environment(tmp_path))
    return process, errors


def stop(process):
    process.send_signal(2)
    process.communicate(timeout=30)
    assert process.returncode == 0


def test_firebase_json_in_a_directory_above_sets_the_port_and_the_rules_kept_current(tmp_path):
    port = free_port()
    project(tmp_path, port)
    (tmp_path / "app").mkdir()
    server, errors = start(tmp_path, cwd=tmp_path / "app")
    try:
        line = server.stdout.readline().decode()
        assert f"at http://127.0.0.1:{port}" in line, line + errors.read_text()
        url = f"http://127.0.0.1:{port}"
        assert listing_status(url) == 403, "the project's rules are in force"
        (tmp_path / "storage.rules").write_text(ALLOW)
        until(lambda: listing_status(url) == 200, "the changed rules file was not put in force")
        (tmp_path / "storage.rules").write_text(ALLOW.replace("if true;", "if ;"))
        until(lambda: "its rules were not loaded" in errors.read_text(), "a broken rules file was not reported")
        assert listing_status(url) == 200, "the rules in force stay"
    finally:
        stop(server)
    err = errors.read_text()
    assert f"the rules of {tmp_path}/storage.rules (named by {tmp_path}/firebase.json) are in force" in err
    assert f"{tmp_path}/storage.rules changed: its rules are in force" in err
    assert re.search(rf"{tmp_path}/storage.rules:\d+:\d+: ", err), "the broken text's error names its place"
    assert "stopped after 0 changes by its clients" in err, "loading rules is no client's change"


def test_the_command_line_comes_first_and_no_config_reads_none(tmp_path):
    project(tmp_path, free_port())
    server = Server(tmp_path, tmp_path / "cli.bucket", config=tmp_path / "firebase.json")
    try:
        assert listing_status(server.url) == 403, "--config's rules, on --port 0's port"
        assert f"127.0.0.1:{server.url.rsplit(':', 1)[1]}" in server.url
    finally:
        server.stop()
    server = Server(tmp_path, tmp_path / "cli.bucket")  # --no-config
    try:
        assert listing_status(server.url) == 403, "the rules loaded before are the bucket's own"
    finally:
        server.stop()
    status, _, err = harness.storesh(tmp_path, "serve", "--config", str(tmp_path / "firebase.json"), "--no-config")
    assert status != 0 and b"--no-config reads none" in err


def test_a_list_of_storage_targets_gives_the_served_buckets_rules(tmp_path):
    (tmp_path / "other.rules").write_text(ALLOW)
    project(tmp_path, free_port(), storage=[{"bucket": "other.appspot.com", "rules": "other.rules"},
                                            {"bucket": BUCKET, "rules": "storage.rules"}])
    server = Server(tmp_path, tmp_path / "listed.bucket", config=tmp_path / "firebase.json")
    try:
        assert listing_status(server.url) == 403, "the entry of the served bucket, not the first"
    finally:
        server.stop()


@pytest.mark.parametrize("text, named", [
    ('{"emulators": {"storage": {"port": "abc"}}}', "emulators.storage.port must be a port number 0…65535, not abc"),
    ('{"emulators": {"storage": {"port": true}}}', "emulators.storage.port must be a port number 0…65535, not true"),
    ('{"emulators": {"storage": {"port": 70000}}}', "emulators.storage.port must be a port number 0…65535, not 70000"),
    ('{"emulators": {"storage": {"port": 80.5}}}', "emulators.storage.port must be a port number 0…65535, not 80.5"),
    ('{"emulators": {"storage": {"host": ""}}}', "emulators.storage.host must be a host name or address"),
    ('{"emulators": ["storage"]}', "emulators must be an object"),
    ('{"emulators": {"storage": 9199}}', "emulators.storage must be an object"),
    ('{"storage": 5}', "storage must be an object"),
    ('{"storage": [{"rules": "storage.rules"}, 5]}', "storage must be an object"),
    ('{"storage": {"rules": 7}}', "storage.rules must name a file"),
    ('[1, 2]', "is not a Firebase project file"),
    ('{"storage": {"rules": "missing.rules"}}', "missing.rules (the rules file): No such file or directory; nothing was started"),
    ('{"storage": {"rules": "broken.rules"}}', "broken.rules:1:1: expected 'service firebase.storage {'"),
    # Issue 36: a rules file is a regular file of bounded size, never a device read without end or a FIFO waited on.
    ('{"storage": {"rules": "/dev/zero"}}', "/dev/zero (the rules file) is a character device, not a regular file"),
    ('{"storage": {"rules": "fifo.rules"}}', "fifo.rules (the rules file) is a pipe (FIFO), not a regular file"),
    ('{"storage": {"rules": "huge.rules"}}', "huge.rules (the rules file) is larger than 1 MiB"),
])
def test_a_mistake_in_firebase_json_starts_nothing_and_says_where(tmp_path, text, named):
    (tmp_path / "firebase.json").write_text(text)
    (tmp_path / "broken.rules").write_text("broken {")
    os.mkfifo(tmp_path / "fifo.rules")
    (tmp_path / "huge.rules").write_bytes(b"/" * (2 << 20))
    bucket = tmp_path / "never.bucket"
    status, out, err = harness.storesh(tmp_path, "serve", "--bucket", str(bucket), "--port", "0",
                                       "--config", str(tmp_path / "firebase.json"))
    assert status != 0 and named in err.decode() and str(tmp_path / "firebase.json") in err.decode(), err.decode()
    assert not bucket.exists() and b"at http://" not in out
