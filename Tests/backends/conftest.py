"""The backends the conformance suite runs against: a local bucket file, gs:// on two servers and s3:// on a third,
each started here on 127.0.0.1 and stopped after: `storesh serve` (full behaviour: paging, preconditions),
gcp-storage-emulator (from PyPI, a server no one here wrote: happy paths only; it pages nothing, ignores
preconditions, does not delete metadata keys given null, and starts metageneration at 2), and moto_server (from
PyPI, no one here wrote it either) with signature checking on: an IAM user and key are made first, and every
request after that must be signed with that key.

Each test gets an empty bucket: a new file, a reset of storesh serve, a wipe of the emulator.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
import harness  # noqa: E402

from backend_support import BUCKET, S3_BUCKET  # noqa: E402
VENV_BIN = os.path.join(os.path.dirname(__file__), "..", "..", ".venv", "bin")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_answers(url, process, what):
    """Bounded: a server that has not answered within 20 s has failed to start."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited at start with status {process.returncode}")
        try:
            requests.get(url, timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError(f"{what} did not answer within 20 s")


class Backend:
    """One kind of bucket, and how to run storesh on it."""

    def __init__(self, name, location, home, env=None, cannot=()):
        self.name = name
        self.location = location
        self.home = home
        self.env = env or {}
        # What this server cannot do; tests that need it are marked, not silently passed.
        self.cannot = set(cannot)
        self.remote = location.startswith(("gs://", "s3://"))
        self.s3 = location.startswith("s3://")

    def run(self, *arguments, stdin=None, **extra):
        env = dict(self.env, **extra)
        status, out, err = harness.storesh(self.home, "--bucket", self.location, "--quiet", *arguments, stdin=stdin, **env)
        return status, out.decode(), err.decode()

    def ok(self, *arguments, stdin=None, **extra):
        status, out, err = self.run(*arguments, stdin=stdin, **extra)
        assert status == 0, f"{self.name}: {arguments}: {err}"
        return out

    def seed(self, names):
        """Objects with these names (kept exactly as written, so hidden names can be made), content = name."""
        script = "\n".join(f"put --raw --data '{name}' '{name}'" for name in names)
        self.ok("-c", script)

    def require(self, ability):
        if ability in self.cannot:
            pytest.xfail(f"{self.name} cannot do this: {ability}")


@pytest.fixture(scope="session")
def serve_home(tmp_path_factory):
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="session")
def serve_file(serve_home):
    """The bucket file storesh serve serves (the shell may use it at the same time)."""
    return str(serve_home / "served.bucket")


@pytest.fixture(scope="session")
def serve_process(serve_home):
    # Its standard error goes to a file: a pipe nobody reads would fill up over the session and stop the server.
    log = open(serve_home / "serve.log", "wb")
    process = subprocess.Popen(
        [harness.BINARY, "serve", "--bucket", str(serve_home / "served.bucket"), "--name", BUCKET, "--port", "0", "--no-log",
         "--no-config"],
        stdout=subprocess.PIPE, stderr=log, env=harness.environment(serve_home))
    line = process.stdout.readline().decode()
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
    assert match, "storesh serve did not start: " + line + open(serve_home / "serve.log").read()
    yield match.group(1)
    process.terminate()
    process.communicate(timeout=60)
    log.close()
    assert process.returncode == 0, open(serve_home / "serve.log").read()


@pytest.fixture(scope="session")
def emulator_process(tmp_path_factory):
    home = tmp_path_factory.mktemp("emulator")
    port = free_port()
    log = open(home / "emulator.log", "wb")  # a pipe nobody reads would fill and hang the server
    process = subprocess.Popen(
        [os.path.join(VENV_BIN, "gcp-storage-emulator"), "start", "--host", "127.0.0.1", "--port", str(port),
         "--in-memory", "--default-bucket", BUCKET], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(url, process, "gcp-storage-emulator")
    yield url
    process.terminate()
    process.wait(timeout=30)
    log.close()


class MotoServer:
    """moto_server with IAM checking: the first three requests (unchecked) make a user, its policy and its key."""

    def __init__(self, home):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(home / "moto.log", "wb")
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3", MOTO_ALLOW_NONEXISTENT_REGION="false")
        self.process = subprocess.Popen(
            [os.path.join(VENV_BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_until_answers(self.url + "/moto-api/", self.process, "moto_server")
        import boto3
        iam = boto3.client("iam", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id="setup",
                           aws_secret_access_key="setup")
        iam.create_user(UserName="storesh")
        iam.put_user_policy(UserName="storesh", PolicyName="everything", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="storesh")["AccessKey"]
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.client = self.client_for(self.secret)
        self.client.create_bucket(Bucket=S3_BUCKET)

    def client_for(self, secret):
        import boto3
        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id=self.key_id,
                            aws_secret_access_key=secret)

    def env(self, endpoint=None):
        """What storesh needs to reach the bucket (an empty HOME: no ~/.aws)."""
        return {"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_ENDPOINT_URL": endpoint or self.url, "AWS_REGION": "us-east-1"}

    def empty(self):
        """Deletes every object (bounded: a page of 1,000 at a time, at most 100 pages)."""
        for _ in range(100):
            listed = self.client.list_objects_v2(Bucket=S3_BUCKET)
            keys = [{"Key": entry["Key"]} for entry in listed.get("Contents", [])]
            if not keys:
                return
            self.client.delete_objects(Bucket=S3_BUCKET, Delete={"Objects": keys})
        raise AssertionError("the bucket did not empty")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


BACKENDS = ["local", "storesh-serve", "gcp-storage-emulator", "s3-moto"]


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    if request.param == "local":
        return Backend("local", str(tmp_path / "conformance.bucket"), tmp_path)
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "STORESH_RETRY_FIRST_MS": "20"}
    if request.param == "s3-moto":
        moto = request.getfixturevalue("moto")
        moto.empty()
        # S3 has no generations or metagenerations (rule S2), keeps custom keys in lower case, and always has a
        # content type.
        return Backend("s3-moto", f"s3://{S3_BUCKET}", tmp_path, dict(state, **moto.env()),
                       cannot={"metageneration", "generations", "mixed-case-custom-keys"})
    if request.param == "storesh-serve":
        url = request.getfixturevalue("serve_process")
        requests.post(url + "/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30).raise_for_status()
        return Backend("storesh-serve", f"gs://{BUCKET}", tmp_path, dict(state, STORAGE_EMULATOR_HOST=url))
    url = request.getfixturevalue("emulator_process")
    requests.get(url + "/wipe?keep-buckets=1", timeout=30).raise_for_status()
    return Backend("gcp-storage-emulator", f"gs://{BUCKET}", tmp_path, dict(state, STORAGE_EMULATOR_HOST=url),
                   cannot={"preconditions", "metadata-deletes", "metageneration", "cloud-storage-fields", "soft-delete",
                           "reads-by-generation", "moves"})
