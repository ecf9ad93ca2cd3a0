"""Long work says how far it has come (issue 52): on a terminal, standard error shows a progress line with the
count, its thousands grouped, the rate and, when the total is known, the time left; it goes when the work ends,
and never shows with --quiet or when standard error is not a terminal."""
import json
import re

import pexpect

import harness
from serving import BUCKET, Server


def seeded_server(tmp_path, count):
    bucket = tmp_path / "served.bucket"
    # Each answer waits 5 ms, as a distant service's would: planning and applying take a few seconds.
    server = Server(tmp_path, bucket, name=BUCKET, extra=("--latency", "5"))
    archive = tmp_path / "seed.json"
    archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1,
                                   "objects": [{"name": f"p/{index:05}.txt", "text": "x"} for index in range(count)]}))
    # Into the served file (the shell may share it with the server).
    status, _, err = harness.storesh(tmp_path, "import", "--bucket", str(bucket), str(archive))
    assert status == 0, err.decode()
    return server


def test_a_long_edit_on_a_real_bucket_shows_its_progress_on_a_terminal(tmp_path):
    server = seeded_server(tmp_path, 600)
    try:
        env = harness.environment(tmp_path, STORAGE_EMULATOR_HOST=server.url, TERM="xterm")
        child = pexpect.spawn(harness.BINARY, ["--bucket", f"gs://{BUCKET}", "--summary", "--parallel", "4", "--batch", "1",
                                               "-c", "meta set custom.k=v -- p/*"],
                              env=env, encoding="utf-8", timeout=120, dimensions=(24, 80))
        child.expect(pexpect.EOF)
        shown = child.before
        child.close()
        assert child.exitstatus == 0, shown
        # The plan is made (a line a second's worth in), then applied with the total known.
        applying = re.findall(r"applying ([\d,]+) of 600 · ([\d,]+)/s(?: · (\d+ s|\d+ min \d+ s) left)?", shown)
        assert applying, shown[-2000:]
        assert "updated 600 objects, 0 unchanged" in shown
        # Every progress line fits the terminal, and the last one was cleared (it is drawn over itself).
        for line in re.split(r"[\r\n]", shown):
            if "applying" in line:
                assert len(line.replace("\x1b[K", "")) < 80, line
    finally:
        assert server.stop()[0] == 0


def test_no_progress_with_quiet_or_when_standard_error_is_not_a_terminal(tmp_path):
    server = seeded_server(tmp_path, 300)
    try:
        env = dict(STORAGE_EMULATOR_HOST=server.url)
        status, _, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--summary", "-c", "meta set custom.k=w -- p/*",
                                         **env)
        assert status == 0 and "applying" not in err.decode() and "\r" not in err.decode(), err.decode()
        child = pexpect.spawn(harness.BINARY, ["--bucket", f"gs://{BUCKET}", "--quiet", "--summary", "-c",
                                               "meta set custom.k=q -- p/*"],
                              env=harness.environment(tmp_path, TERM="xterm", **env), encoding="utf-8", timeout=120)
        child.expect(pexpect.EOF)
        assert "applying" not in child.before
        child.close()
    finally:
        assert server.stop()[0] == 0


def test_import_export_check_and_a_journals_reading_show_progress_on_a_terminal(tmp_path):
    """Issue 52: import, export, check and reading a journal (undo spent 30 s silent on one) are long work too."""
    archive = tmp_path / "seed.json"
    archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1,
                                   "objects": [{"name": f"p/{index:06}.txt", "text": "x"} for index in range(200_000)]}))
    bucket = tmp_path / "big.bucket"

    def on_terminal(*arguments):
        child = pexpect.spawn(harness.BINARY, list(arguments), env=harness.environment(tmp_path, TERM="xterm"),
                              encoding="utf-8", timeout=300, dimensions=(24, 80))
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before[-2000:]
        return child.before

    shown = on_terminal("import", "--bucket", str(bucket), str(archive))
    assert re.search(r"importing [\d,]+ of 200,000 · [\d,]+/s", shown), shown[-2000:]
    assert "imported 200,000 objects" in " ".join(shown.split())
    shown = on_terminal("export", "--bucket", str(bucket), str(tmp_path / "out.json"))
    assert re.search(r"exporting [\d,]+ of 200,000 · [\d,]+/s", shown), shown[-2000:]
    shown = on_terminal("check", "--bucket", str(bucket))
    # The report wraps between words to the terminal, as everything people read does.
    assert re.search(r"checking [\d,]+ objects · [\d,]+/s", shown) and "sound (200,000 objects" in " ".join(shown.split()), shown[-2000:]
    # Every progress line fits the terminal and is drawn over itself.
    for line in re.split(r"[\r\n]", shown):
        assert len(line.replace("\x1b[K", "")) <= 80, line
    # Not on a terminal: nothing but the result.
    status, out, err = harness.storesh(tmp_path, "check", "--bucket", str(bucket))
    assert status == 0 and "checking" not in err.decode() and "\r" not in err.decode()
