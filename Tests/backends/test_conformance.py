"""The backend conformance suite: the spec's rules, one test per rule, run through the built storesh against every
kind of bucket (a local file, gs:// on storesh serve, gs:// on gcp-storage-emulator, s3:// on moto_server). What a
server cannot do is marked (xfail with the reason), never passed silently.
"""
import json
import re

import pytest

SEED = ["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"]


def listing(backend, *arguments):
    return json.loads(backend.ok("--json", "-c", "ls " + " ".join(arguments)))


def pages(backend, path, size):
    """Every page of a listing with -n SIZE, following tokens (bounded)."""
    result = []
    token = None
    for _ in range(100):
        page = listing(backend, "-n", str(size), *(["--token", token] if token else []), path)
        result.append((page["prefixes"], page["items"]))
        token = page["nextPageToken"]
        if token is None:
            return result
    raise AssertionError("more than 100 pages")


def metadata(backend, name):
    return json.loads(backend.ok("--json", "-c", f"meta get '{name}'"))


def test_L1_L2_prefixes_and_items(backend):
    backend.seed(["a/1", "a/2/x", "a/2/y", "a/3", "b"])
    assert listing(backend, "a") == {"prefixes": ["a/2"], "items": ["a/1", "a/3"], "nextPageToken": None}
    assert listing(backend) == {"prefixes": ["a"], "items": ["b"], "nextPageToken": None}


def test_L3_validity_filter_seed_example(backend):
    backend.seed(SEED)
    assert listing(backend)["prefixes"] == ["correctPrefix", "lonelyItem", "wrongPrefix"]
    assert listing(backend, "correctPrefix")["items"] == ["correctPrefix/happyItem"]
    assert listing(backend, "wrongPrefix") == {"prefixes": [], "items": [], "nextPageToken": None}
    assert listing(backend, "lonelyItem") == {"prefixes": [], "items": [], "nextPageToken": None}


def test_L4_byte_order(backend):
    names = ["d/Z", "d/a", "d/é", "d/_", "d/0", "d/B/x"]
    backend.seed(names)
    page = listing(backend, "d")
    assert page["items"] == sorted([n for n in names if n.count("/") == 1], key=lambda n: n.encode())
    assert page["prefixes"] == ["d/B"]


def test_L5_empty_reference_and_object_reference(backend):
    backend.seed(["photo.jpg"])
    assert listing(backend, "nothing/here") == {"prefixes": [], "items": [], "nextPageToken": None}
    assert listing(backend, "photo.jpg") == {"prefixes": [], "items": [], "nextPageToken": None}


def test_L6_max_results_range(backend):
    backend.seed(["x"])
    for bad in ("0", "1001"):
        status, _, err = backend.run("-c", f"ls -n {bad}")
        assert status in (1, 2)
        assert "Argument 'maxResults' must be between 1 and 1000 inclusive." in err


def test_L7_combined_page_slots(backend):
    backend.seed(["a/1", "b/1", "c", "d", "e/1"])
    assert pages(backend, "/", 2) == [(["a", "b"], []), ([], ["c", "d"]), (["e"], [])]


def test_L8_hidden_entries_take_no_slot(backend):
    backend.seed(["f/", "f/a", "f//hidden1", "f//hidden2", "f/b", "f/d", "f/e"])
    assert pages(backend, "f", 2) == [([], ["f/a", "f/b"]), ([], ["f/d", "f/e"])]


def test_L9_last_page_has_no_token(backend):
    backend.seed(["p/1", "p/2", "p/3", "p/4"])
    assert pages(backend, "p", 2) == [([], ["p/1", "p/2"]), ([], ["p/3", "p/4"])]
    assert listing(backend, "-n", "4", "p")["nextPageToken"] is None


def test_L10_token_survives_deletes_and_refuses_forgeries(backend):
    backend.seed([f"t/{i}" for i in range(6)])
    first = listing(backend, "-n", "2", "t")
    backend.ok("-c", "rm t/1 t/2")
    second = listing(backend, "-n", "2", "--token", first["nextPageToken"], "t")
    assert second["items"] == ["t/3", "t/4"]
    status, _, err = backend.run("-c", "ls --token nonsense t")
    assert status == 1 and "invalid-argument" in err
    status, _, err = backend.run("-c", f"ls --token {first['nextPageToken']} other")
    assert status == 1 and "invalid-argument" in err


def test_L11_list_all(backend):
    backend.seed([f"many/{i:04}" for i in range(25)] + ["many/sub/x"])
    page = listing(backend, "--all", "-n", "7", "many")
    assert page["items"] == [f"many/{i:04}" for i in range(25)]
    assert page["prefixes"] == ["many/sub"]


def test_M3_writing_content_gives_a_new_generation(backend):
    backend.ok("-c", "put --data one w/o.txt")
    first = metadata(backend, "w/o.txt")
    backend.ok("-c", "put --data two w/o.txt")
    second = metadata(backend, "w/o.txt")
    if backend.s3:
        # Rule S2: no generations on S3; the ETag (the content's MD5 here) tells the new content.
        assert "generation" not in second and "metageneration" not in second
        assert second["etag"] != first["etag"] and second["md5Hash"] == "uKn3Fdu2T9XFbneDxoIKYQ=="
    else:
        assert int(second["generation"]) > int(first["generation"])
    assert second["size"] == 3
    if "metageneration" not in backend.cannot:
        assert second["metageneration"] == "1"
    assert second["contentType"] == "text/plain"
    assert backend.ok("-c", "cat w/o.txt") == "two"


def test_M4_M5_partial_update_and_custom_merge(backend):
    backend.require("metadata-deletes")
    backend.ok("-c", "put --data x m.jpg; meta set cacheControl=max-age=60 custom.a=1 custom.b=2 -- m.jpg")
    backend.ok("-c", "meta set custom.b=3 -- m.jpg; meta unset custom.a cacheControl -- m.jpg")
    after = metadata(backend, "m.jpg")
    assert after["customMetadata"] == {"b": "3"}
    assert "cacheControl" not in after and after["contentType"] == "image/jpeg"


def test_M4_M5_meta_copy_makes_each_destination_like_the_source(backend):
    """meta copy: SRC's writable properties and custom metadata onto each DEST, what SRC lacks removed; DEST's
    content and its own download tokens (rule G7) stay, and SRC does not change."""
    backend.require("metadata-deletes")
    backend.ok("-c", "put --data src c/src.jpg; meta set cacheControl=max-age=60 contentLanguage=en custom.a=1 -- c/src.jpg")
    token = "custom.firebaseStorageDownloadTokens=tok-1" if "mixed-case-custom-keys" not in backend.cannot else ""
    backend.ok("-c", f"put --data one c/one.jpg; meta set contentDisposition=inline custom.b=2 {token} -- c/one.jpg")
    backend.ok("-c", "put --data two c/two.txt")
    source = metadata(backend, "c/src.jpg")
    backend.ok("-c", "meta copy c/src.jpg -- c/one.jpg c/two.txt")
    writable = ("contentType", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage", "customMetadata")
    for name, content in (("c/one.jpg", "one"), ("c/two.txt", "two")):
        copied = metadata(backend, name)
        assert {key: copied.get(key) for key in writable} == {key: source.get(key) for key in writable}, name
        assert backend.ok("-c", f"cat {name}") == content
    assert metadata(backend, "c/src.jpg") == source
    if token:
        raw = json.loads(backend.ok("--json", "-c", "meta get --raw c/one.jpg"))
        assert raw["customMetadata"] == {"a": "1", "firebaseStorageDownloadTokens": "tok-1"}


def test_M6_a_change_bumps_metageneration_and_no_change_does_not(backend):
    backend.require("metageneration")
    backend.ok("-c", "put --data x g.txt")
    backend.ok("-c", "meta set contentLanguage=en -- g.txt")
    changed = metadata(backend, "g.txt")
    assert changed["metageneration"] == "2" and changed["updated"] >= changed["timeCreated"]
    backend.ok("-c", "meta set contentLanguage=en -- g.txt")
    assert metadata(backend, "g.txt")["metageneration"] == "2"


def test_M7_read_only_property_is_refused(backend):
    backend.ok("-c", "put --data x r.txt")
    status, _, err = backend.run("-c", "meta set size=5 -- r.txt")
    assert status in (1, 2) and "invalid-argument" in err
    assert metadata(backend, "r.txt")["size"] == 1


def test_M8_missing_object(backend):
    backend.seed(["present"])
    status, _, err = backend.run("-c", "meta get absent.txt")
    assert status == 1 and "Object absent.txt does not exist." in err and "object-not-found" in err


def test_P6_names_the_sdk_cannot_make_are_kept_as_written(backend):
    backend.seed(SEED)
    assert backend.ok("-c", "cat --raw wrongPrefix//sadItem") == "wrongPrefix//sadItem"
    assert backend.ok("-c", "cat --raw lonelyItem/") == "lonelyItem/"


def test_content_round_trip_of_every_byte(backend, tmp_path):
    content = bytes(range(256)) * 64
    (tmp_path / "blob.bin").write_bytes(content)
    backend.ok("-c", f"put {tmp_path / 'blob.bin'} data/blob.bin; get data/blob.bin {tmp_path / 'back.bin'}")
    assert (tmp_path / "back.bin").read_bytes() == content


def test_X1_dry_run_changes_nothing(backend):
    backend.seed(["dry/a.txt", "dry/b.txt"])
    before = [metadata(backend, n) for n in ("dry/a.txt", "dry/b.txt")]
    out = backend.ok("--json", "run", "--dry-run", "-", stdin=b"meta set cacheControl=none -- dry/*\nrm dry/a.txt\n")
    assert "dry/a.txt" in out
    assert [metadata(backend, n) for n in ("dry/a.txt", "dry/b.txt")] == before


def test_G7_download_tokens_are_hidden_from_meta_get_and_listings_and_kept_by_unset_custom(backend):
    backend.require("metadata-deletes")
    backend.require("mixed-case-custom-keys")
    backend.ok("-c", "put --data x t.png; meta set custom.firebaseStorageDownloadTokens=tok-1 custom.a=1 -- t.png")
    shown = metadata(backend, "t.png")
    assert shown["customMetadata"] == {"a": "1"}
    listed = backend.ok("--json", "-c", "ls -l")
    assert [item["customMetadata"] for item in json.loads(listed)["items"] if item["fullPath"] == "t.png"] == [{"a": "1"}]
    assert "tok-1" not in listed
    raw = json.loads(backend.ok("--json", "-c", "meta get --raw t.png"))
    assert raw["customMetadata"] == {"a": "1", "firebaseStorageDownloadTokens": "tok-1"}
    backend.ok("-c", "meta unset custom -- t.png")
    raw = json.loads(backend.ok("--json", "-c", "meta get --raw t.png"))
    assert raw["customMetadata"] == {"firebaseStorageDownloadTokens": "tok-1"}
    backend.ok("-c", "meta unset custom.firebaseStorageDownloadTokens -- t.png")
    assert "customMetadata" not in json.loads(backend.ok("--json", "-c", "meta get --raw t.png"))


# Canonically equivalent (or compatibility) spellings that are different byte strings, so different objects:
# precomposed and decomposed é, a Hangul syllable and its jamo, combining marks in two orders, the Angstrom sign and
# Å, and the ligature ﬁ beside "fi" (compatibility only: Swift's String already tells those apart).
TWINS = [("caf\u00e9", "cafe\u0301"), ("\ud55c", "\u1112\u1161\u11ab"), ("a\u0301\u0323", "a\u0323\u0301"),
         ("\u212b", "\u00c5"), ("\ufb01", "fi")]


def test_P7_names_are_bytes(backend):
    names = [f"n/{spelling}.txt" for twin in TWINS for spelling in twin]
    backend.seed(names)
    # Listed apart, each once, in byte order (L4), each item with its own metadata (its own generation and content).
    page = json.loads(backend.ok("--json", "-c", "ls -l n"))
    listed = [item["fullPath"] for item in page["items"]]
    assert listed == sorted(names, key=lambda name: name.encode()), listed
    assert len({(item["fullPath"], item["md5Hash"]) for item in page["items"]}) == len(names)
    for name in names:
        assert backend.ok("-c", f"cat '{name}'") == name
    # A pattern changes every twin, each from its own state: no false precondition failure.
    out = backend.ok("-c", "meta set custom.t=1 -- n/*")
    assert f"updated {len(names)} objects" in out, out
    assert all(metadata(backend, name)["customMetadata"]["t"] == "1" for name in names)
    # And deletes every twin.
    deleted = json.loads(backend.ok("--json", "-c", "rm n/*"))["deleted"]
    assert sorted(deleted) == sorted(names)
    assert listing(backend, "n")["items"] == []


def test_P7_names_cloud_storage_refuses_are_refused(backend):
    for name in [".well-known/acme-challenge/token"]:
        status, _, err = backend.run("-c", f"put --raw --data x '{name}'")
        if backend.s3:
            continue  # S3 takes these names; the rule is Cloud Storage's.
        assert status == 1 and "rule P7" in err, err


def test_M9_custom_time_holds_and_contexts_are_set_planned_undone_and_holds_refuse_deletes(backend):
    """Cloud Storage's own fields by name in meta set and meta unset: a custom time that only moves forward, the two
    holds (each held object named by a dry run of rm before anything is sent), contexts; undone from the journal on a
    real bucket. S3 has none of them: refused before any request, nothing changed."""
    backend.seed(["h/a.txt", "h/b.txt"])
    script = "meta set customTime=2026-02-01T00:00:00Z temporaryHold=true context.team=ops -- h/a.txt"
    if backend.s3:
        status, _, err = backend.run("-c", script)
        assert status == 1 and "customTime is Cloud Storage's (rule M9); an S3 object has no such field" in err, err
        assert "customTime" not in metadata(backend, "h/a.txt")
        return
    if "cloud-storage-fields" in backend.cannot:
        # A server that answers the change without keeping the fields: storesh says so, and the run is not a success.
        status, _, err = backend.run("-c", script)
        assert status == 1 and "h/a.txt landed otherwise than planned: context.team is not set (planned \"ops\")" in err, err
        assert "temporaryHold is not set (planned \"true\")" in err and "1 of them landed otherwise than planned" in err
        return
    journal = str(backend.home / "holds.journal")
    backend.ok(*(["--journal", journal] if backend.remote else []), "-c", script)
    held = metadata(backend, "h/a.txt")
    assert held["customTime"].startswith("2026-02-01T00:00:00") and held["temporaryHold"] is True
    assert held["contexts"]["custom"]["team"]["value"] == "ops"
    backend.ok("-c", "meta set eventBasedHold=true -- h/b.txt")
    status, out, err = backend.run("--dry-run", "-c", "rm h/*")
    assert status == 1 and "Object h/a.txt is under a temporary hold and cannot be deleted" in err, err
    assert "Object h/b.txt is under an event-based hold" in err and "2 of the 2 objects named are kept by a hold" in err
    # Named rather than matched: the same, each named, none stopping the others.
    status, out, err = backend.run("--dry-run", "-c", "rm h/a.txt h/b.txt")
    assert status == 1 and "Object h/a.txt is under a temporary hold" in err and "Object h/b.txt is under an event-based hold" in err, err
    assert "2 of the 2 objects named are kept by a hold" in err
    status, _, err = backend.run("-c", "meta set customTime=2025-01-01T00:00:00Z -- h/a.txt")
    assert status == 1 and "customTime can only move forward" in err
    status, _, err = backend.run("-c", "meta unset customTime -- h/a.txt")
    assert status == 2 and "customTime cannot be removed" in err
    if backend.remote:
        # The journal cannot put the object back: its custom time cannot be removed. Undo says so and changes nothing.
        status, _, err = backend.run("undo", journal)
        assert status == 1 and "customTime cannot be removed" in err, err
        assert metadata(backend, "h/a.txt") == held
    backend.ok("-c", "meta unset temporaryHold context.team -- h/a.txt; meta unset eventBasedHold -- h/b.txt")
    assert json.loads(backend.ok("--json", "-c", "meta get --where temporaryHold=false h/a.txt"))["fullPath"] == "h/a.txt"
    released = metadata(backend, "h/a.txt")
    assert "temporaryHold" not in released and "contexts" not in released and released["customTime"] == held["customTime"]
    backend.ok("-c", "rm h/*")
    assert listing(backend, "h/")["items"] == []


def test_M9_a_storage_class_is_changed_by_a_rewrite_planned_journaled_and_undone(backend):
    """meta set storageClass=… writes each object again with the same content (a rewrite on Cloud Storage's JSON API,
    a new generation; a copy onto itself on S3), planned and named by a dry run, refused for an object under a hold,
    and undone from the journal on a real bucket. A class of another service is refused before any request."""
    backend.seed(["c/a.txt", "c/b.txt"])
    # Each service's own names (rule M9): the other's are refused, naming the bucket's.
    new_class, foreign = ("STANDARD_IA", "NEARLINE") if backend.s3 else ("NEARLINE", "GLACIER")
    status, _, err = backend.run("-c", f"meta set storageClass={foreign} -- c/a.txt")
    assert status == 1 and f"whose storage classes are STANDARD, " in err and f"({foreign} is " in err, err
    assert "nothing was changed" in err, err
    if "cloud-storage-fields" in backend.cannot:
        # A server that answers the rewrite without the class asked: storesh says so, and the run is not a success.
        status, _, err = backend.run("-c", "meta set storageClass=nearline -- c/a.txt")
        assert status == 1 and 'c/a.txt landed otherwise than planned: storageClass is "STANDARD" (planned "NEARLINE")' in err, err
        return
    before = metadata(backend, "c/a.txt")
    content = backend.ok("-c", "cat c/a.txt")
    out = backend.ok("--dry-run", "-c", f"meta set storageClass={new_class.lower()} -- c/*")
    assert f'storageClass  "STANDARD"  →  "{new_class}"' in out and "would update 2 objects" in out, out
    assert metadata(backend, "c/a.txt") == before
    journal = str(backend.home / "classes.journal")
    backend.ok(*(["--journal", journal] if backend.remote else []), "-c", f"meta set storageClass={new_class.lower()} -- c/*")
    after = metadata(backend, "c/a.txt")
    assert after["storageClass"] == new_class and after["md5Hash"] == before["md5Hash"], after
    if not backend.s3:
        assert after["metageneration"] == "1" and int(after["generation"]) > int(before["generation"]), after
    assert after["contentType"] == before["contentType"] and after.get("customMetadata") == before.get("customMetadata")
    assert backend.ok("-c", "cat c/a.txt") == content
    assert json.loads(backend.ok("--json", "-c", f"meta get --where storageClass={new_class} c/b.txt"))["fullPath"] == "c/b.txt"
    if not backend.s3:
        status, _, err = backend.run("--dry-run", "-c", "meta set temporaryHold=true -- c/b.txt; meta set storageClass=COLDLINE -- c/b.txt")
        assert status == 1 and "Object c/b.txt is under a temporary hold and cannot be rewritten" in err, err
    if backend.remote:
        backend.ok("undo", journal)
        undone = metadata(backend, "c/a.txt")
        assert "storageClass" not in undone and undone["md5Hash"] == before["md5Hash"], undone
        if not backend.s3:
            assert int(undone["generation"]) > int(after["generation"])
    else:
        backend.ok("-c", "meta set storageClass=STANDARD -- c/*")
        assert "storageClass" not in metadata(backend, "c/b.txt")


@pytest.mark.parametrize("backend", ["storesh-serve"], indirect=True)
def test_M9_a_retention_policy_refuses_deletes_and_a_dry_run_names_each_object_it_keeps(backend):
    """A bucket's retention policy (set here through serve's JSON API; the shell has no bucket settings command): every
    object younger than the period is named by a dry run of rm before anything is sent, and a delete is refused."""
    import requests
    backend.seed(["r/a.txt", "r/b.txt"])
    url = f"{backend.env['STORAGE_EMULATOR_HOST']}/storage/v1/b/{backend.location.removeprefix('gs://')}"
    answer = requests.patch(url, json={"retentionPolicy": {"retentionPeriod": "3600"}}, timeout=30)
    assert answer.status_code == 200 and answer.json()["retentionPolicy"]["retentionPeriod"] == "3600", answer.text
    try:
        kept = metadata(backend, "r/a.txt")
        assert kept["retentionExpirationTime"] > kept["timeCreated"]
        status, _, err = backend.run("--dry-run", "-c", "rm r/*")
        assert status == 1 and "2 of the 2 objects named are kept by a retention" in err, err
        assert f"Object r/a.txt is kept by its bucket's retention policy until {kept['retentionExpirationTime']}" in err
        assert "Object r/b.txt is kept by its bucket's retention policy until" in err
        status, _, err = backend.run("-c", "rm r/a.txt")
        assert status == 1 and "retention policy" in err and "unauthorized" in err
        assert listing(backend, "r/")["items"] == ["r/a.txt", "r/b.txt"]
    finally:
        requests.patch(url, json={"retentionPolicy": None}, timeout=30).raise_for_status()


@pytest.mark.parametrize("backend", ["storesh-serve"], indirect=True)
def test_M9_an_objects_own_retention_is_set_planned_undone_and_refuses_deletes(backend, serve_home, tmp_path):
    """meta set retention="MODE until TIME" on a bucket made with object retention (through serve's JSON API; the
    shell has no bucket settings command), both through gs:// and on its bucket file: planned and named by a dry run,
    a delete refused until then, an Unlocked retention shortened or removed by name (sent with
    overrideUnlockedRetention) and undone from the journal; refused in a bucket made without object retention and
    when malformed, nothing changed."""
    import requests
    name = "retained-" + tmp_path.name.lower().replace("_", "-")[-40:]
    answer = requests.post(f"{backend.env['STORAGE_EMULATOR_HOST']}/storage/v1/b?project=p&enableObjectRetention=true",
                           json={"name": name}, timeout=30)
    assert answer.status_code == 200 and answer.json()["objectRetention"] == {"mode": "Enabled"}, answer.text
    remote = type(backend)("storesh-serve", f"gs://{name}", tmp_path, backend.env)
    remote.seed(["k/a.txt", "k/b.txt"])
    out = remote.ok("--dry-run", "-c", 'meta set retention="unlocked until 2030-01-01T00:00:00Z" -- k/*')
    assert 'retention  (not set)  →  "Unlocked until 2030-01-01T00:00:00.000Z"' in out and "would update 2 objects" in out, out
    assert "retention" not in metadata(remote, "k/a.txt")
    journal = str(tmp_path / "retention.journal")
    remote.ok("--journal", journal, "-c", 'meta set retention="Unlocked until 2030-01-01T00:00:00Z" -- k/*')
    kept = metadata(remote, "k/a.txt")
    assert kept["retention"] == {"mode": "Unlocked", "retainUntilTime": "2030-01-01T00:00:00.000Z"}, kept
    status, _, err = remote.run("--dry-run", "-c", "rm k/*")
    assert status == 1 and "Object k/a.txt is retained until 2030-01-01T00:00:00.000Z (Unlocked) and cannot be deleted" in err, err
    assert "2 of the 2 objects named are kept by a retention" in err
    # Shortened by name: the request says it overrides the Unlocked retention.
    status, _, err = remote.run("--trace", "-c", 'meta set retention="Unlocked until 2028-01-01T00:00:00Z" -- k/b.txt')
    assert status == 0 and "overrideUnlockedRetention=true" in err, err
    assert metadata(remote, "k/b.txt")["retention"]["retainUntilTime"] == "2028-01-01T00:00:00.000Z"
    remote.ok("-c", "meta unset retention -- k/b.txt")
    assert "retention" not in metadata(remote, "k/b.txt")
    remote.ok("-c", "rm k/b.txt")
    status, out, err = remote.run("undo", journal)
    assert status == 1 and "k/b.txt" in err and "1 failed" in err, out + err
    assert "retention" not in metadata(remote, "k/a.txt")
    # On the bucket file itself, the same (a Locked retention, which nothing may remove, is tried in test_real_tools:
    # it would outlive this session's server and refuse its reset).
    local = type(backend)("local", str(serve_home / f"{name}.bucket"), tmp_path)
    local.ok("-c", 'meta set retention="Unlocked until 2029-01-01T00:00:00Z" -- k/a.txt')
    assert metadata(remote, "k/a.txt")["retention"] == {"mode": "Unlocked", "retainUntilTime": "2029-01-01T00:00:00.000Z"}
    status, _, err = local.run("-c", "rm k/a.txt")
    assert status == 1 and "retained until 2029-01-01T00:00:00.000Z (Unlocked)" in err, err
    local.ok("-c", "meta unset retention -- k/a.txt; rm k/a.txt")
    assert listing(remote, "k/")["items"] == []
    # A bucket made without object retention takes none; a malformed value is refused before anything is read.
    backend.seed(["plain.txt"])
    status, _, err = backend.run("-c", 'meta set retention="Unlocked until 2030-01-01T00:00:00Z" -- plain.txt')
    assert status == 1 and "bject retention is not enabled on this bucket" in err, err
    status, _, err = backend.run("-c", 'meta set retention="2030-01-01T00:00:00Z" -- plain.txt')
    assert status == 2 and "retention is written MODE until TIME" in err, err
    assert "retention" not in metadata(backend, "plain.txt")


def test_M10_mv_renames_objects_in_one_step_keeping_their_metadata_planned_and_guarded(backend):
    """mv renames one object, or moves several (a pattern's matches keep their names below its fixed folder) into a
    folder: content, properties, custom metadata and Cloud Storage's fields arrive as a new generation and the source
    goes. A dry run changes nothing; an object at DEST is replaced as read; a held source, a move onto itself and a
    pattern that would find its own moves again are refused before anything moves. S3 has no move: there it is a copy
    and then a delete, and the plan says so."""
    backend.seed(["m/a.txt", "m/p/one.txt", "m/p/sub/two.txt", "m/taken.txt"])
    backend.require("moves")
    backend.ok("-c", "meta set cacheControl=no-store custom.k=v -- m/a.txt")
    before = metadata(backend, "m/a.txt")
    content = backend.ok("-c", "cat m/a.txt")
    out = backend.ok("--dry-run", "-c", "mv m/a.txt m/b.txt")
    how = "; a copy, then a delete" if backend.s3 else ""
    assert f"\nwould move m/a.txt to m/b.txt (7 B{how})\n" in out, out
    assert listing(backend, "m/")["items"] == ["m/a.txt", "m/taken.txt"]
    journal = str(backend.home / "mv.journal")
    status, out, err = backend.run(*(["--journal", journal] if backend.remote else []), "-c", "mv m/a.txt m/b.txt")
    assert status == 0 and out.startswith("moved m/a.txt to m/b.txt ("), out + err
    if backend.remote:
        # One move is one change of the bucket, though the journal records both of its sides.
        assert f"applied 1 change to {backend.location}" in err, err
    if backend.remote:
        # Undone by a move back.
        status, out, err = backend.run("undo", "--dry-run", journal)
        assert status == 0 and "would move m/b.txt to m/a.txt (7 bytes)\nwould move 1 object\n" in out, out + err
    moved = metadata(backend, "m/b.txt")
    assert moved.get("metageneration", "1") == "1" and moved["md5Hash"] == before["md5Hash"]
    assert moved["cacheControl"] == "no-store" and moved["customMetadata"]["k"] == "v"
    assert backend.ok("-c", "cat m/b.txt") == content
    status, out, err = backend.run("-c", "mv m/p/** m/q/")
    assert status == 0 and (not backend.remote or f"applied 2 changes to {backend.location}" in err), out + err
    assert [line.split(" (")[0] for line in out.splitlines()] == [
        "moved m/p/one.txt to m/q/one.txt", "moved m/p/sub/two.txt to m/q/sub/two.txt", "moved 2 objects"], out
    assert listing(backend, "m/q/sub")["items"] == ["m/q/sub/two.txt"] and listing(backend, "m/p") == {"prefixes": [], "items": [], "nextPageToken": None}
    out = backend.ok("-c", "mv m/b.txt m/taken.txt")
    assert "replacing the object there" in out, out
    assert metadata(backend, "m/taken.txt")["md5Hash"] == before["md5Hash"]
    status, _, err = backend.run("-c", "mv m/taken.txt m/taken.txt")
    assert status == 1 and "cannot be moved onto itself" in err, err
    status, _, err = backend.run("-c", "mv m/q/** m/q/deeper/")
    assert status == 1 and "which m/q/** matches too" in err, err
    if not backend.s3:  # this S3 bucket has no Object Lock (test_s3 puts holds in one that has)
        backend.ok("-c", "meta set temporaryHold=true -- m/taken.txt")
        status, _, err = backend.run("--dry-run", "-c", "mv m/taken.txt m/free.txt")
        assert status == 1 and "Object m/taken.txt is under a temporary hold and cannot be deleted" in err, err
        backend.ok("-c", "meta set temporaryHold=false -- m/taken.txt")
    assert listing(backend, "m/")["items"] == ["m/taken.txt"]


def test_B5_B6_a_generation_is_read_by_name_and_number_and_an_object_named_so_keeps_its_name(backend):
    """cat, get and meta get take NAME#GENERATION as ls -a writes it: the live generation, a noncurrent one (with
    versioning on), a soft-deleted one's metadata (its content only once restored); an object whose own name ends in
    #DIGITS is still read by that name. On S3 the part after the # is a version id (test_s3 reads versions)."""
    backend.seed(["g/a.txt", "g/n#5"])
    if backend.s3:
        status, _, err = backend.run("-c", "cat g/a.txt#7")
        assert status == 1 and "has no version 7 of g/a.txt" in err and "ls -a lists the versions it keeps" in err, err
        assert backend.ok("-c", "cat g/n#5") == "g/n#5"
        return
    backend.require("generations")
    content = backend.ok("-c", "cat g/a.txt")
    live = metadata(backend, "g/a.txt")
    if "reads-by-generation" in backend.cannot:
        # A server that answers the live object whatever generation is asked: refused, never shown as that one.
        status, _, err = backend.run("-c", "cat g/a.txt#1")
        assert status == 1 and f"answered generation {live['generation']} of g/a.txt when asked for generation 1" in err, err
        return
    assert backend.ok("-c", f"cat g/a.txt#{live['generation']}") == content
    assert json.loads(backend.ok("--json", "-c", f"meta get g/a.txt#{live['generation']}")) == live
    assert backend.ok("-c", "cat g/n#5") == backend.ok("-c", "cat 'g/n#5'")
    status, _, err = backend.run("-c", "cat g/a.txt#1")
    assert status == 1 and "has no generation 1 of g/a.txt: ls -a lists the live and noncurrent generations" in err, err
    explained = backend.ok("-c", f"explain cat g/a.txt#{live['generation']}")
    assert f"/o/g%2Fa.txt?alt=media&generation={live['generation']}" in explained, explained
    if not backend.remote or "soft-delete" in backend.cannot:
        return
    import requests
    url = f"{backend.env['STORAGE_EMULATOR_HOST']}/storage/v1/b/{backend.location.removeprefix('gs://')}"
    requests.patch(url, json={"versioning": {"enabled": True}, "softDeletePolicy": {"retentionDurationSeconds": "604800"}},
                   timeout=30).raise_for_status()
    try:
        backend.ok("-c", "put --data second g/a.txt")
        assert backend.ok("-c", f"cat g/a.txt#{live['generation']}") == content
        saved = backend.home / "old.txt"
        assert backend.ok("-c", f"get g/a.txt#{live['generation']} {saved}").startswith("saved g/a.txt")
        assert saved.read_text() == content
        noncurrent = json.loads(backend.ok("--json", "-c", f"meta get g/a.txt#{live['generation']}"))
        assert noncurrent["timeDeleted"] and noncurrent["md5Hash"] == live["md5Hash"], noncurrent
        # Off again, a delete is soft: its metadata is read, its content only once it is restored.
        requests.patch(url, json={"versioning": {"enabled": False}}, timeout=30).raise_for_status()
        newest = metadata(backend, "g/a.txt")
        backend.ok("-c", "rm g/a.txt")
        soft = json.loads(backend.ok("--json", "-c", f"meta get g/a.txt#{newest['generation']}"))
        assert soft["softDeleteTime"] and soft["hardDeleteTime"] > soft["softDeleteTime"], soft
        status, _, err = backend.run("-c", f"cat g/a.txt#{newest['generation']}")
        assert status == 1 and f"g/a.txt#{newest['generation']} is soft-deleted: its content is read once it is restored" in err, err
    finally:
        requests.patch(url, json={"versioning": {"enabled": False}, "softDeletePolicy": {"retentionDurationSeconds": "0"}},
                       timeout=30).raise_for_status()


def test_B5_B6_generations_are_listed_and_a_soft_deleted_one_is_restored_or_undone(backend):
    """ls -a lists each object's generations as NAME#GENERATION, ls --soft-deleted the deleted ones a soft delete
    policy keeps; restore NAME#GENERATION brings one back, and undo of a journaled rm on a real bucket restores what it
    deleted. A bucket without generations says so."""
    backend.seed(["v/a.txt"])
    if backend.s3:
        # An unversioned S3 bucket keeps one version of each key, whose id is "null" (test_s3 has a versioned one).
        # (AWS reads it with versionId=null; moto answers that 400, so it is not read here.)
        assert backend.ok("-c", "ls -a v/") == backend.ok("-c", "ls -a v/a.txt") == "a.txt#null  live\n"
        out = backend.ok("--dry-run", "-c", "rm v/a.txt")
        assert "this delete cannot be undone" in out, out
        return
    backend.require("soft-delete")
    live = metadata(backend, "v/a.txt")
    listed = backend.ok("-c", "ls -a v/")
    assert listed == f"a.txt#{live['generation']}  live\n", listed
    # Named by itself, an object lists its own generations (not those of a folder of its name).
    assert backend.ok("-c", "ls -a v/a.txt") == listed
    status, _, err = backend.run("-c", f"restore v/a.txt#{live['generation']}")
    assert status == 1 and f"v/a.txt#{live['generation']} is the live generation: there is nothing to restore" in err, err
    status, _, err = backend.run("-c", "restore v/a.txt#1")
    assert status == 1 and "keeps no soft-deleted generation 1 of v/a.txt" in err, err
    # A word that is no number names no generation where generations are numbers (an S3 version id would).
    status, _, err = backend.run("-c", "restore v/a.txt#draft")
    assert status == 1 and "'v/a.txt#draft' names no generation" in err and "numbers its generations" in err, err
    empty = backend.ok("-c", "ls --soft-deleted v/")
    assert empty.startswith("(no soft-deleted generation under gs://") and empty.endswith("/v)\n"), empty
    if not backend.remote:
        return
    # On serve, with a soft delete policy of 7 days (set through its JSON API; the shell sets no bucket settings).
    import requests
    url = f"{backend.env['STORAGE_EMULATOR_HOST']}/storage/v1/b/{backend.location.removeprefix('gs://')}"
    # Without a policy (nor versioning), a plan of deletes says they cannot be undone.
    planned = backend.ok("--dry-run", "-c", "rm v/a.txt")
    assert planned.endswith(
        f"would delete v/a.txt\nthis delete cannot be undone: {backend.location} keeps deleted objects neither soft-deleted (it has no soft delete policy) nor as noncurrent generations (versioning is off)\ndry run: nothing was saved\n"), planned
    requests.patch(url, json={"softDeletePolicy": {"retentionDurationSeconds": "604800"}}, timeout=30).raise_for_status()
    try:
        backend.ok("-c", "meta set custom.k=1 -- v/a.txt; put --data b v/b.txt")
        kept = metadata(backend, "v/a.txt")
        journal = str(backend.home / "rm.journal")
        planned = backend.ok("--dry-run", "-c", "rm v/*")
        assert f"would delete 2 objects\n{backend.location} keeps deleted objects soft-deleted for 7 days: storesh undo JOURNAL" in planned, planned
        backend.ok("--journal", journal, "-c", "rm v/*")
        deleted = json.loads(backend.ok("--json", "-c", "ls --soft-deleted v/"))["items"]
        assert sorted(item["fullPath"] for item in deleted) == ["v/a.txt", "v/b.txt"]
        assert all(item["hardDeleteTime"] > item["softDeleteTime"] for item in deleted)
        status, out, err = backend.run("undo", "--dry-run", journal)
        # Each generation checked now: kept, so said without doubt.
        assert status == 0 and f"would restore v/a.txt#{kept['generation']} (7 bytes) as the live object\n" in out, out + err
        backend.ok("undo", journal)
        # Restored already: a second undo's dry run says so for each, and fails as the undo would.
        status, out, err = backend.run("undo", "--dry-run", journal)
        assert status == 1 and f"cannot undo: {backend.location} keeps no soft-deleted generation {kept['generation']} of v/a.txt" in err, out + err
        assert "would restore" not in out, out
        status, _, err = backend.run("undo", journal)
        # The undo sends its changes in parallel and stops at the first refusal, whichever object's comes first.
        assert status == 1 and (f"keeps no soft-deleted generation {kept['generation']} of v/a.txt" in err
                                or re.search(r"keeps no soft-deleted generation \d+ of v/b\.txt", err)), err
        restored = metadata(backend, "v/a.txt")
        assert restored["customMetadata"] == {"k": "1"} and int(restored["generation"]) > int(kept["generation"])
        assert backend.ok("-c", "cat v/b.txt") == "b"
        # restore by hand: the live object as read is the precondition.
        backend.ok("-c", "rm v/b.txt")
        generation = json.loads(backend.ok("--json", "-c", "ls --soft-deleted v/"))["items"][-1]["generation"]
        assert backend.ok("-c", f"restore v/b.txt#{generation}") == f"restored v/b.txt#{generation} as the live object (1 B)\n"
        assert backend.ok("-c", "cat v/b.txt") == "b"
        # With versioning on, a delete leaves a noncurrent generation, which no restore takes: the plan and the undo's
        # dry run say so, and how to bring the content back.
        requests.patch(url, json={"versioning": {"enabled": True}}, timeout=30).raise_for_status()
        assert "keeps deleted objects as noncurrent generations (versioning is on): ls -a lists it" in backend.ok("--dry-run", "-c", "rm v/b.txt")
        live = metadata(backend, "v/b.txt")["generation"]
        versioned = str(backend.home / "versioned.journal")
        backend.ok("--journal", versioned, "-c", "rm v/b.txt")
        status, out, err = backend.run("undo", "--dry-run", versioned)
        assert status == 1 and f"keeps generation {live} of v/b.txt as a noncurrent generation (versioning), not soft-deleted" in err, out + err
        assert f"get v/b.txt#{live} FILE, then put FILE v/b.txt, brings its content back" in err, err
    finally:
        requests.patch(url, json={"versioning": {"enabled": False}, "softDeletePolicy": {"retentionDurationSeconds": "0"}},
                       timeout=30).raise_for_status()


def test_B4_bucket_show_set_and_unset_change_a_bucket_files_settings_as_the_service_checks_them(backend):
    """bucket show lists the settings that decide how objects are kept; bucket set and unset change them on a bucket
    file, each checked as Cloud Storage checks it (soft delete 7 to 90 days, a locked policy only lengthened), said
    old → new, planned by a dry run and held by the objects' commands at once (versioning keeps noncurrent
    generations, a retention policy refuses deletes). A real bucket's settings are its service's: refused before
    anything runs."""
    if backend.remote:
        status, _, err = backend.run("-c", "bucket set versioning=on")
        assert status != 0 and "`bucket set` needs a bucket with settings kept in its file" in err and "nothing ran" in err, err
        return
    shown = backend.ok("-c", "bucket show")
    assert "versioning                off" in shown and "softDelete                off" in shown, shown
    changed = backend.ok("-c", "bucket set versioning=on softDelete=7d label.team=blue")
    assert changed.splitlines() == [
        "gs://conformance settings", '  versioning  "off"      →  "on"', '  softDelete  "off"      →  "7 days"',
        '  label.team  (not set)  →  "blue"', "updated the settings of gs://conformance (3 settings)"], changed
    settings = json.loads(backend.ok("--json", "-c", "bucket show"))["settings"]
    assert (settings["versioning"], settings["softDelete"], settings["label.team"]) == ("on", "7 days", "blue"), settings
    # Held at once: an overwrite keeps the old generation.
    backend.ok("-c", "put --data one v.txt; put --data two v.txt")
    assert len(backend.ok("-c", "ls -a").splitlines()) == 2
    # A dry run changes nothing; the same values again change nothing.
    planned = backend.ok("--dry-run", "-c", "bucket set versioning=off")
    assert "would update the settings of gs://conformance (1 setting)" in planned, planned
    assert json.loads(backend.ok("--json", "-c", "bucket show"))["settings"]["versioning"] == "on"
    assert backend.ok("-c", "bucket set versioning=on").strip() == "the settings of gs://conformance already are so: nothing changed"
    # Checked as the service checks them, naming the word: nothing changes.
    status, _, err = backend.run("-c", "bucket set softDelete=1h")
    assert status == 1 and "7 to 90 days" in err and "-c:1:12" in err, err
    status, _, err = backend.run("-c", "bucket set versionng=on")
    assert status == 2 and "did you mean versioning?" in err, err
    # A script lands whole: a setting changed before a failure is undone, and said so.
    status, _, err = backend.run("-c", "bucket set label.x=1; bucket set softDelete=1h")
    assert status == 1 and "the 1 change reported above was undone" in err, err
    assert "label.x" not in backend.ok("-c", "bucket show")
    assert "already are so" in backend.ok("-c", "bucket set objectRetention=off")
    # A retention policy refuses deletes until it is removed; object retention, once on, stays.
    backend.ok("-c", "bucket set retentionPeriod=1d objectRetention=on")
    status, _, err = backend.run("-c", "rm v.txt")
    assert status == 1 and "retention" in err, err
    backend.ok("-c", "bucket unset retentionPeriod label.team")
    backend.ok("-c", "rm v.txt")
    status, _, err = backend.run("-c", "bucket set objectRetention=off")
    assert status == 1 and "cannot be turned off" in err, err
    assert "  retentionPeriod" not in backend.ok("-c", "bucket show")


def test_X1_a_plan_that_changes_more_than_objects_is_not_kept_without_those_changes(backend):
    """A kept plan (--dry-run --plan FILE) holds object changes only: a script that also changes the rules, takes a
    snapshot or changes the bucket's settings has its plan refused, never kept without them ('the plan has no
    change' was said of such a plan before)."""
    if backend.remote:
        pytest.skip("rules, snapshots and bucket settings are a bucket file's (rule B3)")
    plan = backend.home / "beyond.plan"
    status, out, err = backend.run("--dry-run", "--plan", str(plan), "-c", "put --data x a.txt; rules reset; bucket set versioning=on")
    assert status == 1 and "the plan was not kept: it changes the rules and the bucket's settings, which a kept plan does not carry" in err, err
    assert not plan.exists() and "would write a.txt" in out
    assert json.loads(backend.ok("--json", "-c", "bucket show"))["settings"]["versioning"] == "off"
