"""`storesh serve` started on 127.0.0.1 on a free port, on a bucket file of the test's own, and stopped after.

The server's tests talk to it with the official clients (google-cloud-storage, firebase-admin) and with requests
shaped as the Firebase Web and Apple SDKs send them (from their public sources).
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serving import BUCKET, Server  # noqa: E402,F401


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
