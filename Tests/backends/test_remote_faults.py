"""Faults between storesh and a gs:// server, injected by the tests' own proxy in front of `storesh serve`: retries
happen only where harmless (G4), a change made by someone else between plan and apply is reported and not
overwritten (G5, X3), a dry run sends nothing that changes (X1), kill -9 and Ctrl-C during apply are finished by
`run --resume` with every change applied exactly once, and `undo` puts the old values back (X4, X5).
"""
import json
from urllib.parse import parse_qs, urlsplit
import os
import random
import signal
import subprocess

import pytest
import requests

import harness
from backend_support import BUCKET
from faultproxy import FaultProxy, Rule


class Remote:
    """storesh on gs:// through the fault proxy, and direct access to the server behind it."""

    def __init__(self, home, server_url, proxy):
        self.home = home
        self.server_url = server_url
        self.proxy = proxy
        self.env = {"STORAGE_EMULATOR_HOST": proxy.url, "XDG_STATE_HOME": str(home / "state"),
                    "STORESH_RETRY_FIRST_MS": "20"}

    def run(self, *arguments, stdin=None, **extra):
        status, out, err = harness.storesh(self.home, "--bucket", f"gs://{BUCKET}", "--quiet", *arguments, stdin=stdin,
                                           **dict(self.env, **extra))
        return status, out.decode(), err.decode()

    def start(self, *arguments):
        return harness.start(self.home, "--bucket", f"gs://{BUCKET}", "--quiet", *arguments, **self.env)

    def object(self, name):
        quoted = requests.utils.quote(name, safe="")
        answer = requests.get(f"{self.server_url}/storage/v1/b/{BUCKET}/o/{quoted}", timeout=30,
                              headers={"Authorization": "Bearer owner"})
        answer.raise_for_status()
        return answer.json()

    def list_all(self, prefix):
        items, token = [], None
        for _ in range(100):
            page = requests.get(f"{self.server_url}/storage/v1/b/{BUCKET}/o", timeout=60,
                                params={"prefix": prefix, **({"pageToken": token} if token else {})},
                                headers={"Authorization": "Bearer owner"}).json()
            items += page.get("items", [])
            token = page.get("nextPageToken")
            if not token:
                return items
        raise AssertionError("more than 100 pages")

    def patch_directly(self, name, body):
        quoted = requests.utils.quote(name, safe="")
        requests.patch(f"{self.server_url}/storage/v1/b/{BUCKET}/o/{quoted}", json=body, timeout=30,
                       headers={"Authorization": "Bearer owner"}).raise_for_status()

    def seed(self, names, **properties):
        """Objects imported straight into the served bucket file (the shell may share it with the server)."""
        objects = [dict({"name": name, "text": name}, **properties) for name in names]
        archive = self.home / "seed.json"
        archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1, "objects": objects}))
        status, _, err = harness.storesh(self.home, "import", "--bucket", self.bucket_file, str(archive))
        assert status == 0, err.decode()


@pytest.fixture
def remote(serve_process, serve_file, tmp_path):
    requests.post(serve_process + "/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30).raise_for_status()
    proxy = FaultProxy(serve_process)
    made = Remote(tmp_path, serve_process, proxy)
    made.bucket_file = serve_file
    yield made
    proxy.close()


def test_G4_reads_are_retried_past_503_and_429(remote):
    remote.seed(["r/a.txt"])
    remote.proxy.rules = [Rule("GET", "503", path="/o?", on=[1, 2]), Rule("GET", "429", path="/o?", on=[3], retry_after=0)]
    status, out, err = remote.run("-c", "ls r")
    assert status == 0, err
    assert "a.txt" in out
    listings = [r for r in remote.proxy.requests if r[0] == "GET" and "/o?" in r[1]]
    assert [r[2] for r in listings] == [503, 503, 429, 200]


def test_G4_a_guarded_change_whose_answer_was_lost_is_repeated_and_lands_once(remote):
    remote.seed(["c/a.txt"])
    remote.proxy.rules = [Rule("PATCH", "reset-after-forward", on=[1])]
    status, _, err = remote.run("-c", "meta set custom.k=v -- c/a.txt")
    assert status == 0, err
    patches = [r for r in remote.proxy.requests if r[0] == "PATCH"]
    assert [r[2] for r in patches] == [None, 412]  # the repeat is refused: the first landed
    assert remote.object("c/a.txt")["metageneration"] == "2"
    assert remote.object("c/a.txt")["metadata"] == {"k": "v"}


def test_G4_Q2_a_batch_whose_answer_was_lost_is_sent_again_and_each_change_lands_once(remote):
    names = [f"lost/{i}.txt" for i in range(5)]
    remote.seed(names)
    remote.proxy.rules = [Rule("POST", "reset-after-forward", path="/batch/", on=[1])]
    status, _, err = remote.run("-c", "meta set custom.k=v -- lost/*")
    assert status == 0, err
    batches = [r for r in remote.proxy.requests if r[0] == "POST" and "/batch/" in r[1]]
    # The repeat's calls are refused (412: the first landed), and each is recognised as landed.
    assert [r[2] for r in batches] == [None, 200]
    assert not [r for r in remote.proxy.requests if r[0] == "PATCH"]
    for name in names:
        assert remote.object(name)["metageneration"] == "2" and remote.object(name)["metadata"] == {"k": "v"}


def test_Q2_a_service_without_batches_is_sent_each_change_alone(remote):
    names = [f"alone/{i}.txt" for i in range(150)]
    remote.seed(names)
    remote.proxy.rules = [Rule("POST", "404", path="/batch/")]
    status, _, err = remote.run("--trace", "-c", "meta set custom.k=v -- alone/*\nmeta set custom.k=w -- alone/*")
    assert status == 0, err
    # Refused once; then every change of both commands goes alone.
    refused = [r[2] for r in remote.proxy.requests if r[0] == "POST"]
    assert set(refused) == {404} and len(refused) <= 2  # the batches sent before the first answer came back
    assert len([r for r in remote.proxy.requests if r[0] == "PATCH" and r[2] == 200]) == 300
    assert "no batch endpoint (404)" in err
    assert all(remote.object(name)["metadata"] == {"k": "w"} for name in names[::37])


def test_G4_retries_stop_after_the_bounded_total(remote):
    remote.seed(["s/a.txt"])
    remote.proxy.rules = [Rule("PATCH", "503")]
    status, _, err = remote.run("-c", "meta set custom.k=v -- s/a.txt", STORESH_RETRY_FOR="0.3")
    assert status == 1
    assert "503" in err and "attempts" in err and "(unavailable)" in err
    assert "metadata" not in remote.object("s/a.txt")


# A bulk apply's changes go as batch requests (rule Q2), or each alone with --batch 1: the faults below are tried
# both ways, a batch's calls answered as the same requests alone would be.
CHANGES = {"batched": ("POST", "/batch/", []), "alone": ("PATCH", "", ["--batch", "1"])}


@pytest.mark.parametrize("sending", CHANGES)
def test_G5_X3_a_change_made_between_plan_and_apply_is_reported_and_kept(remote, sending):
    method, path, options = CHANGES[sending]
    names = [f"race/{letter}.txt" for letter in "abcde"]
    remote.seed(names)
    # The second writer changes race/c.txt just before storesh's first change request reaches the server.
    second_writer = Rule(method, "hook", path=path, on=[1], hook=lambda: remote.patch_directly("race/c.txt", {"metadata": {"other": "writer"}}))
    remote.proxy.rules = [second_writer]
    status, _, err = remote.run("run", "--keep-going", "--parallel", "1", *options, "-", stdin=b"meta set custom.k=1 -- race/*\n")
    assert status == 1
    assert "race/c.txt changed meanwhile" in err and "(precondition-failed)" in err
    assert "applied 4 of 5 changes; 1 failed" in err
    assert remote.object("race/c.txt")["metadata"] == {"other": "writer"}
    for name in names:
        if name != "race/c.txt":
            assert remote.object(name)["metadata"] == {"k": "1"}


def test_X1_a_dry_run_sends_no_changing_request(remote, tmp_path):
    remote.seed(["dry/a.txt", "dry/b.txt"])
    (tmp_path / "new.txt").write_text("new")
    script = f"meta set cacheControl=x -- dry/*\nrm dry/a.txt\nput {tmp_path / 'new.txt'} dry/new.txt\n".encode()
    status, out, err = remote.run("run", "--dry-run", "-", stdin=script)
    assert status == 0, err
    assert "would" in out
    assert remote.proxy.changing_requests() == []
    assert [r[0] for r in remote.proxy.requests] and all(r[0] == "GET" for r in remote.proxy.requests)


def test_a_walk_over_many_objects_asks_for_each_page_once(remote):
    """A pattern over 2,500 objects is walked a page at a time, one objects.list each (issue 55: the inclusive
    startOffset used to cost every page after the first a second request, all but one of whose names were thrown
    away); every object is planned once."""
    names = [f"walk/{i:05}.txt" for i in range(2500)]
    remote.seed(names)
    status, out, err = remote.run("--dry-run", "--json", "-c", "meta set custom.k=v -- walk/**")
    assert status == 0, err
    planned = [entry["path"] for entry in json.loads(out)["updated"]]
    assert planned == names, planned[:3]
    listings = [path for method, path, _ in remote.proxy.requests if method == "GET" and "/o?" in path]
    offsets = [parse_qs(urlsplit(path).query).get("startOffset", [""])[0] for path in listings]
    assert len(offsets) == len(set(offsets)) and len(listings) <= 4, listings


def journal_lines(path):
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def applied_records(path):
    """A journal's records of applied changes (not its last line, which counts them)."""
    return [line for line in journal_lines(path) if "applied" in line and "end" not in line]


@pytest.mark.parametrize("sending", CHANGES)
@pytest.mark.parametrize("when", ["before-forward", "after-forward"])
def test_X4_kill_9_during_apply_then_resume_applies_every_change_exactly_once(remote, when, sending):
    method, path, options = CHANGES[sending]
    names = [f"bulk/{i:04}.jpg" for i in range(2000)]
    remote.seed(names)
    journal = str(remote.home / "bulk.journal")
    # 2,000 changes are 20 batches of 100, or 2,000 requests alone.
    at = random.Random().randint(2, 19) if sending == "batched" else random.Random().randint(50, 1900)
    holder = {}

    def kill():
        os.kill(holder["process"].pid, signal.SIGKILL)

    action = "hook" if when == "before-forward" else "hook-after-forward"
    remote.proxy.rules = [Rule(method, action, path=path, on=[at], hook=kill)]
    process = remote.start("--journal", journal, *options, "-c", "meta set cacheControl=max-age=60 custom.fixed=yes -- bulk/**")
    holder["process"] = process
    process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, f"killed at {method} {at}"
    recorded = applied_records(journal)
    assert len(recorded) < 2000
    remote.proxy.rules = []
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0, f"killed at {method} {at}: {err}"
    assert "applied 2,000 changes" in err
    for name in names[::97] + names[-3:]:
        object = remote.object(name)
        assert object["metadata"] == {"fixed": "yes"} and object["cacheControl"] == "max-age=60"
    # Exactly once: each object took one metadata change (metageneration 1 → 2), wherever the kill fell.
    listing = remote.list_all("bulk/")
    assert len(listing) == 2000 and {item["metageneration"] for item in listing} == {"2"}
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0 and "nothing to resume" in err


DELETES = {"batched": ("POST", "/batch/", []), "alone": ("DELETE", "", ["--batch", "1"])}


@pytest.mark.parametrize("sending", DELETES)
def test_X4_kill_9_after_deletes_landed_unheard_then_resume_counts_them_deleted(remote, sending):
    """Deletes that reached the server just before kill -9, their answers never heard: the resumed run finds each
    object gone as planned and records it, rather than failing on the 404 that sending it again gets."""
    method, path, options = DELETES[sending]
    names = [f"gone/{i:04}.txt" for i in range(1000)]
    remote.seed(names)
    journal = str(remote.home / "rm.journal")
    at = random.Random().randint(2, 9) if sending == "batched" else random.Random().randint(50, 950)
    holder = {}

    def kill():
        os.kill(holder["process"].pid, signal.SIGKILL)

    remote.proxy.rules = [Rule(method, "hook-after-forward", path=path, on=[at], hook=kill)]
    process = remote.start("--journal", journal, *options, "-c", "rm gone/**")
    holder["process"] = process
    process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, f"killed at {method} {at}"
    remote.proxy.rules = []
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0 and "applied 1,000 changes" in err, f"killed at {method} {at}: {err}"
    assert remote.list_all("gone/") == []


@pytest.mark.parametrize("when", ["before-forward", "after-forward"])
def test_M10_X4_kill_9_around_a_move_then_resume_moves_each_object_exactly_once(remote, when):
    """A move is journaled as its object arriving, then its source leaving, once objects.move has answered: killed
    before the request reaches the server, or after it moved the object but before storesh heard, the resumed run
    moves each object exactly once and counts each move once."""
    names = [f"moving/{i:03}.txt" for i in range(300)]
    remote.seed(names)
    journal = str(remote.home / "moves.journal")
    at = random.Random().randint(20, 280)
    holder = {}

    def kill():
        os.kill(holder["process"].pid, signal.SIGKILL)

    action = "hook" if when == "before-forward" else "hook-after-forward"
    remote.proxy.rules = [Rule("POST", action, path="/moveTo/", on=[at], hook=kill)]
    process = remote.start("--journal", journal, "-c", "mv moving/** moved/")
    holder["process"] = process
    process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, f"killed at move {at}"
    remote.proxy.rules = []
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0 and "applied 300 changes" in err, f"killed at move {at} ({when}): {err}"
    assert remote.list_all("moving/") == []
    moved = remote.list_all("moved/")
    assert sorted(item["name"] for item in moved) == [name.replace("moving/", "moved/") for name in names]
    # Exactly once: each arrived as a new object (metageneration 1) with its own content.
    assert {item["metageneration"] for item in moved} == {"1"}
    assert all(int(item["size"]) == len(item["name"].replace("moved/", "moving/")) for item in moved)
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0 and "nothing to resume" in err
    status, out, err = remote.run("undo", "--dry-run", journal)
    assert status == 0 and out.endswith("would move 300 objects\n"), out + err


@pytest.mark.parametrize("sending", CHANGES)
def test_X5_ctrl_c_during_apply_finishes_in_flight_and_exits_130(remote, sending):
    method, path, options = CHANGES[sending]
    names = [f"int/{i:03}.txt" for i in range(300)]
    remote.seed(names)
    journal = str(remote.home / "int.journal")
    holder = {}
    # Batches of 10 with one in flight: the Ctrl-C comes while the second of 30 is sent.
    options = options or ["--batch", "10", "--parallel", "1"]
    remote.proxy.rules = [Rule(method, "hook", path=path, on=[2 if sending == "batched" else 40],
                               hook=lambda: os.kill(holder["process"].pid, signal.SIGINT))]
    process = remote.start("--journal", journal, *options, "-c", "meta set custom.k=v -- int/*")
    holder["process"] = process
    _, err = process.communicate(timeout=120)
    err = err.decode()
    assert process.returncode == 130, err
    assert "interrupted: applied" in err and "storesh run --resume" in err
    assert journal_lines(journal)[-1]["end"] == "interrupted"
    applied = {line["applied"] for line in applied_records(journal)}
    assert 0 < len(applied) < 300
    remote.proxy.rules = []
    status, _, err = remote.run("run", "--resume", journal)
    assert status == 0, err
    assert all(remote.object(name)["metadata"] == {"k": "v"} for name in names[::29])


@pytest.mark.parametrize("at", [7, 150, 233])
def test_X5_an_interrupted_run_prints_what_landed_of_each_command_and_nothing_more(remote, at):
    """A script's results are printed once its changes have landed: Ctrl-C anywhere in the apply leaves no line
    that claims an object was updated; the run says how many of each command's changes landed, and those are the
    bucket's changed objects."""
    names = [f"two/{part}/{i:03}.txt" for part in "ab" for i in range(150)]
    remote.seed(names)
    journal = str(remote.home / f"two-{at}.journal")
    holder = {}
    remote.proxy.rules = [Rule("PATCH", "hook", on=[at], hook=lambda: os.kill(holder["process"].pid, signal.SIGINT))]
    process = remote.start("--journal", journal, "--batch", "1", "--parallel", "1",
                           "-c", "meta set custom.k=1 -- two/a/*; meta set custom.k=2 -- two/b/*")
    holder["process"] = process
    out, err = process.communicate(timeout=120)
    out, err = out.decode(), err.decode()
    assert process.returncode == 130, err
    assert "updated" not in out and "custom.k" not in out, out
    listing = remote.list_all("two/")
    landed = {part: sum(1 for item in listing if item["name"].startswith(f"two/{part}/") and item.get("metadata", {}).get("k"))
              for part in "ab"}
    assert 0 < landed["a"] + landed["b"] < 300
    assert f"interrupted: applied {landed['a'] + landed['b']:,} of 300 changes;" in err, err
    assert f"(meta set custom.k=1 -- two/a/*): applied {landed['a']:,} of 150 changes" in err, err
    assert f"(meta set custom.k=2 -- two/b/*): applied {landed['b']:,} of 150 changes" in err, err
    assert "storesh run --resume" in err and "storesh undo" in err


def test_X5_as_json_an_interrupted_run_says_what_landed_of_each_command_in_one_document(remote):
    """With --json, notices are not written: what landed is the run's one result document, per command too."""
    names = [f"json/{part}/{i:03}.txt" for part in "ab" for i in range(150)]
    remote.seed(names)
    journal = str(remote.home / "json.journal")
    holder = {}
    remote.proxy.rules = [Rule("PATCH", "hook", on=[200], hook=lambda: os.kill(holder["process"].pid, signal.SIGINT))]
    process = remote.start("--json", "--journal", journal, "--batch", "1", "--parallel", "1",
                           "-c", "meta set custom.k=1 -- json/a/*; meta set custom.k=2 -- json/b/*")
    holder["process"] = process
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    documents = [json.loads(line) for line in out.decode().splitlines()]
    assert len(documents) == 1, documents
    document = documents[0]
    listing = remote.list_all("json/")
    landed = {part: sum(1 for item in listing if item["name"].startswith(f"json/{part}/") and item.get("metadata", {}).get("k"))
              for part in "ab"}
    assert document["incomplete"] == "interrupted" and document["changes"] == 300 and document["journal"] == journal
    assert document["applied"] == landed["a"] + landed["b"] and document["applied"] + document["notSent"] + document["failed"] == 300
    assert [(c["line"], c["column"], c["command"], c["planned"], c["applied"]) for c in document["commands"]] == [
        (1, 1, "meta set custom.k=1 -- json/a/*", 150, landed["a"]), (1, 34, "meta set custom.k=2 -- json/b/*", 150, landed["b"])]


def test_X4_undo_puts_back_the_old_values_with_preconditions(remote):
    names = [f"u/{i}.txt" for i in range(5)]
    remote.seed(names, cacheControl="old", customMetadata={"keep": "1"})
    journal = str(remote.home / "u.journal")
    status, _, err = remote.run("--journal", journal, "-c", "meta set cacheControl=new custom.added=2 -- u/*")
    assert status == 0, err
    status, out, err = remote.run("undo", "--dry-run", journal)
    assert status == 0 and "would update 5 objects" in out, out + err
    assert remote.object("u/0.txt")["cacheControl"] == "new"
    # Someone changes u/4.txt after the run: undo leaves it alone and says so.
    remote.patch_directly("u/4.txt", {"contentLanguage": "fr"})
    status, _, err = remote.run("undo", "--keep-going", journal)
    assert status == 1 and "u/4.txt changed meanwhile" in err
    # Its failure names the journal (not the script its run came from), and says what undo leaves.
    assert f"{journal}:1:1: error: Object u/4.txt changed meanwhile" in err, err
    assert "an object another writer changed since the run is left as that writer made it" in err and "run the script again" not in err
    for name in names[:4]:
        object = remote.object(name)
        assert object["cacheControl"] == "old" and object["metadata"] == {"keep": "1"}
    assert remote.object("u/4.txt")["cacheControl"] == "new"


def test_G4_slow_answers_are_waited_for_and_apply_stays_in_order(remote):
    names = [f"slow/{i}.txt" for i in range(8)]
    remote.seed(names)
    remote.proxy.rules = [Rule("PATCH", "slow", seconds=0.3)]
    status, _, err = remote.run("run", "--parallel", "4", "-", stdin=b"meta set custom.a=1 -- slow/*\nmeta set custom.b=2 -- slow/*\n")
    assert status == 0, err
    # Each object took its two changes in the script's order, one metageneration each.
    assert all(remote.object(n)["metadata"] == {"a": "1", "b": "2"} and remote.object(n)["metageneration"] == "3" for n in names)


def test_G4_a_change_without_a_precondition_is_never_repeated(remote):
    """Through the v0 API (signed in as a user) changes carry no precondition: a 503 is reported, not retried."""
    remote.seed(["once/a.txt"])
    remote.proxy.rules = [Rule("PATCH", "503", path="/v0/", on=[1])]
    status, _, err = remote.run("-c", "login ada\nmeta set custom.k=v -- once/a.txt")
    assert status == 1 and "503" in err
    assert [r for r in remote.proxy.requests if r[0] == "PATCH"] == [("PATCH", remote.proxy.requests[-1][1], 503)]
    assert "metadata" not in remote.object("once/a.txt")


def run_measured(remote, *arguments):
    """storesh run to its end, with its peak resident memory (KiB) as GNU time measures it: wait4 on a child of this
    process would count the Python process's own memory, which the child shares until it runs storesh."""
    measure = remote.home / "peak.txt"
    env = harness.environment(remote.home, **remote.env)
    done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(measure), harness.BINARY, "--bucket", f"gs://{BUCKET}",
                           "--quiet", *arguments], capture_output=True, env=env, timeout=300)
    return done.returncode, done.stdout.decode(), done.stderr.decode(), int(measure.read_text().split()[-1])


def test_large_files_are_streamed_in_chunks_both_ways(remote, tmp_path):
    """A 96 MiB put goes as a resumable upload in 8 MiB chunks and a get is written as it arrives: storesh never
    holds the file whole (its peak memory stays under the file's size, where holding it would cost the size plus
    the process's own 25 MiB or so), and the bytes come back the same."""
    size = 96 << 20
    big = tmp_path / "big.bin"
    with open(big, "wb") as file:
        block = os.urandom(1 << 20)
        for index in range(size >> 20):
            file.write(bytes([index]) + block[1:])
    journal = str(tmp_path / "big.journal")
    status, _, err, peak = run_measured(remote, "--journal", journal, "-c", f"put {big} media/big.bin")
    assert status == 0, err
    chunks = [r for r in remote.proxy.requests if r[0] == "PUT"]
    assert len(chunks) == 12 and [r[2] for r in chunks] == [308] * 11 + [200]
    assert peak < size >> 10, f"peak memory {peak} KiB for a {size >> 20} MiB upload"
    assert '"contentFrom"' in open(journal).read() and len(open(journal).read()) < 100_000
    status, _, err, peak = run_measured(remote, "-c", f"get media/big.bin {tmp_path / 'back.bin'}")
    assert status == 0, err
    assert peak < size >> 10, f"peak memory {peak} KiB for a {size >> 20} MiB download"
    assert harness.digest(str(tmp_path / "back.bin")) == harness.digest(str(big))
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def test_X1_G5_a_kept_plan_is_applied_later_as_reviewed_journaled_and_undoable(remote):
    """`--dry-run --plan FILE` on a real bucket sends nothing that changes; `storesh apply FILE` later sends the plan
    guarded by the state each object was planned from: an object someone changed meanwhile is refused, not
    overwritten; the apply is journaled like a run's, so undo puts it back."""
    names = [f"kept/{i}.txt" for i in range(6)]
    remote.seed(names, cacheControl="old")
    plan = str(remote.home / "fix.plan")
    status, out, err = remote.run("--dry-run", "--plan", plan, "-c", "meta set cacheControl=new -- kept/*")
    assert status == 0 and "would update 6 objects" in out, out + err
    assert not [r for r in remote.proxy.requests if r[0] in ("PATCH", "POST", "PUT", "DELETE")]
    header = journal_lines(plan)[0]
    assert header["bucket"] == f"gs://{BUCKET}" and header["changes"] == 6
    assert all(remote.object(name)["cacheControl"] == "old" for name in names)

    remote.patch_directly("kept/3.txt", {"cacheControl": "someone-else"})
    journal = str(remote.home / "apply.journal")
    remote.proxy.requests.clear()
    status, _, err = remote.run("apply", "--keep-going", "--journal", journal, plan)
    assert status == 1, err
    # Applied as planned: nothing is listed again.
    assert not [r for r in remote.proxy.requests if r[0] == "GET" and "/o?" in r[1]]
    assert "kept/3.txt changed meanwhile" in err and f"{plan}:5:1:" in err
    assert remote.object("kept/3.txt")["cacheControl"] == "someone-else"
    assert all(remote.object(name)["cacheControl"] == "new" for name in names if name != "kept/3.txt")
    # The plan file is as it was reviewed; the journal records what landed, after the plan's own bytes (written once,
    # by the dry run, and copied: not listed, planned or written again).
    assert len(journal_lines(plan)) == 7
    assert len(applied_records(journal)) == 5
    with open(plan, "rb") as kept, open(journal, "rb") as written:
        assert written.read().startswith(kept.read())

    status, _, err = remote.run("undo", journal)
    assert status == 0, err
    assert all(remote.object(name)["cacheControl"] == "old" for name in names if name != "kept/3.txt")
    assert remote.object("kept/3.txt")["cacheControl"] == "someone-else"


def test_X4_a_plan_whose_last_line_has_no_newline_gives_a_journal_that_resumes_and_undoes(remote):
    """A plan is a journal's first lines, and its journal starts as a copy of its bytes: a plan saved by an editor
    without its last newline still gives a journal whose records each start a line, which undo reads."""
    names = [f"hand/{i}.txt" for i in range(3)]
    remote.seed(names, cacheControl="old")
    plan = str(remote.home / "hand.plan")
    status, _, err = remote.run("--dry-run", "--plan", plan, "-c", "meta set cacheControl=new -- hand/*")
    assert status == 0, err
    with open(plan, "rb") as kept:
        text = kept.read()
    with open(plan, "wb") as edited:
        edited.write(text.rstrip(b"\n"))
    journal = str(remote.home / "hand.journal")
    status, _, err = remote.run("apply", "--journal", journal, plan)
    assert status == 0, err
    assert all(remote.object(name)["cacheControl"] == "new" for name in names)
    assert len(applied_records(journal)) == 3
    status, _, err = remote.run("undo", journal)
    assert status == 0, err
    assert all(remote.object(name)["cacheControl"] == "old" for name in names)


def test_explain_shows_the_requests_storesh_sends(remote):
    """explain's JSON API requests are built by the code that builds the backend's (StoreshWire): method, path,
    query and body equal what storesh then sends, as the proxy recorded it."""
    remote.seed(["wire/a b.txt", "wire/c.txt", "wire/sub/d.txt"])

    def explained(command):
        status, out, err = remote.run("--json", "-c", f"explain {command}")
        assert status == 0, err
        return json.loads(out.splitlines()[0])["requests"]

    def sent(command):
        remote.proxy.exchanges.clear()
        status, _, err = remote.run("-c", command)
        assert status == 0, err
        return list(remote.proxy.exchanges)

    def as_explained(exchange):
        method, path, body = exchange
        return f"{method} https://storage.googleapis.com{path}" + (f"\n{body.decode()}" if body else "")

    # An update: guarded by the generation and metageneration read, the body naming only what changes.
    command = 'meta set cacheControl=max-age=60 custom.k=v -- "wire/a b.txt"'
    explanation = explained(command)[-1]["cloudStorageREST"]
    patches = [exchange for exchange in sent(command) if exchange[0] == "PATCH"]
    assert [as_explained(exchange) for exchange in patches] == [explanation]
    assert "ifGenerationMatch=" in explanation and "ifMetagenerationMatch=1" in explanation
    # The same again changes nothing: explain says no request goes, and none does.
    assert "storesh sends no request" in explained(command)[-1]["note"]
    assert [exchange for exchange in sent(command) if exchange[0] == "PATCH"] == []

    # meta copy: SRC's read, then one PATCH per DEST that would change, as explain shows it.
    command = 'meta copy "wire/a b.txt" -- wire/c.txt'
    explanation = explained(command)[-1]["cloudStorageREST"]
    patches = [exchange for exchange in sent(command) if exchange[0] == "PATCH"]
    assert [as_explained(exchange) for exchange in patches] == [explanation]
    assert '"cacheControl":"max-age=60"' in explanation.replace(" ", "")

    # A pattern within one folder: the walk that finds its objects is a flat scan of the folder's names.
    command = "meta set custom.k=w -- wire/*"
    walk = explained(command)[0]["cloudStorageREST"]
    listings = [exchange for exchange in sent(command) if exchange[0] == "GET" and "/o?" in exchange[1]]
    assert as_explained(listings[0]) == walk.split(" (")[0]

    # A page of a folder: the stored listing storesh reads, one entry more than the page.
    command = "ls -n 2 wire"
    explanation = explained(command)[0]["cloudStorageREST"].split(" (")[0]
    listings = [exchange for exchange in sent(command) if exchange[0] == "GET" and "delimiter=" in exchange[1]]
    assert as_explained(listings[0]) == explanation

    # An upload where nothing is (ifGenerationMatch=0), then over what the first left: the endpoint and query
    # storesh sends (the multipart body's boundary is its own each time).
    (remote.home / "up.txt").write_text("up")
    command = f"put {remote.home / 'up.txt'} wire/up.txt"
    for guard in ("ifGenerationMatch=0", "ifGenerationMatch="):
        explanation = explained(command)[-1]["cloudStorageREST"].split("\n")[0]
        posts = [exchange for exchange in sent(command) if exchange[0] == "POST"]
        assert [f"POST https://storage.googleapis.com{path}" for _, path, _ in posts] == [explanation]
        assert guard in explanation

    # Signed in as an end user (rule F1), storesh sends the Firebase v0 API's requests, as explain shows them
    # (FirebaseWire builds both).
    def sent_signed_in(command):
        return sent(f"login ada; {command}")

    def as_firebase(exchange):
        method, path, body = exchange
        return f"{method} https://firebasestorage.googleapis.com{path}" + (f"\n{body.decode()}" if body else "")

    for command in ("ls -n 2 wire", "ls wire/sub"):
        explanation = explained(command)[0]["firebaseREST"]
        listings = [exchange for exchange in sent_signed_in(command) if exchange[0] == "GET" and "/v0/" in exchange[1]]
        assert as_firebase(listings[0]) == explanation
    command = "meta set cacheControl=max-age=90 custom.k=signed -- wire/c.txt"
    explanation = explained(command)[-1]["firebaseREST"]
    patches = [exchange for exchange in sent_signed_in(command) if exchange[0] == "PATCH"]
    assert [as_firebase(exchange) for exchange in patches] == [explanation]
    command = "rm wire/sub/d.txt"
    explanation = explained(command)[-1]["firebaseREST"]
    deletes = [exchange for exchange in sent_signed_in(command) if exchange[0] == "DELETE"]
    assert [as_firebase(exchange) for exchange in deletes] == [explanation]

    # Deletes, of an object a pattern found and of one named: each only as it was read.
    for command in ("rm wire/c*", "rm wire/up.txt"):
        explanation = explained(command)[-1]["cloudStorageREST"]
        deletes = [exchange for exchange in sent(command) if exchange[0] == "DELETE"]
        assert [as_explained(exchange) for exchange in deletes] == [explanation]
        assert "ifGenerationMatch=" in explanation
