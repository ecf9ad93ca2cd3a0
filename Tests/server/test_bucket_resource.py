"""Rule B4: a bucket's settings, as Cloud Storage's JSON API has them, through the official Python client: given at
create, stored with the bucket and answered; patched and updated under metageneration preconditions; a setting
storesh cannot honour refused with its reason and nothing made; an empty bucket the server made deleted, a bucket
with objects 409, the first bucket and a bucket file someone else made never deleted (issue 54)."""
import pytest
import requests
from google.api_core import exceptions

import harness
from serving import BUCKET


def test_settings_given_at_create_are_stored_and_answered(server, client):
    bucket = client.bucket("settings-bucket")
    bucket.labels = {"env": "test"}
    bucket.storage_class = "NEARLINE"
    bucket.add_lifecycle_delete_rule(age=30)
    bucket.cors = [{"origin": ["*"], "method": ["GET"], "maxAgeSeconds": 60}]
    created = client.create_bucket(bucket, location="eu")
    assert (created.location, created.location_type, created.storage_class) == ("EU", "multi-region", "NEARLINE")
    assert created.metageneration == 1 and created.time_created is not None
    # Read again from the bucket's file, by another client object: kept, not echoed.
    again = client.get_bucket("settings-bucket")
    assert again.labels == {"env": "test"} and again.storage_class == "NEARLINE"
    assert list(again.lifecycle_rules) == [{"action": {"type": "Delete"}, "condition": {"age": 30}}]
    assert again.cors == [{"maxAgeSeconds": 60, "method": ["GET"], "origin": ["*"]}]
    assert again.time_created == created.time_created
    layout = requests.get(f"{server.url}/storage/v1/b/settings-bucket/storageLayout", timeout=30).json()
    assert layout["location"] == "EU" and layout["hierarchicalNamespace"] == {"enabled": False}
    assert [b.name for b in client.list_buckets(prefix="settings-")] == ["settings-bucket"]


def test_patch_and_update_move_the_metageneration_under_its_preconditions(server, client):
    bucket = client.create_bucket("patched-bucket")
    bucket.labels = {"a": "1", "b": "2"}
    bucket.patch(if_metageneration_match=1)
    assert bucket.metageneration == 2 and bucket.labels == {"a": "1", "b": "2"}
    bucket.labels = {"a": "1"}  # b removed: the client sends it as null
    bucket.patch()
    assert client.get_bucket("patched-bucket").labels == {"a": "1"}
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.patch(if_metageneration_match=1)
    bucket.iam_configuration.uniform_bucket_level_access_enabled = True
    bucket.patch()
    assert client.get_bucket("patched-bucket").iam_configuration.uniform_bucket_level_access_enabled
    # An update replaces: what it does not carry goes back to a new bucket's.
    reloaded = client.get_bucket("patched-bucket")
    reloaded.storage_class = "COLDLINE"
    reloaded._properties.pop("labels")
    reloaded.update()
    after = client.get_bucket("patched-bucket")
    assert after.storage_class == "COLDLINE" and after.labels == {} and after.metageneration == 5
    with pytest.raises(exceptions.BadRequest, match="location cannot be changed"):
        after._patch_property("location", "ASIA")
        after.patch()


@pytest.mark.parametrize("setting, value", [
    ("versioning", {"enabled": "yes"}), ("retentionPolicy", {"retentionPeriod": "0"}),
    ("softDeletePolicy", {"retentionDurationSeconds": "100"}), ("hierarchicalNamespace", {"enabled": True}),
    ("defaultEventBasedHold", "yes"), ("storageClass", "EXPENSIVE"), ("noSuchSetting", 1),
    ("encryption", {"defaultKmsKeyName": "projects/p/locations/us/keyRings/r/cryptoKeys/k"}),
    ("encryption", {"googleManagedEncryptionEnforcementConfig": {"restrictionMode": "Sometimes"}}),
    ("ipFilter", {"mode": "Enabled", "publicNetworkSource": {"allowedIpCidrRanges": ["203.0.113.10/32"]}}),
    ("autoclass", {"enabled": True, "terminalStorageClass": "COLDLINE"}),
])
def test_a_setting_storesh_cannot_honour_is_refused_and_nothing_is_made(server, client, setting, value):
    answer = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app"},
                           json={"name": "refused-bucket", setting: value}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert setting in answer.json()["error"]["message"]
    assert not (server.home / "refused-bucket.bucket").exists()
    with pytest.raises(exceptions.NotFound):
        client.get_bucket("refused-bucket")
    # On an existing bucket, nothing changes either.
    client.create_bucket("kept-bucket")
    assert requests.patch(f"{server.url}/storage/v1/b/kept-bucket", json={setting: value}, timeout=30).status_code == 400
    assert client.get_bucket("kept-bucket").metageneration == 1


def test_a_namespace_asked_to_be_flat_is_said_to_be(server, client):
    bucket = client.bucket("flat-bucket")
    bucket.hierarchical_namespace_enabled = False
    client.create_bucket(bucket)
    assert client.get_bucket("flat-bucket").hierarchical_namespace_enabled is False
    assert client.create_bucket("plain-bucket").hierarchical_namespace_enabled is None


def test_object_retention_is_chosen_at_create_and_refused_in_a_bucket_made_without_it(server):
    answer = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app", "enableObjectRetention": "true"},
                           json={"name": "retained-bucket"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["objectRetention"] == {"mode": "Enabled"}, answer.text
    plain = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app"}, json={"name": "plain-bucket"}, timeout=30)
    assert plain.status_code == 200 and "objectRetention" not in plain.json()
    retention = {"mode": "Unlocked", "retainUntilTime": "2030-01-01T00:00:00Z"}
    for bucket, status in (("plain-bucket", 400), ("retained-bucket", 200)):
        upload = requests.post(f"{server.url}/upload/storage/v1/b/{bucket}/o", params={"uploadType": "media", "name": "x.txt"},
                               data=b"x", timeout=30)
        assert upload.status_code == 200, upload.text
        patched = requests.patch(f"{server.url}/storage/v1/b/{bucket}/o/x.txt", json={"retention": retention}, timeout=30)
        assert patched.status_code == status, patched.text
    assert "Object retention is not enabled" in requests.patch(
        f"{server.url}/storage/v1/b/plain-bucket/o/x.txt", json={"retention": retention}, timeout=30).json()["error"]["message"]
    # Kept until 2030: neither deleted nor shortened without the override.
    assert requests.delete(f"{server.url}/storage/v1/b/retained-bucket/o/x.txt", timeout=30).status_code == 403
    shortened = {"retention": {"mode": "Unlocked", "retainUntilTime": "2029-01-01T00:00:00Z"}}
    assert requests.patch(f"{server.url}/storage/v1/b/retained-bucket/o/x.txt", json=shortened, timeout=30).status_code == 403
    assert requests.patch(f"{server.url}/storage/v1/b/retained-bucket/o/x.txt", json={"retention": None},
                          params={"overrideUnlockedRetention": "true"}, timeout=30).status_code == 200
    assert requests.delete(f"{server.url}/storage/v1/b/retained-bucket/o/x.txt", timeout=30).status_code == 204


def test_only_an_empty_bucket_the_server_made_is_deleted(server, client, tmp_path):
    bucket = client.create_bucket("deleted-bucket")
    bucket.blob("x.txt").upload_from_string(b"x")
    with pytest.raises(exceptions.Conflict, match="not empty"):
        bucket.delete()
    bucket.delete(force=True)
    assert not (server.home / "deleted-bucket.bucket").exists()
    assert not list(server.home.glob("deleted-bucket.bucket*"))
    with pytest.raises(exceptions.NotFound):
        client.get_bucket("deleted-bucket")
    # Made again under the same name: a new, empty bucket.
    assert list(client.create_bucket("deleted-bucket").list_blobs()) == []
    # The first bucket, and a bucket file the shell made in the directory, are never deleted.
    with pytest.raises(exceptions.Conflict, match="started with"):
        client.bucket(BUCKET).delete()
    shells = server.home / "shells-bucket.bucket"
    status, _, err = harness.storesh(tmp_path, "import", "--bucket", str(shells), "-", stdin=b'{"format":"storesh-bucket","version":1,"objects":[]}')
    assert status == 0, err
    with pytest.raises(exceptions.Conflict, match="did not make"):
        client.bucket("shells-bucket").delete()
    assert shells.exists()
    for file in server.home.glob("*.bucket"):
        status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(file))
        assert status == 0, (file, out, err)


def test_B6_a_soft_deleted_bucket_is_kept_whole_restored_once_and_only_while_its_name_is_free(server, client, tmp_path):
    """Rule B6: a bucket deleted under a soft delete policy keeps its file aside with its soft-deleted objects; it is
    restored with its generation, not over a live bucket of its name, not twice; bad generations are refused; a file
    in the directory that only looks like a kept bucket (a link) is not listed."""
    bucket = client.bucket("kept-whole")
    bucket.soft_delete_policy.retention_duration_seconds = 7 * 86400
    bucket = client.create_bucket(bucket)
    bucket.blob("a.txt").upload_from_string(b"a")
    bucket.blob("a.txt").delete()  # soft-deleted inside: it does not keep the bucket from being deleted
    generation = bucket.generation
    bucket.delete()
    kept = list(server.home.glob("kept-whole@*.soft-deleted"))
    assert [file.name for file in kept] == [f"kept-whole@{generation}.soft-deleted"], kept
    url = f"{server.url}/storage/v1/b/kept-whole"
    assert requests.get(url, params={"softDeleted": "true"}).status_code == 400  # a generation is required
    assert requests.get(url, params={"softDeleted": "true", "generation": "x1"}).status_code == 400
    assert requests.get(url, params={"softDeleted": "true", "generation": str(generation + 1)}).status_code == 404
    (server.home / "kept-whole@1.soft-deleted").symlink_to(kept[0])
    listed = requests.get(f"{server.url}/storage/v1/b", params={"softDeleted": "true"}).json()["items"]
    assert [(b["name"], b["generation"]) for b in listed] == [("kept-whole", str(generation))], listed
    # A live bucket of the name: the kept one waits.
    client.create_bucket("kept-whole")
    answer = requests.post(f"{url}/restore", params={"generation": str(generation)})
    assert answer.status_code == 409 and "exists" in answer.json()["error"]["message"], answer.text
    client.bucket("kept-whole").delete()  # no policy: gone for good, the kept one stays
    restored = client.restore_bucket("kept-whole", generation=generation)
    assert restored.generation == generation and restored.soft_delete_time is None
    assert [b.name for b in client.list_blobs("kept-whole", soft_deleted=True)] == ["a.txt"]
    assert requests.post(f"{url}/restore", params={"generation": str(generation)}).status_code == 404  # not twice
    (server.home / "kept-whole@1.soft-deleted").unlink()
    client.bucket("kept-whole").delete()
    assert requests.post(f"{url}/restore", params={"generation": "12"}).status_code == 404
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(server.home / f"kept-whole@{generation}.soft-deleted"))
    assert status == 0, out + err


def test_acls_and_iam_policies_are_kept_and_checked_as_the_service_checks_them(server, client):
    """Rule B7: ACLs and IAM policies are stored and answered, never used to decide; uniform access and public access
    prevention constrain them as on the service."""
    bucket = client.create_bucket("governed")
    bucket.acl.reload()
    assert {entry["entity"] for entry in bucket.acl} >= {"project-owners-0"}
    bucket.acl.group("teachers@example.com").grant_read()
    bucket.acl.save()
    bucket.acl.reload()
    assert "READER" in bucket.acl.group("teachers@example.com").get_roles()
    blob = bucket.blob("page.html")
    blob.upload_from_string(b"<p>")
    blob.acl.domain("example.com").grant_read()
    blob.acl.save(if_metageneration_match=1)
    blob.acl.reload()
    assert "READER" in blob.acl.domain("example.com").get_roles()
    bucket.iam_configuration.public_access_prevention = "enforced"
    bucket.patch()
    with pytest.raises(exceptions.PreconditionFailed):
        blob.make_public()
    policy = bucket.get_iam_policy(requested_policy_version=3)
    policy.version = 3
    policy.bindings.append({"role": "roles/storage.objectViewer", "members": {"user:ada@example.com"},
                            "condition": {"title": "t", "expression": "true"}})
    with pytest.raises(exceptions.PreconditionFailed, match="uniform bucket-level access"):
        bucket.set_iam_policy(policy)
    bucket.iam_configuration.uniform_bucket_level_access_enabled = True
    bucket.patch()
    with pytest.raises(exceptions.BadRequest):
        bucket.acl.reload()  # no legacy ACL under uniform access
    stored = bucket.set_iam_policy(policy)
    assert client.bucket("governed").get_iam_policy(requested_policy_version=3).bindings == stored.bindings
    assert client.get_service_account_email().endswith("gs-project-accounts.iam.gserviceaccount.com")


def test_a_locked_retention_policy_is_never_removed_by_an_update_or_a_patch(server, client):
    """Rule M9: once locked, a bucket's retention policy is only lengthened: an update (PUT) that does not name it
    keeps it, locked; a patch that removes or shortens it is refused (403), as on the service."""
    bucket = client.bucket("locked-policy")
    bucket.retention_period = 3600
    bucket = client.create_bucket(bucket)
    bucket.lock_retention_policy()
    assert client.get_bucket("locked-policy").retention_policy_locked
    replaced = client.get_bucket("locked-policy")
    replaced._properties.pop("retentionPolicy")
    replaced.labels = {"after": "update"}
    replaced.update()
    after = client.get_bucket("locked-policy")
    assert (after.retention_period, after.retention_policy_locked, after.labels) == (3600, True, {"after": "update"})
    for policy in (None, {"retentionPeriod": "60"}):
        refused = requests.patch(f"{server.url}/storage/v1/b/locked-policy", json={"retentionPolicy": policy}, timeout=30)
        assert refused.status_code == 403, refused.text
    lengthened = requests.patch(f"{server.url}/storage/v1/b/locked-policy", json={"retentionPolicy": {"retentionPeriod": "7200"}}, timeout=30)
    assert lengthened.status_code == 200 and lengthened.json()["retentionPolicy"]["retentionPeriod"] == "7200", lengthened.text


def test_encryption_enforcement_is_kept_answered_and_refuses_what_it_restricts(server, client):
    """A bucket's encryption enforcement (`encryption.*EncryptionEnforcementConfig`), as the official client sets it:
    kept and answered, with an effective time while FullyRestricted; a new object encrypted a restricted way (a write,
    a copy, a restore) is refused with the service's 412; a null removes a config; a default KMS key is still refused,
    storesh serve having no key management service."""
    import os
    from google.api_core import exceptions as api
    from google.cloud.storage.bucket import EncryptionEnforcementConfig
    bucket = client.bucket("enforced")
    bucket.encryption.customer_supplied_encryption_enforcement_config = EncryptionEnforcementConfig("FullyRestricted")
    bucket.encryption.google_managed_encryption_enforcement_config = EncryptionEnforcementConfig("NotRestricted")
    bucket = client.create_bucket(bucket)
    csek = bucket.encryption.customer_supplied_encryption_enforcement_config
    gmek = bucket.encryption.google_managed_encryption_enforcement_config
    assert csek.restriction_mode == "FullyRestricted" and csek.effective_time is not None
    assert gmek.restriction_mode == "NotRestricted" and gmek.effective_time is None
    key = os.urandom(32)
    with pytest.raises(api.PreconditionFailed, match="customer-supplied key"):
        bucket.blob("secret.txt", encryption_key=key).upload_from_string(b"secret")
    bucket.blob("plain.txt").upload_from_string(b"plain")
    # Google-managed restricted instead: a plain write, or a plain copy, is refused; a customer-supplied key is taken.
    bucket.encryption.customer_supplied_encryption_enforcement_config = None
    bucket.encryption.google_managed_encryption_enforcement_config = EncryptionEnforcementConfig("FullyRestricted")
    bucket.patch()
    bucket.reload()
    assert bucket.encryption.customer_supplied_encryption_enforcement_config is None
    assert bucket.encryption.google_managed_encryption_enforcement_config.effective_time is not None
    with pytest.raises(api.PreconditionFailed):
        bucket.blob("more.txt").upload_from_string(b"plain")
    with pytest.raises(api.PreconditionFailed):
        bucket.copy_blob(bucket.blob("plain.txt"), bucket, "copied.txt")
    bucket.blob("secret.txt", encryption_key=key).upload_from_string(b"secret")
    assert bucket.blob("secret.txt", encryption_key=key).download_as_bytes() == b"secret"
    refused = requests.patch(f"{server.url}/storage/v1/b/enforced", json={"encryption": {"defaultKmsKeyName": "projects/p/k"}}, timeout=30)
    assert refused.status_code == 400 and "key management" in refused.json()["error"]["message"], refused.text


def test_where_a_bucket_is_survives_an_update_and_a_custom_dual_region_cannot_change(server, client):
    """A location, its type and a custom dual region (customPlacementConfig) are chosen at create: an update (PUT)
    that replaces the other settings keeps them, and a change of the dual region's regions is refused."""
    multi = client.create_bucket("multi-region-bucket", location="eu")
    dual = client.create_bucket("dual-region-bucket", location="US", data_locations=["us-east1", "US-WEST1"])
    assert (dual.location, dual.location_type, dual.data_locations) == ("US", "dual-region", ["US-EAST1", "US-WEST1"])
    for bucket in (multi, dual):
        bucket.labels = {"replaced": "yes"}
        bucket.update()
    assert (client.get_bucket("multi-region-bucket").location_type, client.get_bucket("dual-region-bucket").location_type) == (
        "multi-region", "dual-region")
    assert client.get_bucket("dual-region-bucket").data_locations == ["US-EAST1", "US-WEST1"]
    moved = requests.patch(f"{server.url}/storage/v1/b/dual-region-bucket",
                           json={"customPlacementConfig": {"dataLocations": ["US-EAST1", "US-CENTRAL1"]}}, timeout=30)
    assert moved.status_code == 400 and "cannot be changed" in moved.json()["error"]["message"], moved.text


def test_a_predefined_acl_gives_an_object_the_acl_it_names(server, client):
    """Rule B7: `predefinedAcl` on an upload or a patch, `destinationPredefinedAcl` on a copy or a compose, gives the
    object the ACL the service builds for that name (its owner, the administrator, with OWNER, and whom the name
    adds), never dropped; an unknown name is refused, and so is any ACL while uniform access is on."""
    def acl_of(blob):
        blob.acl.reload()
        return list(blob.acl)

    bucket = client.create_bucket("predefined-bucket")
    public = bucket.blob("public.txt")
    public.upload_from_string(b"public", predefined_acl="publicRead")
    entries = {(entry["entity"], entry["role"]) for entry in acl_of(public)}
    assert entries == {("project-owners-0", "OWNER"), ("allUsers", "READER")}, entries
    copied = bucket.copy_blob(public, bucket, "copied.txt")
    assert {entry["entity"] for entry in acl_of(copied)} == {"project-owners-0", "project-editors-0", "project-viewers-0"}
    answer = requests.post(f"{server.url}/storage/v1/b/predefined-bucket/o/public.txt/copyTo/b/predefined-bucket/o/private.txt",
                           params={"destinationPredefinedAcl": "private"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert [entry["entity"] for entry in acl_of(bucket.blob("private.txt"))] == ["project-owners-0"]
    patched = requests.patch(f"{server.url}/storage/v1/b/predefined-bucket/o/public.txt", params={"predefinedAcl": "authenticatedRead"},
                             json={}, timeout=30)
    assert patched.status_code == 200 and {e["entity"] for e in patched.json()["acl"]} == {"project-owners-0", "allAuthenticatedUsers"}, patched.text
    full = requests.get(f"{server.url}/storage/v1/b/predefined-bucket/o/public.txt", params={"projection": "full"}, timeout=30).json()
    assert full["owner"] == {"entity": "project-owners-0"}
    unknown = requests.patch(f"{server.url}/storage/v1/b/predefined-bucket/o/public.txt", params={"predefinedAcl": "everyone"}, json={}, timeout=30)
    assert unknown.status_code == 400 and "predefinedAcl" in unknown.json()["error"]["message"], unknown.text
    uniform = client.bucket("uniform-bucket")
    uniform.iam_configuration.uniform_bucket_level_access_enabled = True
    uniform = client.create_bucket(uniform)
    with pytest.raises(exceptions.BadRequest):
        uniform.blob("x.txt").upload_from_string(b"x", predefined_acl="publicRead")


def test_a_bucket_takes_its_predefined_acls_at_create_and_in_a_patch(server, client):
    """Rule B7: `predefinedAcl` and `predefinedDefaultObjectAcl` on buckets.insert and patch set the bucket's ACL and
    its default object ACL as the service builds them; an unknown name is refused and nothing is made."""
    bucket = client.bucket("predefined-acls")
    made = client.create_bucket(bucket, predefined_acl="publicRead", predefined_default_object_acl="private")
    made.acl.reload()
    assert {(e["entity"], e["role"]) for e in made.acl} == {("project-owners-0", "OWNER"), ("allUsers", "READER")}
    made.default_object_acl.reload()
    assert [e["entity"] for e in made.default_object_acl] == ["project-owners-0"]
    # An object written without an ACL of its own has the default.
    made.blob("x.txt").upload_from_string(b"x")
    assert [e["entity"] for e in requests.get(f"{server.url}/storage/v1/b/predefined-acls/o/x.txt/acl", timeout=30).json()["items"]] == ["project-owners-0"]
    patched = requests.patch(f"{server.url}/storage/v1/b/predefined-acls", params={"predefinedAcl": "private", "projection": "full"}, json={}, timeout=30)
    assert patched.status_code == 200 and [e["entity"] for e in patched.json()["acl"]] == ["project-owners-0"], patched.text
    refused = requests.post(f"{server.url}/storage/v1/b", params={"project": "demo-app", "predefinedAcl": "everyone"},
                            json={"name": "never-made"}, timeout=30)
    assert refused.status_code == 400 and "predefinedAcl" in refused.text
    assert not (server.home / "never-made.bucket").exists()
