"""`storesh serve` as a process (rules V4, V5): it stops cleanly on SIGTERM and Ctrl-C, serves concurrent clients
without errors or stalls while the shell uses the same bucket file, and `kill -9` during uploads loses no answered
upload and shows no half object."""
import base64
import hashlib
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

import harness
from serving import Server


def upload(server, name, content, session=None):
    return (session or requests).post(
        server.url + f"/upload/storage/v1/b/{server.name}/o", params={"uploadType": "media", "name": name},
        data=content, timeout=30)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_v4_a_signal_stops_the_server_cleanly_and_leaves_one_file(tmp_path, sig):
    server = Server(tmp_path, tmp_path / "served.bucket")
    assert upload(server, "kept.txt", b"kept").status_code == 200
    status, err = server.stop(sig)
    assert status == 0, err
    assert "every answered change is in" in err
    assert [suffix for suffix in ("-wal", "-shm") if os.path.exists(server.bucket_file + suffix)] == []
    assert harness.export(tmp_path, server.bucket_file)["kept.txt"]["text"] == "kept"
    assert harness.check(tmp_path, server.bucket_file)[0] == 0


def test_v4_concurrent_clients_are_served_in_parallel_without_errors(tmp_path):
    """64 clients at once read and patch metadata: no error, no stall, and every patch counted once."""
    server = Server(tmp_path, tmp_path / "served.bucket")
    names = [f"load/{index:03}" for index in range(32)]
    for name in names:
        assert upload(server, name, name.encode()).status_code == 200
    patches = {name: 0 for name in names}
    lock = threading.Lock()
    failures = []

    def client(number):
        session = requests.Session()
        for step in range(24):
            name = names[(number + step) % len(names)]
            url = server.url + server.object_path(name)
            if step % 3 == 0:
                response = session.patch(url, json={"metadata": {f"client{number}": str(step)}}, timeout=30)
                if response.status_code == 200:
                    with lock:
                        patches[name] += 1
            else:
                response = session.get(url, timeout=30)
            if response.status_code != 200:
                failures.append((name, response.status_code, response.text))

    with ThreadPoolExecutor(max_workers=64) as pool:
        list(pool.map(client, range(64)))
    assert failures == []
    for name in names:
        resource = server.request("GET", server.object_path(name)).json()
        assert int(resource["metageneration"]) == 1 + patches[name], name
    status, err = server.stop()
    assert status == 0, err
    assert harness.check(tmp_path, server.bucket_file)[0] == 0


def test_v4_the_shell_and_the_server_share_the_bucket_file(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket")
    assert upload(server, "shared.txt", b"from the server").status_code == 200
    status, _, err = harness.storesh(tmp_path, "--bucket", server.bucket_file, "-c",
                                     "meta set cacheControl=no-store -- shared.txt; put --data 'from the shell' shell.txt")
    assert status == 0, err
    assert server.request("GET", server.object_path("shared.txt")).json()["cacheControl"] == "no-store"
    assert server.request("GET", server.object_path("shell.txt"), params={"alt": "media"}).content == b"from the shell"
    status, err = server.stop()
    assert status == 0, err


def test_v4_kill_9_during_uploads_loses_no_answered_upload_and_shows_no_half_object(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket")
    answered = {}
    lock = threading.Lock()
    contents = {f"up/{number}-{step}": hashlib.sha256(f"{number}-{step}".encode()).digest() * (1 + step * 500)
                for number in range(8) for step in range(200)}
    killed = threading.Event()

    def uploader(number):
        session = requests.Session()
        for step in range(200):
            name = f"up/{number}-{step}"
            try:
                response = upload(server, name, contents[name], session)
            except requests.RequestException:
                return  # the server is gone
            if response.status_code == 200:
                with lock:
                    answered[name] = response.json()
                    if len(answered) == 150:
                        server.process.kill()
                        killed.set()
            if killed.is_set():
                return

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(uploader, range(8)))
    server.process.wait(timeout=30)
    assert killed.is_set()
    stored = harness.export(tmp_path, server.bucket_file)
    assert set(answered) <= set(stored), "an answered upload was lost"
    for name, entry in stored.items():
        content = base64.b64decode(entry["base64"]) if "base64" in entry else entry["text"].encode()
        assert content == contents[name], f"{name} is not whole"
    assert harness.check(tmp_path, server.bucket_file)[0] == 0
    # The server starts again on the same file and serves what was answered.
    again = Server(tmp_path, server.bucket_file)
    name = next(iter(answered))
    assert again.request("GET", again.object_path(name), params={"alt": "media"}).content == contents[name]
    status, err = again.stop()
    assert status == 0, err


def test_requests_are_logged_when_asked(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--log",))
    # --no-log given by the fixture's defaults comes first; --log after it wins.
    assert server.request("GET", "/v0/").status_code == 200
    assert server.request("GET", server.object_path("missing")).status_code == 404
    status, err = server.stop()
    assert status == 0
    lines = [line for line in err.splitlines() if line.startswith(("GET", "POST"))]
    assert lines[0].startswith("GET /v0/ 200 ") and lines[0].endswith(" ms")
    assert lines[1].startswith(f"GET /storage/v1/b/{server.name}/o/missing 404 ")


def test_latency_delays_every_answer_without_holding_the_server(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--latency", "400"))
    try:
        def timed_get(_):
            start = time.monotonic()
            assert server.request("GET", "/v0/").status_code == 200
            return time.monotonic() - start

        with ThreadPoolExecutor(8) as pool:
            start = time.monotonic()
            each = list(pool.map(timed_get, range(8)))
            together = time.monotonic() - start
        assert min(each) >= 0.4
        # Eight waits one after another would take 3.2 s; they overlap, since a wait holds no thread.
        assert together < 2.4, together
    finally:
        assert server.stop()[0] == 0
    status, _, err = harness.storesh(tmp_path, "serve", "--bucket", str(tmp_path / "x.bucket"), "--latency", "70000")
    assert status == 2 and b"--latency must be 0" in err, err


def test_a_port_in_use_is_said_plainly(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket")
    port = server.url.rsplit(":", 1)[1]
    status, _, err = harness.storesh(tmp_path, "serve", "--bucket", str(tmp_path / "other.bucket"), "--port", port,
                                     "--no-config")
    assert status == 1
    assert f"Cannot listen on 127.0.0.1:{port}: the port is in use" in err.decode()
    assert not os.path.exists(tmp_path / "other.bucket")  # a server that never listened made no bucket
    assert server.request("GET", "/v0/").status_code == 200  # the first server is unharmed
    status, err = server.stop()
    assert status == 0, err


def test_on_a_terminal_each_request_is_logged_and_ctrl_c_stops_the_server(tmp_path):
    """In a real pseudo-terminal, as a developer runs it: the request log is on by default, and Ctrl-C (the
    terminal's interrupt) stops the server cleanly."""
    import pexpect
    child = pexpect.spawn(harness.BINARY, ["serve", "--bucket", str(tmp_path / "tty.bucket"), "--port", "0", "--no-config"],
                          env=harness.environment(tmp_path, TERM="xterm"), encoding="utf-8", timeout=30)
    # The first line wraps between words at the terminal's width (a long path puts the address on the next line).
    child.expect(r"at\s+(http://127\.0\.0\.1:\d+)")
    url = child.match.group(1)
    # Both variables the clients read: the Node Admin SDK's takes host and port alone.
    child.expect_exact(f"export STORAGE_EMULATOR_HOST={url}")
    child.expect_exact(f"export FIREBASE_STORAGE_EMULATOR_HOST={url.removeprefix('http://')}")
    child.expect_exact("Ctrl-C stops the server.")
    assert requests.get(url + "/storage/v1/b/tty/o/missing", timeout=30).status_code == 404
    child.expect(r"GET /storage/v1/b/tty/o/missing 404 \d+\.\d ms")
    child.sendintr()
    # At a terminal the sentence wraps between words to its width.
    child.expect(r"storesh serve: stopped after 0 changes by its clients in 0 commits;\s+every\s+answered\s+change\s+is\s+in")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_v4_kill_9_of_a_busy_server_keeps_thousands_of_answered_patches_and_the_file_opens_again(tmp_path):
    """Issue 36: a server commits its clients' changes in groups, so a crash can leave far more commits in the log
    than any fixed count. The file must open again after kill -9 with every answered patch, without advice to delete
    a log that holds them."""
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--latency", "2"))
    names = [f"o/{index:04}" for index in range(200)]
    for name in names:
        assert upload(server, name, b"x").status_code == 200
    answered = {}

    def patch_each(name):
        session = requests.Session()
        for round_number in range(15):
            quoted = requests.utils.quote(name, safe="")
            answer = session.patch(f"{server.url}/storage/v1/b/{server.name}/o/{quoted}",
                                   json={"cacheControl": "no-cache", "metadata": {"k": str(round_number)}}, timeout=30)
            assert answer.status_code == 200, answer.text
            answered[name] = str(round_number)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(patch_each, names))
    server.process.kill()
    server.process.wait(timeout=30)
    assert os.path.getsize(server.bucket_file + "-wal") > 0, "the crash left a log"
    # Every later storesh opens the file: check, the shell, and a server again.
    status, report = harness.check(tmp_path, server.bucket_file)
    assert status == 0, report
    objects = harness.export(tmp_path, server.bucket_file)
    assert {name: objects[name]["customMetadata"]["k"] for name in names} == answered
    assert all(objects[name]["cacheControl"] == "no-cache" for name in names)
    again = Server(tmp_path, server.bucket_file)
    assert again.request("GET", again.object_path(names[0])).status_code == 200
    assert again.stop()[0] == 0
