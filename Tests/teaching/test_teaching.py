"""Teaching with storesh, through the built binary: transcripts (`run --echo`), a reproducible clock that never dates
a change before one the bucket holds, `run --explain`, and `--trace`."""
import json
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
