"""Rule B5: object versioning, as Cloud Storage has it, through the official Python client and the JSON API. While a
bucket's versioning is on, an overwritten or deleted object is kept as a noncurrent generation (with timeDeleted); a
generation is read, downloaded, patched, copied, composed and deleted by number; `versions=true` lists every
generation, oldest first, page by page; a bucket with noncurrent generations is not empty; `storesh check` counts
them (issue 54). Without versioning, nothing is kept, as before."""
import datetime
import json

import pytest
import requests
from google.api_core import exceptions

import harness
from serving import Server


def versioned_bucket(client, name):
    bucket = client.bucket(name)
    bucket.versioning_enabled = True
    made = client.create_bucket(bucket)
    assert made.versioning_enabled
    assert client.get_bucket(name).versioning_enabled
    return made


def test_overwrites_and_deletes_keep_noncurrent_generations(server, client):
    bucket = versioned_bucket(client, "versioned")
    blob = bucket.blob("notes.txt")
    blob.upload_from_string(b"first")
    first, first_etag = blob.generation, blob.etag
    blob.upload_from_string(b"second")
    second = blob.generation
    assert second > first
    # The live object is the second; the first is kept, with the time it stopped being live.
    assert bucket.get_blob("notes.txt").generation == second
    old = bucket.get_blob("notes.txt", generation=first)
    assert (old.generation, old.etag) == (first, first_etag)
    assert old.time_deleted is not None and bucket.get_blob("notes.txt").time_deleted is None
    assert bucket.blob("notes.txt", generation=first).download_as_bytes() == b"first"
    assert [b.generation for b in client.list_blobs(bucket, versions=True)] == [first, second]
    assert [b.generation for b in client.list_blobs(bucket)] == [second]
    # A noncurrent generation's metadata is its own.
    old.content_language = "it"
    old.patch()
    assert bucket.get_blob("notes.txt", generation=first).content_language == "it"
    assert bucket.get_blob("notes.txt").content_language is None
    # A delete without a generation keeps the live object as noncurrent; by number, a generation goes for good.
    bucket.blob("notes.txt").delete()
    assert bucket.get_blob("notes.txt") is None
    assert [b.generation for b in client.list_blobs(bucket, versions=True)] == [first, second]
    bucket.blob("notes.txt", generation=first).delete()
    assert [b.generation for b in client.list_blobs(bucket, versions=True)] == [second]
    with pytest.raises(exceptions.NotFound):
        bucket.blob("notes.txt", generation=first).download_as_bytes()
    # Not empty while a noncurrent generation is kept.
    with pytest.raises(exceptions.Conflict):
        bucket.delete()
    bucket.blob("notes.txt", generation=second).delete()
    bucket.delete()
    assert not (server.home / "versioned.bucket").exists()


def test_a_noncurrent_generation_is_copied_and_composed_by_number(server, client):
    bucket = versioned_bucket(client, "restorable")
    blob = bucket.blob("page.html")
    blob.upload_from_string(b"<p>good</p>", content_type="text/html")
    good = blob.generation
    blob.upload_from_string(b"<p>broken</p>")
    # Bringing an old generation back is a copy of it over the live object, as on the service.
    restored = bucket.copy_blob(bucket.blob("page.html"), bucket, "page.html", source_generation=good)
    assert restored.generation > good and restored.content_type == "text/html"
    assert bucket.blob("page.html").download_as_bytes() == b"<p>good</p>"
    assert len(list(client.list_blobs(bucket, versions=True))) == 3
    answer = requests.post(
        f"{server.url}/storage/v1/b/restorable/o/both.html/compose",
        json={"sourceObjects": [{"name": "page.html", "generation": str(good)}, {"name": "page.html"}]}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert bucket.blob("both.html").download_as_bytes() == b"<p>good</p><p>good</p>"
    rewritten = requests.post(
        f"{server.url}/storage/v1/b/restorable/o/page.html/rewriteTo/b/restorable/o/old.html",
        params={"sourceGeneration": str(good)}, json={}, timeout=30)
    assert rewritten.status_code == 200 and rewritten.json()["done"], rewritten.text
    assert bucket.blob("old.html").download_as_bytes() == b"<p>good</p>"


def test_every_generation_is_listed_page_by_page_and_under_a_delimiter(server, client):
    bucket = versioned_bucket(client, "paged")
    generations = {}
    for name in ["a", "b", "dir/x", "dir/y", "c"]:
        for round in range(3):
            blob = bucket.blob(name)
            blob.upload_from_string(f"{name}{round}".encode())
            generations.setdefault(name, []).append(blob.generation)
    expected = [(name, g) for name in sorted(generations) for g in generations[name]]
    seen, token, pages = [], None, 0
    while True:
        params = {"versions": "true", "maxResults": "4"} | ({"pageToken": token} if token else {})
        page = requests.get(f"{server.url}/storage/v1/b/paged/o", params=params, timeout=30).json()
        pages += 1
        seen += [(item["name"], int(item["generation"])) for item in page.get("items", [])]
        token = page.get("nextPageToken")
        if not token:
            break
    assert seen == expected and pages == 4
    delimited = requests.get(
        f"{server.url}/storage/v1/b/paged/o", params={"versions": "true", "delimiter": "/"}, timeout=30).json()
    assert delimited["prefixes"] == ["dir/"]
    assert [item["name"] for item in delimited["items"]] == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    noncurrent = [item for item in delimited["items"] if "timeDeleted" in item]
    assert len(noncurrent) == 6


def test_without_versioning_nothing_is_kept_and_turning_it_off_keeps_what_was_kept(server, client):
    plain = client.create_bucket("plain")
    assert plain.versioning_enabled is False
    blob = plain.blob("x")
    blob.upload_from_string(b"1")
    blob.upload_from_string(b"2")
    assert len(list(client.list_blobs(plain, versions=True))) == 1
    bucket = versioned_bucket(client, "switched")
    blob = bucket.blob("x")
    blob.upload_from_string(b"1")
    blob.upload_from_string(b"2")
    bucket.versioning_enabled = False
    bucket.patch()
    assert client.get_bucket("switched").versioning_enabled is False
    blob.upload_from_string(b"3")
    assert len(list(client.list_blobs(bucket, versions=True))) == 2


def test_check_counts_noncurrent_generations_and_finds_the_file_sound(server, client, tmp_path):
    bucket = versioned_bucket(client, "checked")
    for round in range(3):
        bucket.blob("kept").upload_from_string(b"x" * (round + 1))
    bucket.blob("gone").upload_from_string(b"y")
    bucket.blob("gone").delete()
    status, out, err = harness.storesh(tmp_path, "check", "--json", "--bucket", str(server.home / "checked.bucket"))
    assert status == 0, err
    report = json.loads(out)
    assert report["sound"] and (report["objects"], report["noncurrentGenerations"]) == (1, 3)
    assert report["contentBytes"] == 3 + 1 + 2 + 1


def test_soft_delete_keeps_deleted_objects_restorable_for_the_policys_time(server, client, tmp_path):
    """Rule B6: with a soft delete policy, a deleted or replaced object is kept soft-deleted (listed with
    softDeleted=true, its metadata read by generation, never its content) and restored as a new generation; a policy
    outside the service's range is refused; a bucket keeping only soft-deleted objects may be deleted."""
    bucket = client.bucket("soft")
    bucket.soft_delete_policy.retention_duration_seconds = 7 * 86400
    bucket = client.create_bucket(bucket)
    assert bucket.soft_delete_policy.retention_duration_seconds == 7 * 86400
    assert bucket.soft_delete_policy.effective_time is not None
    blob = bucket.blob("draft.txt")
    blob.upload_from_string(b"first")
    first = blob.generation
    blob.upload_from_string(b"second")  # the first is replaced: soft-deleted
    second = blob.generation
    blob.delete()
    assert list(client.list_blobs(bucket)) == []
    soft = list(client.list_blobs(bucket, soft_deleted=True))
    assert [b.generation for b in soft] == [first, second]
    kept = bucket.get_blob("draft.txt", generation=first, soft_deleted=True)
    assert kept.hard_delete_time - kept.soft_delete_time == datetime.timedelta(days=7)
    media = requests.get(f"{server.url}/storage/v1/b/soft/o/draft.txt",
                         params={"alt": "media", "generation": first, "softDeleted": "true"}, timeout=30)
    assert media.status_code == 400
    restored = bucket.restore_blob("draft.txt", generation=first)
    assert restored.generation not in (first, second)
    assert bucket.blob("draft.txt").download_as_bytes() == b"first"
    assert [b.generation for b in client.list_blobs(bucket, soft_deleted=True)] == [second]
    # Restoring over a live object is a write: its conditions hold, or nothing happens.
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.restore_blob("draft.txt", generation=second, if_generation_match=0)
    refused = requests.patch(f"{server.url}/storage/v1/b/soft",
                             json={"softDeletePolicy": {"retentionDurationSeconds": "3600"}}, timeout=30)
    assert refused.status_code == 400 and "7 to 90 days" in refused.json()["error"]["message"]
    status, out, err = harness.storesh(tmp_path, "check", "--json", "--bucket", str(server.home / "soft.bucket"))
    report = json.loads(out)
    assert status == 0 and report["sound"] and report["softDeletedGenerations"] == 1, err
    bucket.blob("draft.txt").delete()
    bucket.delete()  # soft-deleted objects do not keep a bucket from being deleted, as on the service


def test_the_xml_api_lists_every_generation_with_versions(server, client):
    """Rule B5 on the XML API: `GET /BUCKET?versions` lists each generation with its number."""
    import xml.etree.ElementTree as ElementTree
    bucket = versioned_bucket(client, "xml-versions")
    blob = bucket.blob("a.txt")
    blob.upload_from_string(b"1")
    first = blob.generation
    blob.upload_from_string(b"2")
    listing = ElementTree.fromstring(requests.get(f"{server.url}/xml-versions", params={"versions": ""}, timeout=30).content)
    namespace = "{http://doc.s3.amazonaws.com/2006-03-01}"
    assert [int(g.text) for g in listing.iter(namespace + "Generation")] == [first, blob.generation]
    plain = ElementTree.fromstring(requests.get(f"{server.url}/xml-versions", timeout=30).content)
    assert [int(g.text) for g in plain.iter(namespace + "Generation")] == [blob.generation]


def test_an_export_carries_settings_fields_and_generations_into_a_new_bucket_file(server, client, tmp_path, monkeypatch):
    """Rules B5, B6, M9: `storesh export` of a served bucket writes its settings, each object's own fields (holds,
    retention, custom time, storage class, contexts), its noncurrent and its soft-deleted generations; `storesh import`
    into a new bucket file brings them all back, and the official client, served the copy, reads the same bucket."""
    made = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app", "enableObjectRetention": "true"},
                         json={"name": "kept", "versioning": {"enabled": True}, "labels": {"team": "blue"},
                               "softDeletePolicy": {"retentionDurationSeconds": str(7 * 86400)}}, timeout=30)
    assert made.status_code == 200, made.text
    bucket = client.get_bucket("kept")
    for text in (b"one", b"two", b"three"):
        bucket.blob("notes.txt").upload_from_string(text)
    held = bucket.blob("held.txt")
    held.upload_from_string(b"held")
    patched = requests.patch(f"{server.url}/storage/v1/b/kept/o/held.txt", timeout=30, json={
        "temporaryHold": True, "customTime": "2026-01-01T00:00:00Z", "contexts": {"custom": {"k": {"value": "v"}}},
        "retention": {"mode": "Unlocked", "retainUntilTime": "2040-01-01T00:00:00Z"}})
    assert patched.status_code == 200, patched.text
    bucket.versioning_enabled = False
    bucket.patch()
    gone = bucket.blob("gone.txt")
    gone.upload_from_string(b"gone")
    gone.delete()

    def seen(client):
        bucket = client.get_bucket("kept")
        resource = {key: bucket._properties.get(key) for key in ("versioning", "labels", "objectRetention")}
        resource["softDelete"] = bucket.soft_delete_policy.retention_duration_seconds
        generations = [(b.name, b.generation, b.md5_hash, b.time_deleted) for b in client.list_blobs(bucket, versions=True)]
        soft = [(b.name, b.generation, b.soft_delete_time, b.hard_delete_time) for b in client.list_blobs(bucket, soft_deleted=True)]
        blob = bucket.get_blob("held.txt")
        fields = (blob.temporary_hold, blob.custom_time, blob._properties.get("retention"), blob._properties.get("contexts"))
        return resource, generations, soft, fields

    before = seen(client)
    assert len(before[1]) == 4 and len(before[2]) == 1, before
    archive = tmp_path / "kept.json"
    status, _, err = harness.storesh(tmp_path, "--bucket", str(tmp_path / "kept.bucket"), "export", str(archive))
    assert status == 0 and b"exported 2 objects, 2 noncurrent generations and 1 soft-deleted generation to" in err, err
    copy_home = tmp_path / "copy"
    copy_home.mkdir()
    status, _, err = harness.storesh(tmp_path, "--bucket", str(copy_home / "kept.bucket"), "import", str(archive))
    assert status == 0 and b"with the archive's bucket settings" in err, err
    status, out, err = harness.storesh(tmp_path, "--bucket", str(copy_home / "kept.bucket"), "check")
    assert status == 0 and b"2 noncurrent generations, 1 soft-deleted generation" in out + err, out + err

    copy = Server(copy_home, copy_home / "kept.bucket", name="kept")
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", copy.url)
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        assert seen(storage.Client(project="demo-app", credentials=AnonymousCredentials())) == before
        # Held there as here.
        assert requests.delete(f"{copy.url}/storage/v1/b/kept/o/held.txt", timeout=30).status_code == 403
    finally:
        status, err = copy.stop()
        assert status == 0, err


def test_the_emulators_reset_empties_every_generation_whatever_holds_and_retention_say(server, client):
    """The emulator's reset (`/internal/reset`, rules-unit-testing's clearStorage()) empties each served bucket as its
    owner would: live objects, noncurrent and soft-deleted generations, held and retained objects (a test that
    locked an object's retention must not leave a bucket no later test can empty); settings stay."""
    made = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app", "enableObjectRetention": "true"},
                         json={"name": "resettable", "versioning": {"enabled": True},
                               "softDeletePolicy": {"retentionDurationSeconds": str(7 * 86400)}}, timeout=30)
    assert made.status_code == 200, made.text
    bucket = client.get_bucket("resettable")
    for text in (b"one", b"two"):
        bucket.blob("notes.txt").upload_from_string(text)
    bucket.blob("held.txt").upload_from_string(b"held")
    locked = requests.patch(f"{server.url}/storage/v1/b/resettable/o/held.txt", timeout=30, json={
        "temporaryHold": True, "retention": {"mode": "Locked", "retainUntilTime": "2040-01-01T00:00:00Z"}})
    assert locked.status_code == 200, locked.text
    bucket.versioning_enabled = False
    bucket.patch()
    bucket.blob("notes.txt").delete()  # the live one soft-deleted; the first stays noncurrent
    assert len(list(client.list_blobs(bucket, versions=True))) == 2 and len(list(client.list_blobs(bucket, soft_deleted=True))) == 1
    reset = requests.post(f"{server.url}/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30)
    assert reset.status_code == 200 and "are empty" in reset.json()["message"], reset.text
    assert list(client.list_blobs(bucket, versions=True)) == [] and list(client.list_blobs(bucket, soft_deleted=True)) == []
    after = client.get_bucket("resettable")
    assert after.soft_delete_policy.retention_duration_seconds == 7 * 86400 and after._properties["objectRetention"] == {"mode": "Enabled"}
    status, out, err = harness.storesh(server.home, "--bucket", str(server.home / "resettable.bucket"), "check")
    assert status == 0 and b": sound (0 objects, 0 snapshots," in out + err, out + err
