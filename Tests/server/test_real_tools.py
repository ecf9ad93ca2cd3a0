"""The ecosystem's real command-line tools against `storesh serve`, run as their users run them: gsutil (PyPI's, in
.venv; it only speaks HTTPS, so it goes through a TLS proxy in front of the server) and rclone (Debian's, on the
Cloud Storage JSON API over plain HTTP). What they put comes back byte for byte, with the metadata they set, and
what they list is exactly what the bucket holds; after each test the bucket file is sound (storesh check).

scripts/setup --tests installs both tools (scripts/test does it); without them these tests fail, they do not skip."""
import base64
import calendar
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

import pytest
import requests

import tls_proxy
from serving import BUCKET, harness  # the `server` fixture is conftest's

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GSUTIL = os.path.join(REPOSITORY, ".venv", "bin", "gsutil")
RCLONE = shutil.which("rclone") or "/usr/bin/rclone"


def installed(path, name):
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} is not installed ({path}): run `source scripts/setup --tests` (scripts/test does)",
                    pytrace=False)


def run(command, env, cwd, timeout=120):
    """Runs a tool to its end: (status, stdout as bytes, stderr as text)."""
    done = subprocess.run(command, capture_output=True, env=env, cwd=cwd, timeout=timeout)
    return done.returncode, done.stdout, done.stderr.decode(errors="replace")


@pytest.fixture
def served(server, tmp_path):
    """conftest's server, stopped after the test, and its bucket file then checked."""
    yield server
    status, err = server.stop()
    assert status == 0, err
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", server.bucket_file)
    assert status == 0 and b": sound (" in out, (out + err).decode(errors="replace")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """The TLS proxy's self-signed certificate and key, made once for these tests."""
    return tls_proxy.self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def gsutil(served, certificate, tmp_path):
    """gsutil on the JSON API behind a TLS proxy on a free port: gsutil(*arguments, ok=True) -> (status, out, err).
    No boto configuration and no credentials (anonymous), a HOME of the test's own, and every host it could call
    (the JSON API's and the XML API's) is the proxy: nothing goes to Google."""
    proxy = tls_proxy.TlsProxy(int(served.url.rsplit(":", 1)[1]), *certificate)
    home = tmp_path / "gsutil-home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.path.dirname(GSUTIL) + ":/usr/bin:/bin", "LANG": "C.UTF-8",
           "BOTO_CONFIG": "/dev/null"}
    options = ["Credentials:gs_json_host=127.0.0.1", f"Credentials:gs_json_port={proxy.port}",
               "Credentials:gs_host=127.0.0.1", f"Credentials:gs_port={proxy.port}",
               "Boto:https_validate_certificates=False", "GSUtil:default_project_id=demo-app",
               "GSUtil:prefer_api=json", "GSUtil:software_update_check_period=0", f"GSUtil:state_dir={home}/state",
               # A failure is the server's answer, not something to retry for minutes.
               "Boto:num_retries=0"]

    def gsutil_run(*arguments, ok=True):
        installed(GSUTIL, "gsutil")
        command = [GSUTIL]
        for option in options:
            command += ["-o", option]
        status, out, err = run(command + list(arguments), env, tmp_path)
        if ok:
            assert status == 0, f"gsutil {' '.join(arguments)}: exit {status}\n{err}"
        return status, out, err

    yield gsutil_run
    proxy.stop()


@pytest.fixture
def rclone(served, tmp_path):
    """rclone's gcs backend on the server's JSON API, anonymous, no configuration file:
    rclone(*arguments, ok=True) -> (status, out, err). REMOTE is where paths in the bucket start."""
    home = tmp_path / "rclone-home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "RCLONE_CONFIG": "/dev/null"}
    flags = ["--gcs-endpoint", served.url + "/storage/v1/", "--gcs-anonymous", "--gcs-bucket-policy-only"]

    def rclone_run(*arguments, ok=True):
        installed(RCLONE, "rclone")
        status, out, err = run([RCLONE, *flags, *arguments], env, tmp_path)
        if ok:
            assert status == 0, f"rclone {' '.join(arguments)}: exit {status}\n{err}"
        return status, out, err

    return rclone_run


REMOTE = f":gcs:{BUCKET}/"


# The bucket seen through the JSON API, for what the tools did --------------------------------------------------

def put(server, name, content, content_type="text/plain", **resource):
    """An object made through the JSON API (a multipart upload, so that metadata can come with it)."""
    boundary = "storesh-test-boundary"
    metadata = json.dumps({"name": name, "contentType": content_type, **resource}).encode()
    body = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode() + metadata +
            f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n".encode() + content +
            f"\r\n--{boundary}--\r\n".encode())
    answer = server.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "multipart"},
                            data=body, headers={"Content-Type": f"multipart/related; boundary={boundary}"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def resource(server, name):
    answer = server.request("GET", server.object_path(name))
    assert answer.status_code == 200, (name, answer.status_code, answer.text)
    return answer.json()


def absent(server, name):
    answer = server.request("GET", server.object_path(name))
    return answer.status_code == 404


def content(server, name):
    answer = server.request("GET", server.object_path(name), params={"alt": "media"})
    assert answer.status_code == 200, (name, answer.status_code, answer.text)
    return answer.content


def names(server, prefix=""):
    """Every object name under prefix, in the listing's order (one page: the tests make fewer than 1000)."""
    listing = server.request("GET", f"/storage/v1/b/{BUCKET}/o", params={"prefix": prefix}).json()
    assert "nextPageToken" not in listing
    return [item["name"] for item in listing.get("items", [])]


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def files_under(folder):
    """{relative path: bytes} of every file under folder."""
    found = {}
    for directory, _, files in os.walk(folder):
        for file in files:
            path = os.path.join(directory, file)
            with open(path, "rb") as opened:
                found[os.path.relpath(path, folder)] = opened.read()
    return found


def write_tree(folder, files):
    for relative, data in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def seconds(rfc3339):
    """An RFC 3339 time of the API's, to the second, as gsutil ls -l writes it."""
    return rfc3339.split(".")[0].rstrip("Z") + "Z"


def nanoseconds(rfc3339):
    whole, _, fraction = rfc3339.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10 ** 9 + int(fraction.ljust(9, "0") or 0)


# gsutil ---------------------------------------------------------------------------------------------------------

def test_gsutil_ls_lists_the_root_a_folder_and_everything_exactly(served, gsutil):
    made = {}
    for name, data in [("top.txt", b"top"), ("a/one.txt", b"one"), ("a/two.bin", bytes(range(256)) * 4),
                       ("a/deeper/three.txt", b"three"), ("b/c/four.txt", b"four")]:
        made[name] = put(served, name, data)
    url = f"gs://{BUCKET}/"
    # At the root: the objects, then the prefixes (gsutil prints each page's items before its prefixes).
    assert gsutil("ls", url)[1].decode().splitlines() == [url + "top.txt", url + "a/", url + "b/"]
    # In a folder, long: size, creation time to the second, URL; the prefixes blank-padded; the total.
    long = gsutil("ls", "-l", url + "a/")[1].decode().splitlines()
    assert long == [
        "%10d  %s  %s" % (3, seconds(made["a/one.txt"]["timeCreated"]), url + "a/one.txt"),
        "%10d  %s  %s" % (1024, seconds(made["a/two.bin"]["timeCreated"]), url + "a/two.bin"),
        " " * 33 + url + "a/deeper/",
        "TOTAL: 2 objects, 1027 bytes (1 KiB)",
    ]
    # Everything, recursively: every object once, in name order.
    assert gsutil("ls", url + "**")[1].decode().splitlines() == [url + name for name in sorted(made)]
    # A name that matches nothing is an error, as on Cloud Storage.
    status, _, err = gsutil("ls", url + "nothing/here", ok=False)
    assert status == 1 and "matched no objects" in err, err


def test_gsutil_cp_round_trips_a_small_and_a_3_mib_file(served, gsutil, tmp_path):
    small = "naïve text\r\nwith\x00bytes\n".encode()
    big = os.urandom(3 * 1024 * 1024)  # under gsutil's 8 MiB resumable threshold: one multipart upload
    (tmp_path / "small.txt").write_bytes(small)
    (tmp_path / "big.bin").write_bytes(big)
    url = f"gs://{BUCKET}/up/"
    gsutil("cp", "small.txt", url + "small.txt")
    gsutil("cp", "big.bin", url + "big.bin")
    for name, data, content_type in [("up/small.txt", small, "text/plain"),
                                     ("up/big.bin", big, "application/octet-stream")]:
        uploaded = resource(served, name)
        assert uploaded["size"] == str(len(data)) and uploaded["md5Hash"] == md5_b64(data), uploaded
        assert uploaded["contentType"] == content_type
        assert content(served, name) == data
    # And back down, checked by gsutil (crc32c) and here, byte for byte.
    gsutil("cp", url + "small.txt", "small.down")
    gsutil("cp", url + "big.bin", "big.down")
    assert (tmp_path / "small.down").read_bytes() == small
    assert (tmp_path / "big.down").read_bytes() == big
    assert names(served) == ["up/big.bin", "up/small.txt"]


def test_gsutil_cp_of_a_file_over_its_resumable_threshold(served, gsutil, tmp_path):
    """gsutil uploads a file of 8 MiB or more with a resumable upload, which apitools starts at the path Cloud
    Storage's discovery document gives for them: POST /resumable/upload/storage/v1/b/BUCKET/o?uploadType=resumable."""
    data = os.urandom(9 * 1024 * 1024)
    (tmp_path / "large.bin").write_bytes(data)
    gsutil("cp", "large.bin", f"gs://{BUCKET}/large.bin")
    uploaded = resource(served, "large.bin")
    assert uploaded["size"] == str(len(data)) and uploaded["md5Hash"] == md5_b64(data), uploaded
    gsutil("cp", f"gs://{BUCKET}/large.bin", "large.down")
    assert (tmp_path / "large.down").read_bytes() == data


def test_gsutil_setmeta_on_a_wildcard_then_stat_and_the_json_api(served, gsutil):
    for name in ["a/x.txt", "a/y.txt", "b/z.txt"]:
        put(served, name, name.encode())
    gsutil("-m", "setmeta", "-h", "Cache-Control:no-cache", "-h", "x-goog-meta-k:v", f"gs://{BUCKET}/a/*")
    for name in ["a/x.txt", "a/y.txt"]:
        changed = resource(served, name)
        assert changed["cacheControl"] == "no-cache" and changed["metadata"] == {"k": "v"}, changed
        assert changed["metageneration"] == "2" and changed["contentType"] == "text/plain"
        assert content(served, name) == name.encode()
        # gsutil stat reads the same back.
        stat = gsutil("stat", f"gs://{BUCKET}/{name}")[1].decode()
        fields = dict(re.findall(r"^ {4}(\S[^:]*):\s*(.*)$", stat, re.M))
        assert fields["Cache-Control"] == "no-cache" and fields["Content-Type"] == "text/plain", stat
        assert fields["Content-Length"] == str(len(name)) and fields["Metageneration"] == "2", stat
        assert fields["Hash (md5)"] == md5_b64(name.encode()) and fields["Generation"] == changed["generation"]
        assert re.search(r"^ {4}Metadata:\s*\n {8}k:\s+v$", stat, re.M), stat
    untouched = resource(served, "b/z.txt")
    assert "cacheControl" not in untouched and "metadata" not in untouched and untouched["metageneration"] == "1"


def test_gsutil_rm_removes_exactly_what_it_names(served, gsutil):
    for name in ["a/x", "a/y", "d/1", "d/e/2", "dx"]:
        put(served, name, name.encode())
    gsutil("rm", f"gs://{BUCKET}/a/x")
    assert absent(served, "a/x") and content(served, "a/y") == b"a/y"
    # -r on a folder: everything under d/, not dx beside it.
    gsutil("-m", "rm", "-r", f"gs://{BUCKET}/d")
    assert names(served) == ["a/y", "dx"]
    # An object that is not there: an error, and nothing else removed.
    status, _, err = gsutil("rm", f"gs://{BUCKET}/a/x", ok=False)
    assert status == 1 and "No URLs matched" in err, err
    assert names(served) == ["a/y", "dx"]


def test_gsutil_cp_r_of_a_directory_up_and_back(served, gsutil, tmp_path):
    tree = {"one.txt": b"one\n", "sub dir/\u00e9t\u00e9.txt": "été\n".encode(), "sub dir/deep/empty": b"",
            "sub dir/deep/data.bin": os.urandom(70000)}
    write_tree(tmp_path / "tree", tree)
    gsutil("-m", "cp", "-r", "tree", f"gs://{BUCKET}/up")
    assert names(served) == sorted("up/" + relative for relative in tree)
    for relative, data in tree.items():
        assert content(served, "up/" + relative) == data
    (tmp_path / "down").mkdir()
    gsutil("-m", "cp", "-r", f"gs://{BUCKET}/up", "down")
    assert files_under(tmp_path / "down" / "up") == tree


# rclone ---------------------------------------------------------------------------------------------------------

MTIME = calendar.timegm((2021, 2, 3, 4, 5, 6)) * 10 ** 9


def make_tree(folder, files):
    """Files with distinct modification times to the nanosecond, which rclone keeps in the objects' metadata."""
    write_tree(folder, files)
    for number, relative in enumerate(sorted(files)):
        os.utime(folder / relative, ns=(MTIME, MTIME + number * 1_000_000_001 + 123))


def listed(rclone, path):
    """rclone lsjson -R --files-only --hash: {path: (size, md5, modification time in ns)}."""
    entries = json.loads(rclone("lsjson", "-R", "--files-only", "--hash", REMOTE + path)[1])
    return {entry["Path"]: (entry["Size"], entry["Hashes"]["md5"], nanoseconds(entry["ModTime"])) for entry in entries}


def local(folder):
    return {relative: (len(data), hashlib.md5(data).hexdigest(), os.stat(folder / relative).st_mtime_ns)
            for relative, data in files_under(folder).items()}


def test_rclone_copy_of_a_small_tree_and_lsjson(served, rclone, tmp_path):
    tree = {"a.txt": b"alpha\n", "d/b.txt": b"beta\n", "d/with space.txt": b"spaced", "d/e/empty": b"",
            "d/e/\u00fcber.bin": bytes(range(256))}
    make_tree(tmp_path / "src", tree)
    rclone("copy", "src", REMOTE + "rc")
    assert names(served) == sorted("rc/" + relative for relative in tree)
    for relative, data in tree.items():
        assert content(served, "rc/" + relative) == data
    # Names, sizes, MD5s as the server computed them, and the modification times rclone set, all read back.
    assert listed(rclone, "rc") == local(tmp_path / "src")
    # The folders, as the listing's prefixes make them.
    top = json.loads(rclone("lsjson", REMOTE + "rc")[1])
    assert sorted((entry["Name"], entry["IsDir"]) for entry in top) == [("a.txt", False), ("d", True)]
    assert [entry["Size"] for entry in top if entry["Name"] == "a.txt"] == [6]


def test_rclone_sync_of_a_20_mib_file_in_chunks_then_a_deletion(served, rclone, tmp_path):
    tree = {"big.bin": os.urandom(20 * 1024 * 1024), "keep.txt": b"kept", "gone/soon.txt": b"soon gone",
            "change.txt": b"before"}
    make_tree(tmp_path / "src", tree)
    # rclone 1.60 has no --gcs-chunk-size: the Go client uploads in chunks of 16 MiB, so 20 MiB is two chunks of
    # a resumable upload (the dump shows them).
    _, _, err = rclone("sync", "src", REMOTE + "s", "--dump", "headers")
    assert "uploadType=resumable" in err and "Content-Range: bytes 0-16777215/*" in err, err[-3000:]
    assert "Content-Range: bytes 16777216-20971519/20971520" in err
    assert names(served) == ["s/big.bin", "s/change.txt", "s/gone/soon.txt", "s/keep.txt"]
    assert content(served, "s/big.bin") == tree["big.bin"]
    _, _, err = rclone("check", "src", REMOTE + "s")
    assert "0 differences found" in err and "4 matching files" in err, err
    # A file removed locally disappears remotely; a changed one is replaced; the others are left.
    os.remove(tmp_path / "src" / "gone" / "soon.txt")
    os.rmdir(tmp_path / "src" / "gone")
    (tmp_path / "src" / "change.txt").write_bytes(b"after, and longer")
    rclone("sync", "src", REMOTE + "s")
    assert names(served) == ["s/big.bin", "s/change.txt", "s/keep.txt"]
    assert content(served, "s/change.txt") == b"after, and longer"
    _, _, err = rclone("check", "src", REMOTE + "s")
    assert "0 differences found" in err and "3 matching files" in err, err
    # And back down whole, byte for byte.
    rclone("copy", REMOTE + "s", "back")
    assert files_under(tmp_path / "back") == files_under(tmp_path / "src")


def test_rclone_moveto_is_a_server_side_rewrite_then_a_delete(served, rclone):
    data = os.urandom(100000)
    before = put(served, "m/from.bin", data, "application/x-test", metadata={"mtime": "2021-02-03T04:05:06.5Z"},
                 cacheControl="private, max-age=5")
    _, _, err = rclone("moveto", REMOTE + "m/from.bin", REMOTE + "m/to.bin", "--dump", "headers")
    requests_sent = re.findall(r"^\S+ \S+ DEBUG : ((?:GET|POST|PUT|PATCH|DELETE) \S+) HTTP/1\.1\r?$", err, re.M)
    # Its only changes: the rewrite (no upload: the bytes never leave the server), then the source's deletion.
    changes = [line.split("?")[0] for line in requests_sent if not line.startswith("GET ")]
    assert changes == [f"POST /storage/v1/b/{BUCKET}/o/m%2Ffrom.bin/rewriteTo/b/{BUCKET}/o/m%2Fto.bin",
                       f"DELETE /storage/v1/b/{BUCKET}/o/m%2Ffrom.bin"], requests_sent
    assert absent(served, "m/from.bin")
    assert names(served) == ["m/to.bin"]
    moved = resource(served, "m/to.bin")
    assert content(served, "m/to.bin") == data and moved["md5Hash"] == before["md5Hash"]
    # A rewrite without a destination resource keeps the source's metadata.
    assert moved["contentType"] == "application/x-test" and moved["cacheControl"] == "private, max-age=5"
    assert moved["metadata"] == {"mtime": "2021-02-03T04:05:06.5Z"}


def test_rclone_cat_whole_and_in_ranges(served, rclone):
    data = bytes(range(256)) * 40
    put(served, "c/data.bin", data, "application/octet-stream")
    put(served, "c/empty", b"")
    put(served, "c/sub/note.txt", b"a note")
    assert rclone("cat", REMOTE + "c/data.bin")[1] == data
    # Ranges: from an offset for a count, and the last bytes (a suffix range).
    assert rclone("cat", "--offset", "1000", "--count", "24", REMOTE + "c/data.bin")[1] == data[1000:1024]
    assert rclone("cat", "--tail", "10", REMOTE + "c/data.bin")[1] == data[-10:]
    assert rclone("cat", REMOTE + "c/empty")[1] == b""
    # cat of a folder: every file under it, each once (rclone does not promise an order).
    assert rclone("cat", REMOTE + "c")[1] in (data + b"a note", b"a note" + data)


GCLOUD = shutil.which("gcloud") or "/usr/bin/gcloud"


@pytest.fixture
def gcloud(served, tmp_path):
    """Debian's google-cloud-cli pointed at the server, anonymous, with a configuration of the test's own:
    gcloud(*arguments) -> (status, stdout text, stderr text)."""
    installed(GCLOUD, "gcloud (google-cloud-cli)")
    env = dict(os.environ, CLOUDSDK_CONFIG=str(tmp_path / "gcloud-config"), CLOUDSDK_AUTH_DISABLE_CREDENTIALS="True",
               CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=served.url + "/storage/v1/", CLOUDSDK_CORE_PROJECT="demo-app",
               CLOUDSDK_CORE_DISABLE_PROMPTS="1", CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK="1")

    def call(*arguments, timeout=300):
        status, out, err = run([GCLOUD, *arguments], env, str(tmp_path), timeout=timeout)
        return status, out.decode(errors="replace"), err
    return call


def test_gcloud_storage_makes_fills_moves_empties_and_deletes_a_bucket(served, gcloud, tmp_path):
    """Issue 54: `gcloud storage` end to end. A 160 MiB file goes up as a parallel composite (components, then a
    compose whose request carries a stale MD5), comes back whole, is moved, and `rm -r` empties and deletes the
    bucket (it asks for the storage layout and the managed folders first)."""
    status, _, err = gcloud("storage", "buckets", "create", "gs://gcloud-bucket", "--location=eu")
    assert status == 0, err
    status, out, err = gcloud("storage", "buckets", "update", "gs://gcloud-bucket", "--update-labels=course=storage")
    assert status == 0, err
    status, out, err = gcloud("storage", "buckets", "describe", "gs://gcloud-bucket", "--format=json")
    assert status == 0, err
    described = json.loads(out)
    assert described["location"] == "EU" and described["labels"] == {"course": "storage"}, described
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(160 << 20))
    status, _, err = gcloud("storage", "cp", str(big), "gs://gcloud-bucket/big.bin")
    assert status == 0, err
    status, _, err = gcloud("storage", "cp", "gs://gcloud-bucket/big.bin", str(tmp_path / "back.bin"))
    assert status == 0, err
    assert (tmp_path / "back.bin").read_bytes() == big.read_bytes()
    status, _, err = gcloud("storage", "mv", "gs://gcloud-bucket/big.bin", "gs://gcloud-bucket/moved/big.bin")
    assert status == 0, err
    status, out, err = gcloud("storage", "ls", "gs://gcloud-bucket/**")
    assert status == 0 and out.split() == ["gs://gcloud-bucket/moved/big.bin"], (out, err)
    status, _, err = gcloud("storage", "rm", "-r", "gs://gcloud-bucket")
    assert status == 0, err
    assert not list(served.home.glob("gcloud-bucket.bucket*"))
    status, out, err = gcloud("storage", "buckets", "list", "--format=value(name)")
    assert status == 0 and out.split() == [BUCKET], (out, err)


def test_gcloud_storage_keeps_versions_holds_and_custom_times(served, gcloud, tmp_path):
    """Issue 54 (rules B5, B6, M9): with gcloud, a bucket's versioning turned on keeps every generation (`ls -a`), an
    old generation is read by number, a temporary hold refuses `rm` until it is released, a custom time is set by
    `objects update`, and `rm -a` deletes every generation; with a soft delete policy, a deleted object is listed
    (`ls --soft-deleted`) and restored (`restore`); `storesh check` finds the bucket file sound."""
    assert gcloud("storage", "buckets", "create", "gs://kept-bucket")[0] == 0
    status, _, err = gcloud("storage", "buckets", "update", "gs://kept-bucket", "--versioning")
    assert status == 0, err
    for content in [b"first", b"second"]:
        (tmp_path / "notes.txt").write_bytes(content)
        assert gcloud("storage", "cp", str(tmp_path / "notes.txt"), "gs://kept-bucket/notes.txt")[0] == 0
    status, out, err = gcloud("storage", "ls", "-a", "gs://kept-bucket")
    generations = [line.split("#")[1] for line in out.split()]
    assert status == 0 and len(generations) == 2 and generations[0] < generations[1], (out, err)
    status, out, err = gcloud("storage", "cat", f"gs://kept-bucket/notes.txt#{generations[0]}")
    assert status == 0 and out == "first", err
    status, _, err = gcloud("storage", "objects", "update", "gs://kept-bucket/notes.txt", "--temporary-hold",
                            "--custom-time=2026-12-01T00:00:00Z")
    assert status == 0, err
    status, out, err = gcloud("storage", "objects", "describe", "gs://kept-bucket/notes.txt", "--format=json")
    described = json.loads(out)
    assert described.get("temporary_hold") is True and described["custom_time"].startswith("2026-12-01"), described
    status, _, err = gcloud("storage", "rm", "gs://kept-bucket/notes.txt")
    assert status != 0
    assert gcloud("storage", "objects", "update", "gs://kept-bucket/notes.txt", "--no-temporary-hold")[0] == 0
    status, _, err = gcloud("storage", "rm", "-a", "gs://kept-bucket/**")
    assert status == 0, err
    status, out, _ = gcloud("storage", "ls", "-a", "gs://kept-bucket")
    assert out.split() == [], out
    # With a soft delete policy, a deleted object is listed with --soft-deleted and restored (rule B6).
    status, _, err = gcloud("storage", "buckets", "update", "gs://kept-bucket", "--soft-delete-duration=7d", "--no-versioning")
    assert status == 0, err
    (tmp_path / "notes.txt").write_bytes(b"keep me")
    assert gcloud("storage", "cp", str(tmp_path / "notes.txt"), "gs://kept-bucket/notes.txt")[0] == 0
    assert gcloud("storage", "rm", "gs://kept-bucket/notes.txt")[0] == 0
    status, out, err = gcloud("storage", "ls", "--soft-deleted", "gs://kept-bucket/**")
    assert status == 0 and len(out.split()) == 1 and "#" in out, (out, err)
    status, _, err = gcloud("storage", "restore", out.split()[0])
    assert status == 0, err
    status, out, err = gcloud("storage", "cat", "gs://kept-bucket/notes.txt")
    assert status == 0 and out == "keep me", err
    # The bucket itself, deleted under its soft delete policy, is kept: listed with its generation and restored whole.
    assert gcloud("storage", "rm", "gs://kept-bucket/notes.txt")[0] == 0
    status, _, err = gcloud("storage", "buckets", "delete", "gs://kept-bucket")
    assert status == 0, err
    assert not (served.home / "kept-bucket.bucket").exists()
    status, out, err = gcloud("storage", "buckets", "describe", "gs://kept-bucket")
    assert status != 0, out
    status, out, err = gcloud("alpha", "storage", "buckets", "list", "--soft-deleted", "--format=json")
    assert status == 0, err
    kept = json.loads(out)
    assert status == 0 and [b["name"] for b in kept] == ["kept-bucket"] and kept[0]["soft_delete_time"], (out, err)
    generation = kept[0]["generation"]
    status, _, err = gcloud("storage", "restore", f"gs://kept-bucket#{generation}")
    assert status == 0, err
    status, out, err = gcloud("storage", "buckets", "describe", "gs://kept-bucket", "--format=json")
    restored = json.loads(out)
    assert status == 0 and str(restored["generation"]) == str(generation) and "soft_delete_time" not in restored, (out, err)
    status, out, err = gcloud("storage", "ls", "--soft-deleted", "gs://kept-bucket/**")
    assert status == 0 and len(out.split()) == 1, (out, err)
    status, out, err = gcloud("alpha", "storage", "buckets", "list", "--soft-deleted", "--format=value(name)")
    assert status == 0 and out.split() == [], (out, err)
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(served.home / "kept-bucket.bucket"))
    assert status == 0, out + err


def test_gcloud_storage_retention_policies_and_object_retention_keep_objects(served, gcloud, tmp_path):
    """Issue 54 (rule M9): a bucket made with a retention period keeps its objects (rm is a 403) until the period is
    cleared; a bucket made with per-object retention takes an object's own retention, which refuses rm and refuses
    to be cleared without --override-unlocked-retention; storesh's `meta set retention=` makes one Locked, which gcloud
    reads and can then neither clear nor delete past; `storesh check` finds both bucket files sound."""
    (tmp_path / "x.txt").write_bytes(b"kept")
    status, _, err = gcloud("storage", "buckets", "create", "gs://policy-bucket", "--retention-period=1h")
    assert status == 0, err
    assert gcloud("storage", "cp", str(tmp_path / "x.txt"), "gs://policy-bucket/x.txt")[0] == 0
    status, _, err = gcloud("storage", "rm", "gs://policy-bucket/x.txt")
    assert status != 0 and "retention policy until" in err
    status, out, err = gcloud("storage", "buckets", "describe", "gs://policy-bucket", "--format=json(retention_policy)")
    assert status == 0 and json.loads(out)["retention_policy"]["retentionPeriod"] == "3600", (out, err)
    assert gcloud("storage", "buckets", "update", "gs://policy-bucket", "--clear-retention-period")[0] == 0
    assert gcloud("storage", "rm", "gs://policy-bucket/x.txt")[0] == 0
    status, _, err = gcloud("storage", "buckets", "create", "gs://object-retention-bucket", "--enable-per-object-retention")
    assert status == 0, err
    assert gcloud("storage", "cp", str(tmp_path / "x.txt"), "gs://object-retention-bucket/x.txt")[0] == 0
    status, _, err = gcloud("storage", "objects", "update", "gs://object-retention-bucket/x.txt",
                            "--retain-until=2030-01-01T00:00:00Z", "--retention-mode=Unlocked")
    assert status == 0, err
    status, out, err = gcloud("storage", "objects", "describe", "gs://object-retention-bucket/x.txt", "--format=json(retention_settings)")
    assert json.loads(out)["retention_settings"] == {"mode": "Unlocked", "retainUntilTime": "2030-01-01T00:00:00+00:00"}, (out, err)
    status, _, err = gcloud("storage", "rm", "gs://object-retention-bucket/x.txt")
    assert status != 0 and "retained until 2030-01-01" in err
    status, _, err = gcloud("storage", "objects", "update", "gs://object-retention-bucket/x.txt", "--clear-retention")
    assert status != 0 and "overrideUnlockedRetention" in err
    status, _, err = gcloud("storage", "objects", "update", "gs://object-retention-bucket/x.txt", "--clear-retention",
                            "--override-unlocked-retention")
    assert status == 0, err
    assert gcloud("storage", "rm", "gs://object-retention-bucket/x.txt")[0] == 0
    # storesh's own meta set on the bucket file: a Locked retention, which gcloud then reads and cannot remove.
    assert gcloud("storage", "cp", str(tmp_path / "x.txt"), "gs://object-retention-bucket/locked.txt")[0] == 0
    retained = str(served.home / "object-retention-bucket.bucket")
    status, out, err = harness.storesh(tmp_path, "--bucket", retained, "-c",
                                       'meta set retention="Locked until 2031-01-01T00:00:00Z" -- locked.txt')
    assert status == 0 and b'retention  (not set)  \xe2\x86\x92  "Locked until 2031-01-01T00:00:00.000Z"' in out, out + err
    status, out, err = gcloud("storage", "objects", "describe", "gs://object-retention-bucket/locked.txt", "--format=json(retention_settings)")
    assert json.loads(out)["retention_settings"] == {"mode": "Locked", "retainUntilTime": "2031-01-01T00:00:00+00:00"}, (out, err)
    status, _, err = gcloud("storage", "objects", "update", "gs://object-retention-bucket/locked.txt", "--clear-retention",
                            "--override-unlocked-retention")
    assert status != 0 and "it can only be lengthened" in err, err
    status, _, err = harness.storesh(tmp_path, "--bucket", retained, "-c", "meta unset retention -- locked.txt")
    assert status == 1 and b"never shortened, unlocked or removed" in err, err
    status, _, err = harness.storesh(tmp_path, "--bucket", retained, "-c",
                                     'meta set retention="Locked until 2032-01-01T00:00:00Z" -- locked.txt')
    assert status == 0, err
    assert gcloud("storage", "rm", "gs://object-retention-bucket/locked.txt")[0] != 0
    for name in ("policy-bucket", "object-retention-bucket"):
        status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(served.home / f"{name}.bucket"))
        assert status == 0, out + err


def test_gcloud_storage_rsync_updates_by_wildcard_and_rewrites_storage_classes(served, gcloud, tmp_path):
    """Issue 54: `gcloud storage rsync -r` of a small tree up, again (nothing to send), and back; `objects update` by a
    wildcard sets a property on every match; `objects update --storage-class` rewrites an object (a new generation of
    the same content) and storesh's own `meta set storageClass=` does the same through gs://, each read back by the
    other; `storesh check` finds the bucket file sound."""
    tree = tmp_path / "tree"
    for name, content in [("a.txt", b"alpha"), ("sub/b.txt", b"beta"), ("sub/deeper/c.bin", os.urandom(70000))]:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(content)
    status, _, err = gcloud("storage", "rsync", "-r", str(tree), f"gs://{BUCKET}/tree")
    assert status == 0, err
    status, out, err = gcloud("storage", "ls", f"gs://{BUCKET}/tree/**")
    assert status == 0 and sorted(out.split()) == [f"gs://{BUCKET}/tree/{n}" for n in ("a.txt", "sub/b.txt", "sub/deeper/c.bin")], out
    status, _, err = gcloud("storage", "rsync", "-r", f"gs://{BUCKET}/tree", str(tmp_path / "back"))
    assert status == 0, err
    for name in ("a.txt", "sub/b.txt", "sub/deeper/c.bin"):
        assert (tmp_path / "back" / name).read_bytes() == (tree / name).read_bytes()
    status, _, err = gcloud("storage", "objects", "update", f"gs://{BUCKET}/tree/**.txt", "--cache-control=no-store")
    assert status == 0, err
    status, out, err = gcloud("storage", "objects", "list", f"gs://{BUCKET}/tree/**", "--format=json")
    listed = {item["name"]: item for item in json.loads(out)}
    assert [listed[f"tree/{n}"].get("cache_control") for n in ("a.txt", "sub/b.txt", "sub/deeper/c.bin")] == ["no-store", "no-store", None], out
    before = listed["tree/a.txt"]
    status, _, err = gcloud("storage", "objects", "update", f"gs://{BUCKET}/tree/a.txt", "--storage-class=NEARLINE")
    assert status == 0, err
    status, out, err = harness.storesh(tmp_path, "--json", "--bucket", served.bucket_file, "-c", "meta get tree/a.txt")
    rewritten = json.loads(out)
    assert status == 0 and rewritten["storageClass"] == "NEARLINE" and rewritten["cacheControl"] == "no-store", rewritten
    assert int(rewritten["generation"]) > int(before["generation"]) and rewritten["md5Hash"] == before["md5_hash"]
    status, out, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "-c", "meta set storageClass=coldline -- tree/sub/**",
                                       STORAGE_EMULATOR_HOST=served.url)
    assert status == 0 and b"updated 2 objects" in out, out + err
    status, out, err = gcloud("storage", "objects", "describe", f"gs://{BUCKET}/tree/sub/deeper/c.bin", "--format=json")
    assert status == 0 and json.loads(out)["storage_class"] == "COLDLINE", out + err
    back = tmp_path / "c.bin"
    status, _, err = gcloud("storage", "cp", f"gs://{BUCKET}/tree/sub/deeper/c.bin", str(back))
    assert status == 0 and back.read_bytes() == (tree / "sub/deeper/c.bin").read_bytes(), err
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", served.bucket_file)
    assert status == 0, out + err


def test_gcloud_storage_sets_autoclass_placement_encryption_enforcement_and_predefined_acls(served, gcloud, tmp_path):
    """Issue 54 (rules B4, B7), through gcloud: a bucket made with autoclass in a custom dual region, its terminal
    class changed; a predefined ACL on an upload and a predefined default object ACL on the bucket; an encryption
    enforcement that then refuses a plain upload (412); `storesh check` finds the bucket file sound."""
    status, _, err = gcloud("storage", "buckets", "create", "gs://placed-bucket", "--enable-autoclass", "--location=US",
                            "--placement=us-east1,us-west1")
    assert status == 0, err
    status, out, err = gcloud("storage", "buckets", "describe", "gs://placed-bucket", "--format=json")
    described = json.loads(out)
    assert (described["location_type"], described["data_locations"]) == ("dual-region", ["US-EAST1", "US-WEST1"]), out
    assert described["autoclass"]["enabled"] and described["autoclass"]["terminalStorageClass"] == "NEARLINE", out
    assert gcloud("storage", "buckets", "update", "gs://placed-bucket", "--autoclass-terminal-storage-class=ARCHIVE")[0] == 0
    status, out, err = gcloud("storage", "buckets", "describe", "gs://placed-bucket", "--format=json(autoclass)")
    assert json.loads(out)["autoclass"]["terminalStorageClass"] == "ARCHIVE", (out, err)
    (tmp_path / "f.txt").write_bytes(b"public")
    assert gcloud("storage", "cp", "--predefined-acl=publicRead", str(tmp_path / "f.txt"), "gs://placed-bucket/f.txt")[0] == 0
    acl = requests.get(f"{served.url}/storage/v1/b/placed-bucket/o/f.txt/acl", timeout=30).json()["items"]
    assert {(entry["entity"], entry["role"]) for entry in acl} == {("project-owners-0", "OWNER"), ("allUsers", "READER")}
    assert gcloud("storage", "buckets", "update", "gs://placed-bucket", "--predefined-default-object-acl=private")[0] == 0
    default = requests.get(f"{served.url}/storage/v1/b/placed-bucket/defaultObjectAcl", timeout=30).json()["items"]
    assert [entry["entity"] for entry in default] == ["project-owners-0"]
    restricted = requests.patch(f"{served.url}/storage/v1/b/placed-bucket", timeout=30, json={
        "encryption": {"googleManagedEncryptionEnforcementConfig": {"restrictionMode": "FullyRestricted"}}})
    assert restricted.status_code == 200, restricted.text
    status, _, err = gcloud("storage", "cp", str(tmp_path / "f.txt"), "gs://placed-bucket/g.txt")
    assert status != 0 and ("412" in err or "restricts new objects' encryption" in err), err
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(served.home / "placed-bucket.bucket"))
    assert status == 0 and b": sound (1 object" in out, (out + err).decode(errors="replace")
