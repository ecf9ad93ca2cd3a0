"""`storesh serve` started on 127.0.0.1 on a free port, on a bucket file of the test's own, and stopped after
(imported by the server's conftest and tests under this name, which no other test folder uses)."""
import os
import re
import signal
import subprocess
import sys
import time

import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
import harness  # noqa: E402

BUCKET = "demo-app.appspot.com"


class Server:
    """One running `storesh serve`: its URL, its bucket file, and the process."""

    def __init__(self, home, bucket_file, name=BUCKET, extra=(), config=None, environment=None):
        """`config`: a firebase.json to read; by default none is (not one in a directory above the tests').
        `environment`: variables added to the server's."""
        self.home = home
        self.bucket_file = str(bucket_file)
        self.name = name
        arguments = ["serve", "--bucket", self.bucket_file, "--port", "0", "--no-log", *extra]
        arguments += ["--config", str(config)] if config else ["--no-config"]
        if not os.path.exists(self.bucket_file):
            arguments += ["--name", name]
        self.process = harness.start(home, *arguments, **(environment or {}))
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
        """Stops the server; returns its exit status and standard error (the same again once stopped)."""
        if getattr(self, "stopped", None) is not None:
            return self.stopped
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("storesh serve did not stop within 30 s of " + str(sig))
        self.stopped = (self.process.returncode, err.decode())
        return self.stopped


def until(condition, what, seconds=15):
    """Asks again until `condition()` holds, within `seconds`: for what the server polls itself (a rules file is
    looked at every half second), where there is no event to wait on."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(what)
