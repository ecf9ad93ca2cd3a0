"""Blocking work off Swift's cooperative pool (issue 55): a commit that waits for another writer of its bucket file
(up to the busy timeout) waits on StorageWork's threads, so that other requests, of other buckets and of the page,
are still answered meanwhile. On a machine of two cores, two such waits on the cooperative pool held both its
threads, and every other request waited with them."""
import os
import sqlite3
import threading

import requests

from serving import BUCKET, Server


def test_requests_are_answered_while_commits_wait_for_other_writers(tmp_path):
    # A commit that meets another writer waits up to a minute: long past everything below.
    server = Server(tmp_path, tmp_path / "served.bucket", environment={"STORESH_BUSY_TIMEOUT_MS": "60000"})
    try:
        assert server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": "here.txt"},
                              data=b"here").status_code == 200
        blocked = [f"waiting-{n}" for n in range(4)]
        for name in blocked:
            made = server.request("POST", "/storage/v1/b", params={"project": "demo-app"}, json={"name": name})
            assert made.status_code == 200, made.text
            first = server.request("POST", f"/upload/storage/v1/b/{name}/o", params={"uploadType": "media", "name": "a.txt"},
                                   data=b"a")
            assert first.status_code == 200, first.text
        # Another process holds each of those buckets' write locks (as a shell's long edit would).
        holders = []
        for name in blocked:
            path = tmp_path / f"{name}.bucket"
            assert os.path.exists(path)
            holder = sqlite3.connect(path, isolation_level=None, timeout=5)
            holder.execute("BEGIN IMMEDIATE")
            holders.append(holder)
        # One upload to each: each commit waits for its file's lock, more of them than the machine has cores.
        answers = {}

        def upload(name):
            answers[name] = requests.post(f"{server.url}/upload/storage/v1/b/{name}/o",
                                          params={"uploadType": "media", "name": "b.txt"}, data=b"b", timeout=120)

        uploads = [threading.Thread(target=upload, args=(name,)) for name in blocked]
        for thread in uploads:
            thread.start()
        # Meanwhile the other bucket, the page and its style are answered, one request after another: were the
        # waits on the cooperative pool, these would wait a minute with them.
        for _ in range(20):
            assert server.request("GET", f"/download/storage/v1/b/{BUCKET}/o/here.txt", params={"alt": "media"},
                                  timeout=20).content == b"here"
            assert server.request("GET", "/", timeout=20).status_code == 200
        # ...while every upload still waited.
        assert all(thread.is_alive() for thread in uploads) and answers == {}
        for holder in holders:
            holder.execute("ROLLBACK")
            holder.close()
        for thread in uploads:
            thread.join(timeout=60)
        assert {name: answer.status_code for name, answer in answers.items()} == {name: 200 for name in blocked}
    finally:
        status, err = server.stop()
        assert status == 0, err
