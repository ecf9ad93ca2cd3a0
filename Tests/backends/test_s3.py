"""s3:// on moto_server with signature checking on (rules S1–S4), through the tests' fault proxy where a test needs
to see or break requests. boto3 is the independent observer of what storesh leaves on the server; botocore's own
signer checks storesh's signatures on the requests as they arrived.
"""
import datetime
import json
import os
import random
import re
import signal
import threading
from urllib.parse import parse_qs, urlsplit
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import harness
from backend_support import S3_BUCKET
from faultproxy import FaultProxy, Rule


class S3Remote:
    """storesh on s3:// through the fault proxy, and boto3 straight to moto."""

    def __init__(self, home, moto, proxy):
        self.home = home
        self.moto = moto
        self.proxy = proxy
        self.client = moto.client
        self.env = dict(moto.env(endpoint=proxy.url), XDG_STATE_HOME=str(home / "state"), STORESH_RETRY_FIRST_MS="20")

    def run(self, *arguments, stdin=None, **extra):
        status, out, err = harness.storesh(self.home, "--bucket", f"s3://{S3_BUCKET}", "--quiet", *arguments, stdin=stdin,
                                           **dict(self.env, **extra))
        return status, out.decode(), err.decode()

    def put(self, key, body=b"x", **properties):
        self.client.put_object(Bucket=S3_BUCKET, Key=key, Body=body, **properties)

    def head(self, key):
        return self.client.head_object(Bucket=S3_BUCKET, Key=key)

    def body(self, key):
        return self.client.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read()


@pytest.fixture
def s3(moto, tmp_path):
    moto.empty()
    proxy = FaultProxy(moto.url, keep_host=True)
    yield S3Remote(tmp_path, moto, proxy)
    proxy.close()


EVERY_PROPERTY = dict(
    ContentType="image/jpeg", CacheControl="no-cache", ContentDisposition='inline; filename="p.jpg"',
    ContentEncoding="identity", ContentLanguage="en", Metadata={"camera": "x100", "owner": "ada"},
    StorageClass="STANDARD_IA", Expires=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc),
    WebsiteRedirectLocation="/elsewhere")
KEPT = ["ContentType", "ContentDisposition", "ContentEncoding", "ContentLanguage", "StorageClass", "Expires",
        "WebsiteRedirectLocation", "ETag", "ContentLength"]


def botocore_request(operation, params):
    """The request botocore's own model of S3 makes for `operation` (its path, query and body), unsent."""
    import botocore.session
    from botocore import serialize
    model = botocore.session.get_session().get_service_model("s3")
    return serialize.create_serializer(model.metadata["protocol"]).serialize_to_request(params, model.operation_model(operation))


def xml_fields(body):
    """An XML body's elements, namespace aside, as (path, text) pairs; times as the instants they name."""
    from xml.etree import ElementTree
    fields = []

    def walk(element, prefix):
        name = prefix + "/" + element.tag.split("}")[-1]
        text = (element.text or "").strip()
        if name.endswith("Date"):
            text = datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
        fields.append((name, text))
        for child in element:
            walk(child, name)
    walk(ElementTree.fromstring(body), "")
    return fields


def test_S2_S3_an_update_naming_one_property_keeps_every_other(s3):
    s3.put("keep/photo.jpg", b"jpeg bytes", **EVERY_PROPERTY)
    before = s3.head("keep/photo.jpg")
    status, _, err = s3.run("-c", 'meta set cacheControl="public, max-age=60" -- keep/photo.jpg')
    assert status == 0, err
    after = s3.head("keep/photo.jpg")
    assert after["CacheControl"] == "public, max-age=60"
    assert after["Metadata"] == {"camera": "x100", "owner": "ada"}
    for name in KEPT:
        assert after.get(name) == before.get(name), name
    # One key unset: the others, and every property, stay.
    status, _, err = s3.run("-c", "meta unset custom.owner -- keep/photo.jpg")
    assert status == 0, err
    again = s3.head("keep/photo.jpg")
    assert again["Metadata"] == {"camera": "x100"} and again["CacheControl"] == "public, max-age=60"
    for name in KEPT:
        assert again.get(name) == before.get(name), name
    assert s3.body("keep/photo.jpg") == b"jpeg bytes"
    # The update is a copy onto itself with REPLACE, guarded by the ETag and the time read (rule S3).
    copies = [h for h in s3.proxy.headers if "x-amz-copy-source" in h]
    assert len(copies) == 2
    assert all(h["x-amz-metadata-directive"] == "REPLACE" and h["x-amz-copy-source-if-match"] == before["ETag"]
               and "x-amz-copy-source-if-unmodified-since" in h for h in copies)


@pytest.mark.parametrize("command, limit", [
    ("meta set custom.Camera=x -- s/a.jpg", "lower case"),
    ("meta set custom.place=Zürich -- s/a.jpg", "printable ASCII"),
    ("meta set custom.a@b=1 -- s/a.jpg", "header name"),
    ("meta unset contentType -- s/a.jpg", "always has a content type"),
    (f"meta set custom.big={'x' * 2100} -- s/a.jpg", "2 KB"),
])
def test_S2_what_S3_cannot_hold_is_refused_before_any_request(s3, command, limit):
    s3.put("s/a.jpg", ContentType="image/jpeg")
    before = s3.head("s/a.jpg")
    status, _, err = s3.run("-c", command)
    assert status == 1 and "(invalid-argument)" in err and limit in err, err
    assert s3.proxy.changing_requests() == []
    assert s3.head("s/a.jpg")["LastModified"] == before["LastModified"]


def test_M9_S3_storage_classes_are_S3s_kept_by_changes_and_moves_and_archived_objects_are_named(s3):
    """An S3 object's class is storesh's storageClass: shown, changed by a copy onto itself with every other property
    and the encryption kept, kept by a move (a copy names no class: without one the copy would be STANDARD), and an
    object in GLACIER is refused by name, unchanged, with how to restore it."""
    s3.put("cls/a.jpg", b"jpeg", ContentType="image/jpeg", Metadata={"camera": "x100"}, StorageClass="STANDARD_IA",
           ServerSideEncryption="AES256")
    status, out, err = s3.run("--json", "-c", "meta get cls/a.jpg")
    assert status == 0 and json.loads(out)["storageClass"] == "STANDARD_IA", err
    status, _, err = s3.run("-c", "meta set storageClass=glacier_ir -- cls/a.jpg")
    assert status == 0, err
    head = s3.head("cls/a.jpg")
    assert head["StorageClass"] == "GLACIER_IR" and head["Metadata"] == {"camera": "x100"}, head
    assert head["ContentType"] == "image/jpeg" and head["ServerSideEncryption"] == "AES256", head
    copies = [h for h in s3.proxy.headers if "x-amz-copy-source" in h]
    assert [h.get("x-amz-storage-class") for h in copies] == ["GLACIER_IR"], copies

    status, _, err = s3.run("-c", "mv cls/a.jpg moved/a.jpg")
    assert status == 0, err
    moved = s3.head("moved/a.jpg")
    assert moved["StorageClass"] == "GLACIER_IR" and moved["ServerSideEncryption"] == "AES256", moved
    assert moved["Metadata"] == {"camera": "x100"} and s3.body("moved/a.jpg") == b"jpeg"

    s3.put("cls/cold.txt", b"cold")
    status, out, err = s3.run("--dry-run", "-c", "meta set storageClass=GLACIER -- cls/cold.txt")
    assert status == 0 and 'storageClass  "STANDARD"  →  "GLACIER"' in out, err
    assert "storesh can neither read, change, move nor undo it until it is restored" in out + err, out + err
    assert "StorageClass" not in s3.head("cls/cold.txt")  # S3 names no class for STANDARD: the dry run sent nothing
    status, _, err = s3.run("-c", "meta set storageClass=GLACIER -- cls/cold.txt")
    assert status == 0 and s3.head("cls/cold.txt")["StorageClass"] == "GLACIER", err
    before = s3.head("cls/cold.txt")
    for command in ("meta set custom.k=1 -- cls/cold.txt", "mv cls/cold.txt warm/cold.txt", "cat cls/cold.txt"):
        s3.proxy.headers.clear()
        status, _, err = s3.run("-c", command)
        assert status == 1 and "cls/cold.txt is archived" in err and "restore-object" in err, (command, err)
        assert [h for h in s3.proxy.headers if "x-amz-copy-source" in h] == [], command
    assert s3.head("cls/cold.txt")["LastModified"] == before["LastModified"]


def test_M9_S3_object_lock_is_the_hold_and_the_retention_changed_in_place_planned_and_undone(s3):
    """S3 Object Lock as rule M9's fields: the legal hold is temporaryHold and a GOVERNANCE retention an Unlocked
    one, each changed on the live version (no new version), shown, undone from the journal; a held object is neither
    deleted nor written again (a change of its metadata would be a copy); a bucket without Object Lock and the
    event-based hold S3 lacks are refused by name."""
    locked = "locked-media"
    s3.client.create_bucket(Bucket=locked, ObjectLockEnabledForBucket=True)
    env = s3.env

    def run(*arguments):
        status, out, err = harness.storesh(s3.home, "--bucket", f"s3://{locked}", "--quiet", *arguments, **env)
        return status, out.decode(), err.decode()

    s3.client.put_object(Bucket=locked, Key="l/a.txt", Body=b"kept", ContentType="text/plain")
    version = s3.client.head_object(Bucket=locked, Key="l/a.txt")["VersionId"]
    status, _, err = run("-c", "meta set temporaryHold=true -- l/a.txt")
    assert status == 0, err
    head = s3.client.head_object(Bucket=locked, Key="l/a.txt")
    assert head["ObjectLockLegalHoldStatus"] == "ON" and head["VersionId"] == version, head
    status, _, err = run("-c", "rm l/a.txt")
    assert status == 1 and "under a temporary hold" in err, err
    status, _, err = run("-c", "meta set custom.k=1 -- l/a.txt")
    assert status == 1 and "On S3 a change of metadata writes the object again" in err, err
    journal = s3.home / "lock.journal"
    status, _, err = run("--journal", str(journal), "-c", 'meta set retention="Unlocked until 2030-01-01T00:00:00Z" -- l/a.txt')
    assert status == 0, err
    head = s3.client.head_object(Bucket=locked, Key="l/a.txt")
    assert head["ObjectLockMode"] == "GOVERNANCE" and head["ObjectLockRetainUntilDate"].year == 2030, head
    assert head["VersionId"] == version
    status, out, err = run("--json", "-c", "meta get l/a.txt")
    shown = json.loads(out)
    assert shown["temporaryHold"] is True and shown["retention"]["mode"] == "Unlocked", shown
    status, _, err = harness.storesh(s3.home, "undo", str(journal), "--quiet", **env)
    assert status == 0, err.decode()
    head = s3.client.head_object(Bucket=locked, Key="l/a.txt")
    assert "ObjectLockMode" not in head and head["ObjectLockLegalHoldStatus"] == "ON", head
    status, _, err = run("-c", "meta unset temporaryHold -- l/a.txt; rm l/a.txt")
    assert status == 0, err
    assert s3.client.list_objects_v2(Bucket=locked).get("KeyCount") == 0
    # The requests as sent are those botocore's own model makes for the same calls (path, query, body, bypass).
    sent = [(path, body) for method, path, body in s3.proxy.exchanges if method == "PUT" and ("legal-hold" in path or "retention" in path)]
    expected = [
        ("PutObjectLegalHold", {"LegalHold": {"Status": "ON"}}),
        ("PutObjectRetention", {"Retention": {"Mode": "GOVERNANCE", "RetainUntilDate": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}}),
        ("PutObjectRetention", {"Retention": {}, "BypassGovernanceRetention": True}),  # the undo
        ("PutObjectLegalHold", {"LegalHold": {"Status": "OFF"}}),
    ]
    assert len(sent) == len(expected), sent
    for (path, body), (operation, params) in zip(sent, expected):
        model = botocore_request(operation, dict(params, Bucket=locked, Key="l/a.txt", VersionId=version))
        url = urlsplit(path)
        assert url.path == model["url_path"].split("?")[0] and parse_qs(url.query, keep_blank_values=True) == \
            dict({model["url_path"].split("?")[1]: [""]}, **{k: [v] for k, v in model["query_string"].items()}), (path, model)
        assert xml_fields(body) == xml_fields(model["body"]), (body, model["body"])
    bypassed = [h for h in s3.proxy.headers if "x-amz-bypass-governance-retention" in h]
    assert [h["x-amz-bypass-governance-retention"].lower() for h in bypassed] == ["true"], bypassed

    s3.put("plain.txt")
    status, _, err = s3.run("-c", "meta set temporaryHold=true -- plain.txt")
    assert status == 1 and "has no Object Lock" in err, err
    status, _, err = s3.run("-c", "meta set eventBasedHold=true -- plain.txt")
    assert status == 1 and "eventBasedHold is Cloud Storage's" in err, err


def test_B5_S2_versions_are_listed_read_restored_and_a_delete_is_undone_by_copying_its_version_back(s3):
    """In a versioned S3 bucket, `ls -a` lists each key's versions (newest first) as NAME#VERSIONID, live or
    noncurrent since the write or delete above it; cat and meta get read one; a dry run of rm says the deletes can be
    undone; undo copies the deleted version back, and restore an older one; boto3 sees each result."""
    bucket = "versioned-media"
    s3.client.create_bucket(Bucket=bucket)
    s3.client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})

    def run(*arguments):
        status, out, err = harness.storesh(s3.home, "--bucket", f"s3://{bucket}", "--quiet", *arguments, **s3.env)
        return status, out.decode(), err.decode()

    first = s3.client.put_object(Bucket=bucket, Key="v/a.txt", Body=b"one", ContentType="text/plain", Metadata={"n": "1"},
                                 ServerSideEncryption="AES256", StorageClass="STANDARD_IA")["VersionId"]
    second = s3.client.put_object(Bucket=bucket, Key="v/a.txt", Body=b"two", ContentType="text/plain")["VersionId"]
    status, out, err = run("-c", "ls -a v")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 2, (out, err)
    assert lines[0].split()[:2] == [f"a.txt#{second}", "live"] and lines[1].split()[:3] == [f"a.txt#{first}", "noncurrent", "since"], out
    status, out, err = run("-c", f"cat v/a.txt#{first}")
    assert status == 0 and out == "one", err
    status, out, err = run("--json", "-c", f"meta get v/a.txt#{first}")
    assert status == 0 and json.loads(out)["customMetadata"] == {"n": "1"} and json.loads(out)["versionId"] == first, out + err

    status, out, err = run("--dry-run", "-c", "rm v/a.txt")
    assert status == 0 and "keeps deleted objects as noncurrent versions (versioning is on): storesh undo JOURNAL" in out + err, out + err
    journal = s3.home / "versions.journal"
    status, _, err = run("--journal", str(journal), "-c", "rm v/a.txt")
    assert status == 0, err
    assert "Contents" not in s3.client.list_objects_v2(Bucket=bucket)
    status, out, err = harness.storesh(s3.home, "undo", "--dry-run", str(journal), **s3.env)
    assert status == 0 and f"would restore v/a.txt#{second}" in out.decode(), (out, err)
    status, out, err = harness.storesh(s3.home, "undo", str(journal), "--quiet", **s3.env)
    assert status == 0, err.decode()
    assert s3.client.get_object(Bucket=bucket, Key="v/a.txt")["Body"].read() == b"two"

    status, out, err = run("-c", f"restore v/a.txt#{first}")
    assert status == 0 and f"restored v/a.txt#{first}" in out, out + err
    restored = s3.client.get_object(Bucket=bucket, Key="v/a.txt")
    assert restored["Body"].read() == b"one" and restored["Metadata"] == {"n": "1"}
    # The copy names the version's class and encryption again: without them S3 makes it STANDARD, the bucket's default.
    assert restored["StorageClass"] == "STANDARD_IA" and restored["ServerSideEncryption"] == "AES256", restored
    live = s3.client.head_object(Bucket=bucket, Key="v/a.txt")["VersionId"]
    status, _, err = run("-c", f"restore v/a.txt#{live}")
    assert status == 1 and "is the live version: there is nothing to restore" in err, err
    status, _, err = run("-c", "cat v/a.txt#no-such-version")
    assert status == 1 and "has no version no-such-version of v/a.txt" in err, err
    # A change of metadata is a new version too: its undo copies the version before it back.
    edit = s3.home / "edit.journal"
    status, _, err = run("--journal", str(edit), "-c", "meta set custom.n=2 -- v/a.txt")
    assert status == 0 and s3.client.head_object(Bucket=bucket, Key="v/a.txt")["Metadata"] == {"n": "2"}, err
    status, out, err = harness.storesh(s3.home, "undo", str(edit), "--quiet", **s3.env)
    assert status == 0, err.decode()
    undone = s3.client.get_object(Bucket=bucket, Key="v/a.txt")
    assert undone["Metadata"] == {"n": "1"} and undone["Body"].read() == b"one"


def test_S3_X3_a_change_made_between_plan_and_apply_is_reported_and_kept(s3):
    names = [f"race/{letter}.txt" for letter in "abcde"]
    for name in names:
        s3.put(name, name.encode())
    # The second writer replaces race/c.txt just before storesh's first copy reaches the server.
    s3.proxy.rules = [Rule("PUT", "hook", on=[1], hook=lambda: s3.put("race/c.txt", b"the other writer's"))]
    status, _, err = s3.run("run", "--keep-going", "--parallel", "1", "-", stdin=b"meta set custom.k=1 -- race/*\n")
    assert status == 1
    assert "race/c.txt changed meanwhile" in err and "(precondition-failed)" in err
    assert "applied 4 of 5 changes; 1 failed" in err
    assert s3.body("race/c.txt") == b"the other writer's" and s3.head("race/c.txt")["Metadata"] == {}
    for name in names:
        if name != "race/c.txt":
            assert s3.head(name)["Metadata"] == {"k": "1"}


def test_S3_G4_a_copy_whose_answer_was_lost_is_repeated_and_lands_once(s3):
    s3.put("lost/a.txt", b"a", ContentType="text/plain")
    s3.proxy.rules = [Rule("PUT", "reset-after-forward", on=[1])]
    status, _, err = s3.run("-c", "meta set custom.k=v -- lost/a.txt")
    assert status == 0, err
    copies = [r for r in s3.proxy.requests if r[0] == "PUT"]
    # The copy is repeated (its conditions make that harmless): AWS refuses the repeat (the object's time moved on
    # when the first landed) and storesh finds the change in place; moto ignores copy conditions and does it again,
    # to the same result.
    assert [r[2] for r in copies][0] is None and len(copies) == 2 and copies[1][2] in (200, 412)
    assert s3.head("lost/a.txt")["Metadata"] == {"k": "v"}


def test_S1_G4_reads_are_retried_past_503(s3):
    s3.put("r/a.txt")
    s3.proxy.rules = [Rule("GET", "503", path="list-type", on=[2, 3])]
    status, out, err = s3.run("-c", "ls r")
    assert status == 0, err
    assert out.strip() == "a.txt"


def test_X4_undo_puts_back_the_old_metadata(s3):
    for name in ("u/a.jpg", "u/b.jpg"):
        s3.put(name, ContentType="image/jpeg", CacheControl="no-cache", Metadata={"keep": "me"})
    journal = s3.home / "edit.journal"
    status, _, err = s3.run("--journal", str(journal), "-c", "meta set cacheControl=max-age=9 custom.new=1 -- u/*")
    assert status == 0, err
    assert s3.head("u/a.jpg")["Metadata"] == {"keep": "me", "new": "1"}
    status, _, err = harness.storesh(s3.home, "undo", str(journal), "--quiet", **s3.env)
    assert status == 0, err.decode()
    for name in ("u/a.jpg", "u/b.jpg"):
        head = s3.head(name)
        assert head["CacheControl"] == "no-cache" and head["Metadata"] == {"keep": "me"}


@pytest.mark.parametrize("when", ["before-forward", "after-forward"])
def test_X4_kill_9_during_apply_then_resume_copies_every_object_exactly_once(s3, when):
    names = [f"bulk/{i:04}.jpg" for i in range(300)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: s3.put(name, ContentType="image/jpeg", Metadata={"keep": "me"}), names))
    journal = str(s3.home / "bulk.journal")
    at = random.Random().randint(20, 280)
    holder = {}

    def kill():
        os.kill(holder["process"].pid, signal.SIGKILL)

    s3.proxy.rules = [Rule("PUT", "hook" if when == "before-forward" else "hook-after-forward", on=[at], hook=kill)]
    holder["process"] = harness.start(s3.home, "--bucket", f"s3://{S3_BUCKET}", "--quiet", "--journal", journal, "-c",
                                      "meta set cacheControl=max-age=60 custom.fixed=yes -- bulk/**", **s3.env)
    holder["process"].communicate(timeout=300)
    assert holder["process"].returncode == -signal.SIGKILL, f"killed at copy {at}"
    # The copies the dead process had sent land first, as they would before anyone resumes: moto ignores a copy's
    # conditions (AWS would refuse a late one), so a copy landing after the resume had read its object would be a
    # second copy of the same planned state.
    s3.proxy.settled()
    s3.proxy.rules = []
    status, _, err = harness.storesh(s3.home, "run", "--resume", journal, **s3.env)
    assert status == 0, f"killed at copy {at}: {err.decode()}"
    assert "applied 300 changes" in err.decode()
    for name in names[::37] + names[-2:]:
        head = s3.head(name)
        assert head["Metadata"] == {"keep": "me", "fixed": "yes"} and head["CacheControl"] == "max-age=60"
    # Exactly once: every object was copied onto itself once, wherever the kill fell (a copy that had landed
    # unrecorded is found in its planned state on resume and not sent again).
    copies = [path for method, path, _ in s3.proxy.requests if method == "PUT"]
    assert sorted(copies) == sorted(f"/{S3_BUCKET}/{name}" for name in names)


def test_multipart_upload_of_a_large_file_and_its_download(s3, tmp_path):
    content = os.urandom(3 << 20) * 4  # 12 MiB: two parts of 8 MiB and the rest
    (tmp_path / "big.bin").write_bytes(content)
    status, _, err = s3.run("-c", f"put {tmp_path / 'big.bin'} big/file.bin; get big/file.bin {tmp_path / 'back.bin'}")
    assert status == 0, err
    assert (tmp_path / "back.bin").read_bytes() == content
    head = s3.head("big/file.bin")
    assert head["ContentLength"] == len(content) and head["ETag"].endswith('-2"')
    parts = [r for r in s3.proxy.requests if r[0] == "PUT" and "partNumber=" in r[1]]
    assert len(parts) == 2
    shown = json.loads(s3.run("--json", "-c", "meta get big/file.bin")[1])
    assert "md5Hash" not in shown  # an upload in parts has no MD5 of the whole (rule S2)


def test_S1_a_download_that_breaks_off_goes_on_with_a_ranged_get(s3, tmp_path):
    content = os.urandom(1 << 20)
    s3.put("dl/file.bin", content)
    s3.proxy.rules = [Rule("GET", "truncate-after-forward", path="/dl/file.bin", on=[1])]
    status, _, err = s3.run("-c", f"get dl/file.bin {tmp_path / 'back.bin'}")
    assert status == 0, err
    assert (tmp_path / "back.bin").read_bytes() == content
    gets = [h for h in s3.proxy.headers if h.get("if-match")]
    assert len(gets) == 2 and "range" not in gets[0]
    # It goes on from what had arrived (at most the half the proxy sent), not from the start.
    offset = int(re.fullmatch(r"bytes=(\d+)-", gets[1]["range"]).group(1))
    assert 0 < offset <= len(content) // 2


def test_S1_an_object_replaced_during_a_download_is_not_stitched_together(s3, tmp_path):
    s3.put("dl/file.bin", os.urandom(1 << 20))
    s3.proxy.rules = [Rule("GET", "truncate-after-forward", path="/dl/file.bin", on=[1]),
                      Rule("GET", "hook", path="/dl/file.bin", on=[2], hook=lambda: s3.put("dl/file.bin", b"new"))]
    status, _, err = s3.run("-c", f"get dl/file.bin {tmp_path / 'back.bin'}")
    assert status == 1 and "(precondition-failed)" in err, err
    assert not (tmp_path / "back.bin").exists()


def test_S4_a_wrong_secret_is_unauthenticated_and_never_shown(s3):
    s3.put("w/a.txt")
    status, out, err = s3.run("-c", "ls w", AWS_SECRET_ACCESS_KEY="wrong-secret-4711")
    assert status == 1
    assert "credentials were refused" in err and "SignatureDoesNotMatch" in err and "(unauthenticated)" in err
    assert "wrong-secret-4711" not in out + err


def test_S4_no_secret_in_any_output_or_file_a_run_leaves(s3):
    s3.put("secret/a.txt")
    outputs = []
    for arguments in (["-c", "meta set custom.k=1 -- secret/*"], ["-c", "whoami"], ["--json", "-c", "meta get secret/a.txt"]):
        status, out, err = s3.run(*arguments)
        assert status == 0, err
        outputs.append(out + err)
    assert "key " + s3.moto.key_id in outputs[1] and "$AWS_ACCESS_KEY_ID" in outputs[1]
    leaked = [text for text in outputs if s3.moto.secret in text]
    for folder, _, files in os.walk(s3.home):
        for file in files:
            with open(os.path.join(folder, file), "rb") as handle:
                if s3.moto.secret.encode() in handle.read():
                    leaked.append(file)
    assert leaked == []


def test_trace_shows_each_request_sent_and_no_credential(s3):
    s3.put("t/a.txt", b"a", ContentType="text/plain")
    status, _, err = s3.run("--trace", "-c", "meta set custom.k=v -- t/a.txt")
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.startswith("storesh: trace: ")]
    assert [line.split()[2] for line in lines] == ["GET", "HEAD", "HEAD", "PUT"]
    assert all(re.search(r" → 200 in \d+ ms$", line) for line in lines), lines
    assert "/t/a.txt" in lines[-1]
    assert s3.moto.secret not in err and "Signature=" not in err and "AWS4-HMAC-SHA256" not in err


def test_S4_credentials_region_and_endpoint_from_a_profile(s3):
    s3.put("p/a.txt")
    aws = s3.home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        f"[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n"
        f"[work]\naws_access_key_id = {s3.moto.key_id}\naws_secret_access_key = {s3.moto.secret}\n")
    (aws / "config").write_text(f"[profile work]\nregion = us-east-1\nendpoint_url = {s3.moto.url}\n")
    env = {"XDG_STATE_HOME": str(s3.home / "state")}
    status, out, err = harness.storesh(s3.home, "--bucket", f"s3://{S3_BUCKET}", "-c", "ls p; whoami", AWS_PROFILE="work", **env)
    assert status == 0, err.decode()
    assert "a.txt" in out.decode() and "profile work in" in out.decode()
    status, _, err = harness.storesh(s3.home, "--bucket", f"s3://{S3_BUCKET}", "-c", "ls", AWS_PROFILE="play", **env)
    assert status == 1 and "The AWS profile play ($AWS_PROFILE) is in neither" in err.decode()
    (aws / "credentials").unlink()
    status, _, err = harness.storesh(s3.home, "--bucket", f"s3://{S3_BUCKET}", "-c", "ls", **env)
    assert status == 1
    message = err.decode()
    assert "No AWS credentials were found. Tried: $AWS_ACCESS_KEY_ID" in message and "aws configure" in message


class CapturingS3(ThreadingHTTPServer):
    """Answers as an empty S3 bucket would and keeps each request as it arrived: method, raw path, headers, body."""

    def __init__(self):
        self.captured = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def answer(self, status, headers=(), body=b""):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.captured.append((self.command, self.path, dict(self.headers.items()), body))
                if self.command == "GET":
                    self.answer(200, [("Content-Type", "application/xml")],
                                b'<?xml version="1.0"?><ListBucketResult><KeyCount>0</KeyCount>'
                                b"<IsTruncated>false</IsTruncated></ListBucketResult>")
                elif self.command == "HEAD":
                    self.answer(200, [("Content-Type", "text/plain"), ("ETag", '"9dd4e461268c8034f5c8564e155c67a6"'),
                                      ("Last-Modified", "Tue, 24 Nov 2026 06:00:00 GMT"), ("Content-Length", "1")])
                else:
                    self.answer(200, [("ETag", '"9dd4e461268c8034f5c8564e155c67a6"')])

            do_GET = do_HEAD = do_PUT = do_DELETE = do_POST = handle_any

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_S4_signatures_agree_with_botocores_signer_on_the_requests_as_sent(tmp_path):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    server = CapturingS3()
    secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "session-token",
           "AWS_REGION": "eu-west-3", "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{server.server_address[1]}"}
    script = ("meta get 'dir/a b+ü~*(1).txt'; ls -n 7 'some dir/ü'; put --data x 'x/ä b?c=d&e'; "
              "meta set custom.k=v 'dir/a b+ü~*(1).txt'")
    status, _, err = harness.storesh(tmp_path, "--bucket", "s3://my.bucket-1", "--quiet", "-c", script, **env)
    server.shutdown()
    assert status == 0, err.decode()
    methods = [request[0] for request in server.captured]
    assert {"GET", "HEAD", "PUT"} <= set(methods), methods
    for method, path, headers, body in server.captured:
        authorization = headers["Authorization"]
        match = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/eu-west-3/s3/aws4_request, "
                             r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})", authorization)
        assert match, authorization
        signed = match.group(2).split(";")
        assert {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"} <= set(signed)
        lower = {name.lower(): value for name, value in headers.items()}
        request = AWSRequest(method=method, url=f"http://{lower['host']}{path}",
                             headers={name: lower[name] for name in signed}, data=body)
        auth = S3SigV4Auth(Credentials("AKIDEXAMPLE", secret, "session-token"), "s3", "eu-west-3")
        request.context["timestamp"] = lower["x-amz-date"]
        canonical = auth.canonical_request(request)
        expected = auth.signature(auth.string_to_sign(request, canonical), request)
        assert match.group(3) == expected, (method, path, canonical)
