"""`storesh copy` between kinds of bucket: a local file into gs:// (on storesh serve and on gcp-storage-emulator) and
back, content and every writable property kept, hidden names included; a second copy sends nothing; a dry run
makes no file and sends nothing.
"""
import json

import pytest
import requests

import harness
from backend_support import BUCKET

KEPT = ("name", "text", "base64", "contentType", "cacheControl", "contentDisposition", "contentEncoding",
        "contentLanguage", "customMetadata", "md5Hash", "size")


def archive_of(home, bucket_file):
    """What must survive a copy: names, contents and writable properties (not generations and times)."""
    status, out, err = harness.storesh(home, "export", "--bucket", bucket_file)
    assert status == 0, err
    return [{k: v for k, v in entry.items() if k in KEPT} for entry in json.loads(out)["objects"]]


def source_bucket(home):
    objects = [
        {"name": "photos/cat.jpg", "base64": "AAECA/8=", "contentType": "image/jpeg", "cacheControl": "public, max-age=60",
         "contentDisposition": "inline", "contentLanguage": "en", "customMetadata": {"camera": "X100", "firebaseStorageDownloadTokens": "tok"}},
        {"name": "docs/readme.txt", "text": "héllo\n", "contentEncoding": "identity"},
        {"name": "wrongPrefix//sadItem", "text": "hidden"},
        {"name": "lonelyItem/", "text": "trailing slash"},
        {"name": "photos/2024/dog.png", "text": "woof", "contentType": "image/png"},
    ]
    return harness.make_bucket(home, "source", objects)


@pytest.mark.parametrize("server", ["serve_process", "emulator_process"])
def test_copy_a_bucket_file_to_gs_and_back_keeps_content_and_every_writable_property(request, server, tmp_path):
    url = request.getfixturevalue(server)
    if server == "serve_process":
        requests.post(url + "/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30).raise_for_status()
    else:
        requests.get(url + "/wipe?keep-buckets=1", timeout=30).raise_for_status()
    env = {"STORAGE_EMULATOR_HOST": url, "XDG_STATE_HOME": str(tmp_path / "state")}
    source = source_bucket(tmp_path)
    status, _, err = harness.storesh(tmp_path, "copy", "--quiet", source, f"gs://{BUCKET}", **env)
    assert status == 0, err.decode()
    assert "copied 5 objects" in err.decode()
    back = str(tmp_path / "back.bucket")
    status, _, err = harness.storesh(tmp_path, "copy", "--quiet", f"gs://{BUCKET}", back, **env)
    assert status == 0, err.decode()
    assert archive_of(tmp_path, back) == archive_of(tmp_path, source)
    # The local copy is named after the bucket it came from.
    status, out, _ = harness.storesh(tmp_path, "--bucket", back, "--json", "-c", "pwd")
    assert json.loads(out)["path"] == f"gs://{BUCKET}/"
    # Again: everything is there as it is, and nothing is sent.
    status, _, err = harness.storesh(tmp_path, "copy", "--quiet", source, f"gs://{BUCKET}", **env)
    assert status == 0 and "nothing to copy" in err.decode()


def test_a_dry_run_copy_makes_no_file_and_sends_nothing(serve_process, tmp_path):
    requests.post(serve_process + "/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30).raise_for_status()
    from faultproxy import FaultProxy
    proxy = FaultProxy(serve_process)
    try:
        env = {"STORAGE_EMULATOR_HOST": proxy.url, "XDG_STATE_HOME": str(tmp_path / "state")}
        source = source_bucket(tmp_path)
        status, out, err = harness.storesh(tmp_path, "copy", "--dry-run", "--quiet", source, f"gs://{BUCKET}", **env)
        assert status == 0, err.decode()
        assert "would copy photos/cat.jpg" in out.decode() and "would copy 5 objects" in err.decode()
        assert proxy.changing_requests() == []
        status, out, err = harness.storesh(tmp_path, "copy", "--dry-run", "--quiet", f"gs://{BUCKET}",
                                           str(tmp_path / "never.bucket"), **env)
        assert status == 0 and not (tmp_path / "never.bucket").exists()
    finally:
        proxy.close()


def test_copy_refuses_what_is_not_a_copy(tmp_path):
    source = source_bucket(tmp_path)
    status, _, err = harness.storesh(tmp_path, "copy", source, source)
    assert status == 2 and "the same bucket" in err.decode()
    status, _, err = harness.storesh(tmp_path, "copy", str(tmp_path / "missing.bucket"), str(tmp_path / "x.bucket"))
    assert status == 2 and "no bucket file" in err.decode()
    assert not (tmp_path / "x.bucket").exists()
