"""Rule M9: Cloud Storage's own fields of an object, through the official Python client against `storesh serve`:
a custom time that only moves forward, holds that refuse delete and overwrite (403) until released, a bucket's
default event-based hold, storage classes given at upload and changed by a rewrite (not a patch), contexts made,
changed and removed key by key, a composite's component count; `storesh check` finds the files sound (issue 54)."""
import datetime
import json

import pytest
import requests
from google.api_core import exceptions

import harness


def test_custom_time_moves_only_forward(server, client):
    bucket = client.create_bucket("timed")
    blob = bucket.blob("invoice.pdf")
    first = datetime.datetime(2026, 11, 28, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc)
    blob.custom_time = first
    blob.upload_from_string(b"%PDF")
    assert bucket.get_blob("invoice.pdf").custom_time == first
    later = first + datetime.timedelta(days=1)
    blob.custom_time = later
    blob.patch()
    assert bucket.get_blob("invoice.pdf").custom_time == later and blob.metageneration == 2
    blob.custom_time = first
    with pytest.raises(exceptions.BadRequest, match="only move forward"):
        blob.patch()
    assert bucket.get_blob("invoice.pdf").custom_time == later


def test_holds_refuse_delete_and_overwrite_until_released(server, client):
    bucket = client.create_bucket("held")
    blob = bucket.blob("evidence.txt")
    blob.upload_from_string(b"v1")
    blob.temporary_hold = True
    blob.patch()
    with pytest.raises(exceptions.Forbidden):
        blob.delete()
    with pytest.raises(exceptions.Forbidden):
        bucket.blob("evidence.txt").upload_from_string(b"v2")
    assert bucket.blob("evidence.txt").download_as_bytes() == b"v1"
    blob.temporary_hold = False
    blob.patch()
    blob.delete()
    # A bucket's default event-based hold holds every new object.
    bucket.default_event_based_hold = True
    bucket.patch()
    assert client.get_bucket("held").default_event_based_hold
    fresh = bucket.blob("fresh.txt")
    fresh.upload_from_string(b"x")
    assert bucket.get_blob("fresh.txt").event_based_hold
    with pytest.raises(exceptions.Forbidden):
        fresh.delete()
    fresh.event_based_hold = False
    fresh.patch()
    fresh.delete()


def test_storage_classes_are_given_at_upload_and_changed_by_rewrite(server, client, tmp_path):
    bucket = client.bucket("classes")
    bucket.storage_class = "NEARLINE"
    bucket = client.create_bucket(bucket)
    blob = bucket.blob("archive.tar")
    blob.upload_from_string(b"tar")
    assert bucket.get_blob("archive.tar").storage_class == "NEARLINE"
    blob.update_storage_class("COLDLINE")
    assert bucket.get_blob("archive.tar").storage_class == "COLDLINE"
    patched = requests.patch(f"{server.url}/storage/v1/b/classes/o/archive.tar", json={"storageClass": "ARCHIVE"}, timeout=30)
    assert patched.status_code == 400 and "rewrite" in patched.json()["error"]["message"]
    given = bucket.blob("standard.txt")
    given.storage_class = "STANDARD"
    given.upload_from_string(b"s")
    assert bucket.get_blob("standard.txt").storage_class == "STANDARD"
    status, out, err = harness.storesh(tmp_path, "check", "--json", "--bucket", str(server.home / "classes.bucket"))
    assert status == 0 and json.loads(out)["sound"], err


def test_contexts_are_made_changed_and_removed_key_by_key(server, client):
    from google.cloud.storage.blob import ObjectContexts, ObjectCustomContextPayload
    bucket = client.create_bucket("contexts")
    blob = bucket.blob("model.bin")
    blob.contexts = ObjectContexts(blob, custom={"team": ObjectCustomContextPayload(value="vision"),
                                                 "stage": ObjectCustomContextPayload(value="draft")})
    blob.upload_from_string(b"weights")
    read = bucket.get_blob("model.bin")
    made = read._properties["contexts"]["custom"]["stage"]
    assert made["value"] == "draft" and made["createTime"] == made["updateTime"]
    read.contexts.custom["stage"].value = "final"
    read.contexts.custom["team"].value = None
    read.patch()
    changed = bucket.get_blob("model.bin")._properties["contexts"]["custom"]
    assert set(changed) == {"stage"} and changed["stage"]["value"] == "final"
    assert changed["stage"]["createTime"] == made["createTime"] and changed["stage"]["updateTime"] > made["updateTime"]
    read.contexts = None
    read.patch()
    assert "contexts" not in bucket.get_blob("model.bin")._properties
    # The service's limits: 50 keys, 256 bytes a key or value, no control character in a key.
    for contexts in [{f"k{index}": {"value": "v"} for index in range(51)}, {"k": {"value": "v" * 257}}, {"a\u0000b": {"value": "v"}}]:
        refused = requests.patch(f"{server.url}/storage/v1/b/contexts/o/model.bin", json={"contexts": {"custom": contexts}}, timeout=30)
        assert refused.status_code == 400, refused.text


def test_a_composite_counts_its_components(server, client):
    bucket = client.create_bucket("parts")
    sources = []
    for index in range(3):
        source = bucket.blob(f"part-{index}")
        source.upload_from_string(b"x")
        sources.append(source)
    first = bucket.blob("first")
    first.compose(sources[:2])
    assert first.component_count == 2
    whole = bucket.blob("whole")
    whole.compose([first, sources[2]])
    assert whole.component_count == 3


def test_customer_supplied_keys_are_asked_for_on_every_read(server, client, tmp_path):
    import os
    bucket = client.create_bucket("keyed")
    key, other = os.urandom(32), os.urandom(32)
    bucket.blob("secret.txt", encryption_key=key).upload_from_string(b"classified")
    plain = bucket.get_blob("secret.txt")  # metadata is read without the key
    assert plain._properties["customerEncryption"]["encryptionAlgorithm"] == "AES256"
    with pytest.raises(exceptions.BadRequest, match="customer-supplied encryption key"):
        plain.download_as_bytes()
    with pytest.raises(exceptions.BadRequest, match="incorrect"):
        bucket.blob("secret.txt", encryption_key=other).download_as_bytes()
    assert bucket.blob("secret.txt", encryption_key=key).download_as_bytes() == b"classified"
    # A rewrite rotates the key: the old one no longer reads it.
    rotated = bucket.blob("secret.txt", encryption_key=other)
    rotated.rewrite(bucket.blob("secret.txt", encryption_key=key))
    assert bucket.blob("secret.txt", encryption_key=other).download_as_bytes() == b"classified"
    with pytest.raises(exceptions.BadRequest):
        bucket.blob("secret.txt", encryption_key=key).download_as_bytes()
    # Firebase's API cannot give a key: the content is not read through it.
    v0 = requests.get(f"{server.url}/v0/b/keyed/o/secret.txt", params={"alt": "media"},
                      headers={"Authorization": "Bearer owner"}, timeout=30)
    assert v0.status_code == 400 and "customer-supplied" in v0.text, v0.text
    status, out, err = harness.storesh(tmp_path, "check", "--json", "--bucket", str(server.home / "keyed.bucket"))
    assert status == 0 and json.loads(out)["sound"], err
