"""Teaching with storesh, through the built binary: transcripts (`run --echo`), a reproducible clock that never dates
a change before one the bucket holds, `run --explain`, and `--trace`."""
import json
import re
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
import harness  # noqa: E402

CLOCK = "2026-11-21T09:30:00Z"


def test_run_echo_prints_each_command_after_its_prompt_before_its_output(tmp_path):
    lesson = tmp_path / "lesson.store"
    lesson.write_text('echo "Pages and tokens"\ncd lessons/paging; ls -n 2\nmeta get \\\n    ../paging/c\n')
    status, out, err = harness.storesh(tmp_path, "--quiet", "--clock", CLOCK, "run", "--echo", str(lesson))
    assert status == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == 'gs://teaching/> echo "Pages and tokens"' and lines[1] == "Pages and tokens"
    assert lines[2] == "gs://teaching/> cd lessons/paging"
    assert lines[3] == "gs://teaching/lessons/paging> ls -n 2"
    assert "gs://teaching/lessons/paging> meta get ../paging/c" in lines  # a continued line reads as one
    # The same lesson on a fresh bucket gives the same transcript, byte for byte.
    again = tmp_path / "again"
    again.mkdir()
    status, second, _ = harness.storesh(again, "--quiet", "--clock", CLOCK, "run", "--echo", str(lesson))
    assert status == 0 and second == out
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--json", "run", "--echo", str(lesson))
    assert json.loads(out.decode().splitlines()[0]) == {"command": 'echo "Pages and tokens"', "at": "gs://teaching/"}


def test_a_clock_before_the_buckets_latest_change_moves_past_it(tmp_path):
    bucket = str(tmp_path / "b.bucket")
    status, _, err = harness.storesh(tmp_path, "--bucket", bucket, "--clock", "2026-11-21T09:30:00Z", "-c", "put --data x a.txt")
    assert status == 0, err.decode()
    status, out, err = harness.storesh(tmp_path, "--bucket", bucket, "--clock", "2020-01-01T00:00:00Z", "-c",
                                       "meta set contentLanguage=en a.txt; meta get a.txt")
    assert status == 0, err.decode()
    assert "the bucket's latest change is at 2026-11-21T09:30:00.000Z, after the --clock time" in err.decode()
    status, out, _ = harness.storesh(tmp_path, "--bucket", bucket, "--json", "-c", "meta get a.txt")
    metadata = json.loads(out)
    assert metadata["timeCreated"] == "2026-11-21T09:30:00.000Z" and metadata["updated"] == "2026-11-21T09:30:00.001Z"


def test_run_explain_explains_every_command_and_changes_nothing(tmp_path):
    script = tmp_path / "fix.store"
    script.write_text("cd images\nmeta set cacheControl=no-cache -- *.jpg\nrm forest.jpg\n")
    status, out, err = harness.storesh(tmp_path, "--quiet", "--json", "run", "--explain", str(script))
    assert status == 0, err.decode()
    documents = [json.loads(line) for line in out.decode().splitlines()]
    assert [d["explain"] for d in documents] == ["line 1: cd", "line 2: meta set", "line 3: rm"]
    assert documents[2]["requests"][0]["swift"] == 'try await storage.reference().child("images/forest.jpg").delete()'
    assert documents[1]["requests"][-1]["rulesMethod"] == "update"
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--json", "-c", "meta get images/forest.jpg")
    assert status == 0 and json.loads(out)["cacheControl"] != "no-cache"  # still there, and unchanged


def test_reset_brings_the_default_bucket_back_to_the_sample_with_open_rules(tmp_path):
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c",
                                     "rm images/forest.jpg; put --data x new.txt; rules load --sample owner-only; snapshot save before")
    assert status == 0, err.decode()
    status, _, err = harness.storesh(tmp_path, "reset")
    assert status == 0 and "reset the default bucket gs://teaching to the teaching sample" in err.decode()
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "ls images; ls new.txt; rules show; snapshot list")
    text = out.decode()
    assert "forest.jpg" in text and "(nothing under gs://teaching/new.txt)" in text
    assert "# the open rules of a new bucket" in text and "before" in text  # snapshots are kept
    # The same as a new default bucket, object for object.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    exports = [harness.storesh(home, "--quiet", "export")[1] for home in (tmp_path, fresh)]
    names = [[o["name"] for o in json.loads(e)["objects"]] for e in exports]
    assert names[0] == names[1]


def test_reset_of_another_bucket_file_asks_first(tmp_path):
    import pexpect
    bucket = str(tmp_path / "class.bucket")
    harness.storesh(tmp_path, "--bucket", bucket, "-c", "put --data x a.txt; put --data y b.txt")
    status, _, err = harness.storesh(tmp_path, "reset", "--bucket", bucket, stdin=b"")
    assert status == 2 and "Give --yes" in err.decode()
    shell = pexpect.spawn(harness.BINARY, ["reset", "--bucket", bucket], env=harness.environment(tmp_path), timeout=30)
    shell.expect_exact("delete its 2 objects and put back the open rules? Type yes to go on: ")
    shell.sendline("no")
    shell.expect_exact("nothing was changed.")
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 1
    shell = pexpect.spawn(harness.BINARY, ["reset", "--bucket", bucket], env=harness.environment(tmp_path), timeout=30)
    shell.expect_exact("Type yes to go on: ")
    shell.sendline("yes")
    shell.expect_exact("emptied gs://class (2 objects deleted)")
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 0
    assert harness.storesh(tmp_path, "--bucket", bucket, "-c", "ls")[1] == b"(nothing under gs://class/)\n"


def test_sample_rules_are_built_in_and_rules_reset_opens_the_bucket_again(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "rules load --sample version1; rules show")
    assert status == 0, err.decode()
    # The text of samples/rules/version1.rules, from inside the binary.
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "samples", "rules", "version1.rules")) as sample:
        assert sample.read() in out.decode()
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c", "ls")
    assert status == 1 and "rules_version" in err.decode()  # rule L12: no listing under version 1
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c", "rules load --sample ownr-only")
    assert status == 1 and "did you mean owner-only?" in err.decode()
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "rules reset; ls")
    assert status == 0 and "correctPrefix/" in out.decode(), err.decode()


def test_changes_are_printed_old_to_new_and_a_long_plan_ends_with_a_summary(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "meta set contentLanguage=en -- images/*.jpg")
    assert status == 0, err.decode()
    assert out.decode().splitlines()[:2] == ["images/forest.jpg", '  contentLanguage  (not set)  →  "en"']
    # Past a screenful: one line per object, then the summary grouped by change, then the count.
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "meta set cacheControl=x -- files/uid/*")
    lines = out.decode().splitlines()
    assert re.fullmatch(r"files/uid/file-\d{3}\.\w+  cacheControl .* → \"x\"", lines[0]), lines[0]
    assert lines[-6:] == ["summary, by change:",
                          '  cacheControl: "no-cache" → "x": 75 objects',
                          '  cacheControl: "private, max-age=0" → "x": 75 objects',
                          '  cacheControl: "public, max-age=3600" → "x": 75 objects',
                          '  cacheControl: (not set) → "x": 75 objects',
                          "updated 300 objects, 0 unchanged"]
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--summary", "-c", "meta set cacheControl=y -- files/uid/*")
    assert out.decode().splitlines() == ["summary, by change:", '  cacheControl: "x" → "y": 300 objects', "updated 300 objects, 0 unchanged"]


def test_dry_run_with_c_and_standard_input_saves_nothing(tmp_path):
    before = harness.storesh(tmp_path, "--quiet", "export")[1]
    status, out, err = harness.storesh(tmp_path, "--quiet", "--dry-run", "-c", "meta set cacheControl=z -- images/*.jpg; rm docs/readme.md")
    assert status == 0, err.decode()
    assert "would update" in out.decode() and "would delete docs/readme.md" in out.decode()
    assert out.decode().splitlines()[-1] == "dry run: nothing was saved"
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--dry-run", stdin=b"put --data x new.txt\n")
    assert status == 0 and "would write new.txt" in out.decode()
    # In a script, `dry-run COMMAND` makes the whole script a dry run.
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "put --data x other.txt; dry-run rm docs/readme.md")
    assert status == 0 and "would write other.txt" in out.decode() and "would delete docs/readme.md" in out.decode()
    assert harness.storesh(tmp_path, "--quiet", "export")[1] == before


def test_a_failed_script_says_its_reported_changes_were_undone(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "meta set cacheControl=z -- images/*.jpg\nrm nothing/here")
    assert status == 1
    assert "updated 1 object" in out.decode() or "updated images/forest.jpg" in out.decode()
    assert "nothing was saved: a script lands whole or not at all; the 1 change reported above was undone" in err.decode()
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--json", "-c", "meta get images/forest.jpg")
    assert json.loads(out)["cacheControl"] != "z"


def test_typos_are_met_with_the_likely_name(tmp_path):
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "ls imagse; cd imagse; cd /images/forest.jpg")
    assert status == 0
    assert out.decode().splitlines() == [
        "(nothing under gs://teaching/imagse) — did you mean images?",
        "(nothing under gs://teaching/imagse yet; did you mean images?)",
        "(gs://teaching/images/forest.jpg is an object, not a folder: nothing is under it)",
    ]
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c", "meta get images/mountains/sumit.jpg")
    assert status == 1 and "Object images/mountains/sumit.jpg does not exist. Did you mean images/mountains/summit.jpg?" in err.decode()
    status, _, err = harness.storesh(tmp_path, "--bucket", str(tmp_path / "teaching"), "-c", "ls")
    assert status == 0
    assert "created an empty bucket gs://teaching" in err.decode() and "the default bucket, with the teaching sample, is used without --bucket" in err.decode()


def test_targets_chosen_by_metadata_meta_get_of_a_pattern_and_meta_rename(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "--json", "-c",
                                       "meta get --where contentType=image/png images/** files/bob/*")
    assert status == 0, err.decode()
    assert [json.loads(line)["fullPath"] for line in out.decode().splitlines()] == ["images/lake.png", "files/bob/avatar.png"]
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--json", "-c", "meta get --where 'custom.activity exists' images/**")
    assert [json.loads(line)["fullPath"] for line in out.decode().splitlines()] == ["images/forest.jpg", "images/mountains/summit.jpg"]
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c",
                                       "meta set cacheControl=no-cache --where contentType!=image/jpeg -- images/**")
    assert status == 0 and "updated images/lake.png" in out.decode(), err.decode()
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "rm --where size=0 images/**")
    assert "(no target passes --where size=0: nothing to do)" in out.decode() and "deleted 0 objects" in out.decode()
    # meta rename moves a key, keeping each object's value; objects without it are left alone.
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "meta rename custom.location custom.place -- images/**")
    assert status == 0, err.decode()
    assert 'custom.place     (not set)              →  "Yosemite, CA, USA"' in out.decode() or "custom.place" in out.decode()
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--json", "-c", "meta get images/forest.jpg images/lake.png")
    documents = [json.loads(line) for line in out.decode().splitlines()]
    assert documents[0]["customMetadata"] == {"activity": "Hiking", "place": "Yosemite, CA, USA"}
    assert documents[1]["customMetadata"] == {"place": "Lake Tahoe, CA, USA"}
    # A rename that would overwrite another value is refused; nothing changes.
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c", "meta rename custom.activity custom.place -- images/forest.jpg")
    assert status == 1 and "has custom.place already" in err.decode()


def test_explain_applies_where_and_leaves_out_objects_an_update_would_not_change(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "explain rm --where 'custom.activity exists' images/**")
    assert status == 0, err.decode()
    text = out.decode()
    assert "keep the objects whose metadata pass --where custom.activity exists: 2 of 5" in text
    assert 'storage.reference().child("images/forest.jpg").getMetadata()' in text  # the SDK reads to filter
    assert "delete images/forest.jpg — and the same for 1 other object" in text
    # One folder's pattern is one listing, not a walk of every folder.
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "explain meta set cacheControl=x -- images/*.jpg")
    assert 'storage.reference().child("images").listAll()' in out.decode() and "every folder" not in out.decode()
    # An update that would change nothing makes no request.
    harness.storesh(tmp_path, "--quiet", "-c", "meta set cacheControl=same -- images/forest.jpg")
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "explain meta set cacheControl=same -- images/**")
    assert "— and the same for each of the 3 other objects; 1 more is already as asked: storesh sends it no request" in out.decode()


def test_a_folder_of_hidden_names_points_at_them_not_at_itself(tmp_path):
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "ls wrongPrefix; cd lonelyItem")
    assert status == 0
    lines = out.decode().splitlines()
    assert "did you mean" not in out.decode()
    assert lines[0].startswith("(nothing under gs://teaching/wrongPrefix) — it holds wrongPrefix//sadItem")
    assert "meta get --raw 'lonelyItem/' shows it" in lines[1]


def test_reset_of_the_default_bucket_by_its_path_brings_the_sample_back(tmp_path):
    harness.storesh(tmp_path, "--quiet", "-c", "rm images/forest.jpg")
    default = str(tmp_path / "data" / "storesh" / "default.bucket")
    status, _, err = harness.storesh(tmp_path, "reset", "--bucket", default, stdin=b"")
    assert status == 0 and "to the teaching sample" in err.decode(), err.decode()
    assert b"forest.jpg" in harness.storesh(tmp_path, "--quiet", "-c", "ls images")[1]


def test_keep_going_with_c_and_help_by_subcommand_or_sdk_name(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "--keep-going", "-c", "echo one; put --data x kept.txt; rm nothing/here")
    # Only commands that change the bucket are counted among those whose changes were saved (not echo).
    assert status == 1 and "the changes of the other command that changes the bucket were saved" in err.decode(), err.decode()
    assert b"kept.txt" in harness.storesh(tmp_path, "--quiet", "-c", "ls")[1]
    status, out, _ = harness.storesh(tmp_path, "--quiet", "-c", "help token")
    assert status == 0 and out.decode().startswith("usage: page token")
    # `token` alone is the second word of `page token`: said so, as `help` lists it under page.
    status, _, err = harness.storesh(tmp_path, "--quiet", "-c", "token AAAA")
    assert status == 2 and "unknown command 'token'; did you mean 'page token'?" in err.decode(), err.decode()
    status, out, _ = harness.storesh(tmp_path, "help", "listAll")
    assert status == 0 and out.decode().startswith("usage: ls")
    status, _, err = harness.storesh(tmp_path, "help", "lsit")
    assert status == 2 and "no subcommand, command or topic" in err.decode()


def test_explain_says_when_a_named_object_does_not_exist(tmp_path):
    status, out, err = harness.storesh(tmp_path, "--quiet", "-c", "explain meta set cacheControl=x -- images/nosuch.png")
    assert status == 0, err.decode()
    assert "images/nosuch.png does not exist: the request would fail with object-not-found." in out.decode()


def test_a_dry_run_session_says_nothing_was_saved_only_where_something_could_have_been(tmp_path):
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--dry-run", "-c", "ls docs")
    assert status == 0 and "nothing was saved" not in out.decode()
    status, out, _ = harness.storesh(tmp_path, "--quiet", "--dry-run", "-c", "rm docs/readme.md")
    assert status == 0 and out.decode().splitlines()[-1] == "dry run: nothing was saved"
