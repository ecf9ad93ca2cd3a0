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
