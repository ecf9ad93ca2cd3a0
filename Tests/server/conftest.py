"""`storesh serve` started on 127.0.0.1 on a free port, on a bucket file of the test's own, and stopped after.

The server's tests talk to it with the official clients (google-cloud-storage, firebase-admin) and with requests
shaped as the Firebase Web and Apple SDKs send them (from their public sources).
"""
import os
import re
import signal
import subprocess
import sys

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
import harness  # noqa: E402

BUCKET = "demo-app.appspot.com"


class Server:
    """One running `storesh serve`: its URL, its bucket file, and the process."""

    def __init__(self, home, bucket_file, name=BUCKET, extra=()):
        self.home = home
        self.bucket_file = str(bucket_file)
        self.name = name
        arguments = ["serve", "--bucket", self.bucket_file, "--port", "0", "--no-log", *extra]
        if not os.path.exists(self.bucket_file):
            arguments += ["--name", name]
        self.process = harness.start(home, *arguments)
        line = self.process.stdout.readline().decode()
        match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        if not match:
            self.process.kill()
            raise AssertionError("storesh serve did not start: " + line + self.process.stderr.read().decode())
        self.url = match.group(1)
        self.session = requests.Session()

    def request(self, method, path, **arguments):
        arguments.setdefault("timeout", 30)
        return self.session.request(method, self.url + path, **arguments)

    def object_path(self, name, api="storage/v1"):
        quoted = requests.utils.quote(name, safe="")
        return f"/{api}/b/{self.name}/o/{quoted}"

    def stop(self, sig=signal.SIGTERM):
        """Stops the server; returns its exit status and standard error."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("storesh serve did not stop within 30 s of " + str(sig))
        return self.process.returncode, err.decode()


@pytest.fixture
def server(tmp_path):
    running = Server(tmp_path, tmp_path / "served.bucket")
    yield running
    status, err = running.stop()
    assert status == 0, err


@pytest.fixture
def client(server, monkeypatch):
    """The official Python client, pointed at the server as its README says (one export)."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    monkeypatch.setenv("DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA", "true")
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    return storage.Client(project="demo-app", credentials=AnonymousCredentials())
