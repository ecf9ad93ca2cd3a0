"""Rule P7 through storesh serve's APIs and the archives (issue 36): names are byte strings. Canonically
equivalent twins stay two objects through both APIs' lists, downloads, snapshots and both export formats; a name
holding NUL (which Cloud Storage allows, and advises against) never stops a listing; names Cloud Storage refuses
are refused on the way in."""
import json
import sys
import os

import requests

from serving import BUCKET, Server, harness

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "backends"))
from test_conformance import TWINS  # noqa: E402

NAMES = [f"n/{spelling}.txt" for twin in TWINS for spelling in twin]


def ok(home, *arguments):
    status, out, err = harness.storesh(home, *arguments)
    assert status == 0, err.decode()
    return out.decode(), err.decode()


def by_bytes(names):
    return sorted(names, key=lambda name: name.encode())


def test_twins_and_a_nul_name_through_both_apis(tmp_path):
    server = Server(tmp_path, tmp_path / "served.bucket")
    try:
        for name in NAMES + ["z/a\x00b"]:
            answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": name},
                                    data=name.encode())
            assert answer.status_code == 200, answer.text
        listed = server.request("GET", f"/storage/v1/b/{BUCKET}/o").json()
        assert [item["name"] for item in listed["items"]] == by_bytes(NAMES) + ["z/a\x00b"]
        assert len({item["generation"] for item in listed["items"]}) == len(NAMES) + 1
        v0 = server.request("GET", f"/v0/b/{BUCKET}/o", params={"prefix": "n/", "delimiter": "/"},
                            headers={"Authorization": "Bearer owner"}).json()
        assert [item["name"] for item in v0["items"]] == by_bytes(NAMES)
        for name in NAMES + ["z/a\x00b"]:
            answer = server.request("GET", server.object_path(name), params={"alt": "media"})
            assert answer.content == name.encode()
        for name in [".", "..", ".well-known/acme-challenge/x"]:
            answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": name},
                                    data=b"x")
            assert answer.status_code == 400 and "rule P7" in answer.text, (name, answer.text)
    finally:
        status, err = server.stop()
    assert status == 0, err
    # The shell lists the NUL name escaped, and marks the names that are not in NFC.
    out, _ = ok(tmp_path, "--bucket", server.bucket_file, "-c", "ls z; ls n")
    assert '"a\\0b"' in out
    assert out.count("(not NFC)") == sum(1 for name in NAMES if name != __import__("unicodedata").normalize("NFC", name))
    # check says which names Cloud Storage advises against.
    out, _ = ok(tmp_path, "check", "--bucket", server.bucket_file)
    assert "sound" in out and "a\\0b" in out and "advises against" in out


def test_twins_through_snapshots_and_both_archive_formats(tmp_path):
    bucket = str(tmp_path / "twins.bucket")
    script = "\n".join(f"put --raw --data '{name}' '{name}'" for name in NAMES)
    ok(tmp_path, "--bucket", bucket, "-c", script + "\nsnapshot save all\nrm n/*")
    diff = json.loads(ok(tmp_path, "--bucket", bucket, "--json", "-c", "snapshot diff all")[0])
    assert by_bytes(diff["removed"]) == by_bytes(NAMES)
    out, _ = ok(tmp_path, "--bucket", bucket, "-c", "snapshot restore all")
    assert f"{len(NAMES)} added" in out
    for fmt, target in [("json", str(tmp_path / "twins.json")), ("firebase", str(tmp_path / "twins-export"))]:
        ok(tmp_path, "export", "--format", fmt, "--bucket", bucket, target)
        copy = str(tmp_path / f"copy-{fmt}.bucket")
        ok(tmp_path, "import", "--format", fmt, "--bucket", copy, target)
        objects = harness.export(tmp_path, copy)
        assert by_bytes(objects) == by_bytes(NAMES), fmt
        assert all(objects[name]["text"] == name for name in NAMES), fmt


def test_logs_show_names_decoded_and_mark_the_decomposed_one(tmp_path):
    """Issue 52: serve's request log (the terminal's and the page's) showed `photos%2Fver%C3%A3o.jpg`; now the name
    a person typed, and `(not NFC)` on the decomposed spelling of a name that looks the same. What would change how a
    line reads (a line feed, an escape, a space) stays escaped."""
    server = Server(tmp_path, tmp_path / "served.bucket", extra=("--log",))
    try:
        for name in ("photos/ver\u00e3o.jpg", "photos/vera\u0303o.jpg", "odd/a\nb\x1b[31m c"):
            stored = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": name},
                                    data=b"x")
            # A line feed is refused (rule P5), and its request logged all the same.
            assert stored.status_code == (400 if "\n" in name else 200), stored.text
        page = server.request("GET", "/?view=requests").text
    finally:
        status, err = server.stop()
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.startswith("POST /upload")]
    assert len(lines) == 3, err
    assert "name=photos/ver\u00e3o.jpg " in lines[0] and "(not NFC)" not in lines[0], lines[0]
    assert "name=photos/vera\u0303o.jpg (not NFC) " in lines[1], lines[1]
    assert "name=odd/a%0Ab%1B%5B31m+c " in lines[2], lines[2]
    assert "\x1b" not in err
    assert "photos/ver\u00e3o.jpg" in page and "%C3%A3" not in page
