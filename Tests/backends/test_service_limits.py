"""Rules Q1–Q3: `storesh serve --write-rate` plays a service's rate limit (429 with Retry-After, a batch's calls
counted one by one), and storesh's bulk apply on gs:// paces itself against it: batches (Q2), slower on 429
(Q1), every change applied exactly once.
"""
import json
import re
import subprocess
import uuid

import pytest
import requests

import harness

BUCKET = "limits.appspot.com"


@pytest.fixture
def limited(tmp_path):
    """A served bucket of `count` objects under `users/`, behind --write-rate `rate`; yields its URL."""
    servers = []

    def start(count, rate, extra=()):
        objects = [{"name": f"users/u{i:05}/p.jpg", "text": "x"} for i in range(count)]
        archive = tmp_path / "seed.json"
        archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1, "objects": objects}))
        bucket_file = str(tmp_path / f"{BUCKET}.bucket")
        status, _, err = harness.storesh(tmp_path, "import", "--bucket", bucket_file, "--quiet", str(archive))
        assert status == 0, err.decode()
        log = open(tmp_path / "serve.log", "wb")
        process = subprocess.Popen(
            [harness.BINARY, "serve", "--bucket", bucket_file, "--name", BUCKET, "--port", "0", "--no-log", "--no-config",
             "--write-rate", str(rate), *extra],
            stdout=subprocess.PIPE, stderr=log, env=harness.environment(tmp_path))
        line = process.stdout.readline().decode()
        match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        assert match, "storesh serve did not start: " + line + open(tmp_path / "serve.log").read()
        servers.append((process, log))
        return match.group(1)

    yield start
    for process, log in servers:
        process.terminate()
        process.communicate(timeout=60)
        log.close()


def patch(url, name, body):
    return requests.patch(f"{url}/storage/v1/b/{BUCKET}/o/{requests.utils.quote(name, safe='')}", json=body, timeout=30,
                          headers={"Authorization": "Bearer owner"})


def test_Q3_writes_above_the_rate_are_answered_429_with_retry_after_and_change_nothing(limited):
    url = limited(20, 5)
    answers = [patch(url, f"users/u{i:05}/p.jpg", {"metadata": {"k": "v"}}) for i in range(12)]
    statuses = [answer.status_code for answer in answers]
    # A second's worth (5) is taken at once; the rest within that second are refused.
    assert statuses[:5] == [200] * 5 and 429 in statuses[5:], statuses
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["error"]["errors"][0]["reason"] == "rateLimitExceeded"
    # A refused write changed nothing; reads are not limited without --read-rate.
    for i, answer in enumerate(answers):
        name = requests.utils.quote(f"users/u{i:05}/p.jpg", safe="")
        object = requests.get(f"{url}/storage/v1/b/{BUCKET}/o/{name}", timeout=30).json()
        assert object.get("metadata") == ({"k": "v"} if answer.status_code == 200 else None)


def test_Q3_a_batch_counts_its_calls_one_by_one(limited):
    url = limited(20, 4)
    boundary = "b" + uuid.uuid4().hex
    parts = []
    for i in range(10):
        target = f"/storage/v1/b/{BUCKET}/o/{requests.utils.quote(f'users/u{i:05}/p.jpg', safe='')}"
        body = json.dumps({"metadata": {"k": "v"}})
        parts.append(f"--{boundary}\r\nContent-Type: application/http\r\nContent-ID: <{i}>\r\n\r\n"
                     f"PATCH {target} HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{body}\r\n")
    answer = requests.post(f"{url}/batch/storage/v1", data=("".join(parts) + f"--{boundary}--\r\n").encode(), timeout=30,
                           headers={"Content-Type": f"multipart/mixed; boundary={boundary}"})
    assert answer.status_code == 200
    statuses = [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3})", answer.content)]
    assert len(statuses) == 10 and statuses.count(200) == 4 and statuses.count(429) == 6, statuses


def test_Q1_Q2_a_5000_object_edit_against_a_write_rate_lands_exactly_once_with_429s_along_the_way(limited, tmp_path):
    # 400 writes a second: less than the 1,000 storesh starts at, so the service pushes back and storesh slows down.
    url = limited(5000, 400)
    journal = tmp_path / "edit.journal"
    status, out, err = harness.storesh(
        tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "--trace", "--journal", str(journal),
        "-c", "meta set cacheControl=no-cache custom.k=v -- users/**", STORAGE_EMULATOR_HOST=url)
    err = err.decode()
    assert status == 0, err[-3000:]
    assert "applied 5,000 changes" in err
    # Batches, some of whose calls were refused and sent again.
    assert "(batch of 100: PATCH ×100)" in err
    assert re.search(r"answers: .*429 ×\d+", err), "no call met a 429"
    assert not re.search(r"trace: PATCH ", err), "a change went alone"
    # Exactly once: one applied record per change, and one metadata change per object (metageneration 1 → 2).
    applied = [line["applied"] for line in map(json.loads, journal.read_text().splitlines()) if "applied" in line and "end" not in line]
    assert sorted(applied) == list(range(5000))
    items, token = [], None
    while True:
        page = requests.get(f"{url}/storage/v1/b/{BUCKET}/o", params={"prefix": "users/", **({"pageToken": token} if token else {})},
                            timeout=60).json()
        items += page.get("items", [])
        token = page.get("nextPageToken")
        if not token:
            break
    assert len(items) == 5000
    assert {item["metageneration"] for item in items} == {"2"}
    assert all(item["metadata"] == {"k": "v"} and item["cacheControl"] == "no-cache" for item in items)
