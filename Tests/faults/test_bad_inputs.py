"""A catalogue of bad inputs, run end to end through the built storesh.

Each gets its error, where it was found (FILE:LINE:COLUMN for the language, `storesh: error:` for the
command line), its code and its exit status, and leaves the bucket file byte for byte as it was (and so
logically unchanged too).
"""
import json
import os
import re

import pytest

from harness import digest, export, storesh, teaching_bucket

LONG_NAME = "n" * 1025
BIG_VALUE = "v" * 8200
FOLDER_TOKEN = "AQF0B2ltYWdlcy8AEWltYWdlcy9mb3Jlc3QuanBnhvlIEw"  # a real token of `ls -n 1 images`

# (case, script for -c (str or bytes) or ["argv", ...], exit status, "LINE:COLUMN" or None, code, phrase)
CASES = [
    # Paths and object names (rules P)
    ("name over 1024 bytes", f"put --data x {LONG_NAME}", 1, "1:14", "invalid-argument", "1024 bytes"),
    ("LF in a name", 'put --data x "a\\nb"', 1, "1:14", "invalid-argument", "line feed"),
    ("CR in a name", 'put --data x "a\rb"', 1, "1:14", "invalid-argument", "carriage return"),
    ("invalid UTF-8 in -c", b"ls \xff\xfe", 2, "1:4", "syntax-error", "UTF-8"),
    ("name of another bucket", "meta get gs://elsewhere/images/forest.jpg", 1, "1:10", "bucket-mismatch", "elsewhere"),
    ("gs:// without a bucket", "ls gs://", 1, "1:4", "invalid-argument", "needs a bucket name"),
    ("the root is not an object", "meta get /", 1, "1:10", "invalid-argument", "not an object"),
    ("missing object", "meta get images/forest.jpeg", 1, "1:10", "object-not-found", "images/forest.jpeg"),
    ("cat a folder", "cat images", 1, "1:5", "object-not-found", "images"),
    ("get a missing object", "get nothing/here /tmp/x", 1, "1:5", "object-not-found", "nothing/here"),
    ("rm a missing object", "rm images/forest.jpeg", 1, "1:4", "object-not-found", "images/forest.jpeg"),
    ("ls a pattern", "ls images/*", 1, "1:4", "invalid-argument", "not a pattern"),
    ("cd a pattern", "cd images/**", 1, "1:4", "invalid-argument", "not a pattern"),
    ("put to a pattern", "put --data x images/*", 1, "1:14", "invalid-argument", "is a pattern"),
    ("put into a pattern's folder", "put --data x images/*/", 1, "1:14", "invalid-argument", "is a pattern"),
    ("cat a pattern", "cat images/*.jpg", 1, "1:5", "invalid-argument", "is a pattern"),
    ("get a pattern", "get images/*.jpg /tmp/", 1, "1:5", "invalid-argument", "is a pattern"),
    # Metadata keys and values (rules M)
    ("read-only md5Hash", "meta set md5Hash=abc -- images/forest.jpg", 2, "1:10", "invalid-argument", "md5Hash"),
    ("read-only generation", "meta set generation=5 -- images/forest.jpg", 2, "1:10", "invalid-argument", "generation"),
    ("read-only metageneration", "meta set metageneration=9 -- images/forest.jpg", 2, "1:10", "invalid-argument", "metageneration"),
    ("read-only size", "meta set size=1 -- images/forest.jpg", 2, "1:10", "invalid-argument", "size"),
    ("read-only bucket", "meta set bucket=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "bucket"),
    ("read-only fullPath", "meta set fullPath=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "fullPath"),
    ("read-only name", "meta set name=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "name"),
    ("read-only timeCreated", "meta set timeCreated=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "timeCreated"),
    ("read-only updated", "meta set updated=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "updated"),
    ("unset read-only md5Hash", "meta unset md5Hash -- images/forest.jpg", 2, "1:12", "invalid-argument", "md5Hash"),
    ("misspelt key", "meta set contentTyp=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "contentType"),
    ("a value's blank unquoted", "meta set cacheControl=public, max-age=60 -- images/forest.jpg", 2, "1:31",
     "invalid-argument", 'quoted: cacheControl="public, max-age=60"'),
    ("rename a key onto itself", "meta rename custom.activity custom.activity images/forest.jpg", 2, "1:29", "syntax-error",
     "the same"),
    ("an option among targets", "rm images/forest.jpg --force", 2, "1:22", "syntax-error", "no option '--force'"),
    ("empty custom key", "meta set custom.=x -- images/forest.jpg", 2, "1:10", "invalid-argument", "custom"),
    ("custom metadata over 8 KiB", f"meta set custom.big={BIG_VALUE} -- images/forest.jpg", 1, "1:8225", "invalid-argument", "8192"),
    ("meta set without assignments", "meta set -- images/forest.jpg", 2, "1:10", "syntax-error", "KEY=VALUE"),
    ("unknown meta subcommand", "meta sett contentType=x", 2, "1:6", "syntax-error", "meta set"),
    # Listing and page tokens (rules L)
    ("maxResults 0", "ls -n 0 images", 1, "1:7", "invalid-argument", "maxResults"),
    ("maxResults 1001", "ls -n 1001 images", 1, "1:7", "invalid-argument", "maxResults"),
    ("maxResults negative", "ls -n -1 images", 1, "1:7", "invalid-argument", "maxResults"),
    ("maxResults not a number", "ls -n ten images", 2, "1:7", "syntax-error", "-n"),
    ("maxResults missing", "ls -n", 2, "1:7", "syntax-error", "-n"),
    ("forged page token", "ls --token AAAAforged images", 1, "1:12", "invalid-argument", "token"),
    ("page token of another folder", f"ls --token {FOLDER_TOKEN} docs", 1, "1:12", "invalid-argument", "token"),
    ("page next without a listing", "page next", 1, "1:1", "invalid-argument", "no listing to continue"),
    ("unknown ls option", "ls --al", 2, "1:4", "syntax-error", "--all"),
    # Patterns (contract, Paths and patterns)
    ("pattern matching nothing in meta set", "meta set custom.k=v -- nothing/**", 1, "1:24", "object-not-found", "nothing/**"),
    ("pattern matching nothing in rm", "rm images/*.gif", 1, "1:4", "object-not-found", "images/*.gif"),
    ("pattern matching nothing in unset", "meta unset custom.k -- docs/*.xls", 1, "1:24", "object-not-found", "docs/*.xls"),
    ("unclosed set in a pattern", "rm images/[ab", 1, "1:4", "invalid-argument", "without its closing ']'"),
    ("second target missing: whole command undone", "meta set contentType=x -- images/forest.jpg images/none.jpg", 1, "1:45", "object-not-found", "images/none.jpg"),
    # Commands and lexing
    ("unknown command", "lss images", 2, "1:1", "syntax-error", "did you mean 'ls'"),
    ("unknown command, no suggestion", "frobnicate", 2, "1:1", "syntax-error", "help"),
    ("unterminated single quote", "ls 'images", 2, "1:4", "syntax-error", "quote"),
    ("unterminated double quote", 'meta set contentType="text -- images/forest.jpg', 2, "1:22", "syntax-error", "quote"),
    ("unknown escape", 'echo "a\\qb"', 2, "1:8", "syntax-error", "escape"),
    ("extra word after exit", "exit now", 2, "1:6", "syntax-error", "exit"),
    ("help for no command", "help frob", 2, "1:6", "syntax-error", "frob"),
    ("syntax error on line 3 runs nothing", "put --data x new\nrm docs/readme.md\nls --bogus", 2, "3:4", "syntax-error", "--bogus"),
    ("runtime error on line 3 undoes lines 1-2", "put --data x new\nrm docs/readme.md\nmeta get none", 1, "3:10", "object-not-found", "none"),
    # put
    ("put a missing local file", "put /nonexistent/file x", 1, "1:5", "invalid-argument", "/nonexistent/file"),
    ("put --md5 not base64", "put --md5 nope --data x a", 1, "1:11", "invalid-argument", "--md5"),
    ("put --md5 mismatch", "put --md5 XUFAKrxLKna5cZ2REBfFkg== --data x a", 1, "1:45", "non-matching-checksum", "MD5"),
    ("put --content-type without a value", "put --data x a --content-type", 2, "1:31", "syntax-error", "--content-type"),
    # Snapshots and rules
    ("unknown snapshot", "snapshot restore nope", 1, "1:18", "invalid-argument", "No snapshot named"),
    ("taken snapshot name", "snapshot save taken", 1, "1:15", "invalid-argument", "already exists"),
    ("invalid snapshot name", "snapshot save 'a b'", 2, "1:15", "invalid-argument", "not a snapshot name"),
    ("snapshot without subcommand", "snapshot", 2, "1:10", "syntax-error", "subcommand"),
    ("rules from a missing file", "rules load /nonexistent.rules", 1, "1:12", None, "/nonexistent.rules"),
    # The command line
    ("--bucket without a value", ["--bucket"], 2, None, None, "--bucket"),
    ("--clock that is no time", ["--clock", "yesterday", "-c", "ls"], 2, None, None, "clock"),
    ("unknown option", ["--frob"], 2, None, None, "--frob"),
    ("run without a file", ["run"], 2, None, None, "file"),
    ("run a missing file", ["run", "/nonexistent.store"], 2, None, None, "/nonexistent.store"),
    ("run --snapshot with an invalid name", ["run", "--snapshot", "a/b", "/dev/null"], 2, None, None, "snapshot name"),
    ("a language command as an argument", ["ls"], 2, None, None, "-c"),
]


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    home = tmp_path_factory.mktemp("catalogue")
    path = teaching_bucket(home)
    status, _, err = storesh(home, "--bucket", path, "-c", "snapshot save taken")
    assert status == 0, err
    return home, path, export(home, path)


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 50


@pytest.mark.parametrize("case, script, status, position, code, phrase", CASES, ids=[case[0] for case in CASES])
def test_bad_input(bucket, case, script, status, position, code, phrase):
    home, path, exported = bucket
    before = digest(path)
    if isinstance(script, list):
        result = storesh(home, "--bucket", path, *script)
    else:
        result = storesh(home, "--bucket", path, "-c", script)
    got_status, out, err = result
    text = err.decode("utf-8", "replace")
    assert got_status == status, f"exit {got_status}: {text}"
    if status:
        first = text.splitlines()[0] if text else ""
        if position:
            assert first.startswith(f"-c:{position}: error: "), first
        elif isinstance(script, list):
            assert first.startswith("storesh: error: ") or first.startswith("Error: "), first
        if code:
            assert first.endswith(f"({code})"), first
        if phrase:
            assert phrase in text, text
    assert digest(path) == before, "the bucket file changed"
    assert export(home, path) == exported


def test_errors_in_json_carry_code_and_position(bucket):
    home, path, _ = bucket
    status, out, err = storesh(home, "--bucket", path, "--json", "-c", "cd images\nmeta get none.jpg")
    assert status == 1 and out == b""
    document = json.loads(err.decode().splitlines()[0])
    assert document == {"error": {"code": "object-not-found", "message": document["error"]["message"], "line": 2,
                                  "column": 10}}
    assert re.search(r"images/none\.jpg", document["error"]["message"])


@pytest.mark.parametrize("command", ["apply", "undo"])
def test_a_plan_or_journal_that_is_not_a_bounded_regular_file_is_refused_at_once(tmp_path, command):
    """Issue 36: /dev/zero, a FIFO with no writer, and a header followed by a line longer than any plan's are refused
    with a clear error, in bounded time and memory, and nothing changes."""
    bucket = str(tmp_path / "b.bucket")
    status, _, err = storesh(tmp_path, "--bucket", bucket, "--dry-run", "--plan", str(tmp_path / "real.plan"), "-c",
                             "put --data x a")
    assert status == 0, err
    header = (tmp_path / "real.plan").read_bytes().split(b"\n")[0] + b"\n"
    fifo = tmp_path / "fifo.plan"
    os.mkfifo(fifo)
    long_line = tmp_path / "long.plan"
    with open(long_line, "wb") as file:
        file.write(header)
        file.write(b"x" * (5 << 20))
    for path, phrase in [("/dev/zero", "is a character device, not a regular file"),
                         (str(fifo), "is a pipe (FIFO), not a regular file"),
                         (str(long_line), "line 2 is longer than 4 MiB")]:
        status, _, err = storesh(tmp_path, "--bucket", bucket, command, path, timeout=30)
        assert status != 0 and phrase in err.decode(), (path, err.decode())
    assert export(tmp_path, bucket) == {}, "nothing was applied"


def test_rules_load_of_a_device_or_a_fifo_is_refused(tmp_path):
    bucket = str(tmp_path / "b.bucket")
    fifo = tmp_path / "fifo.rules"
    os.mkfifo(fifo)
    for path, phrase in [("/dev/zero", "character device"), (str(fifo), "pipe (FIFO)")]:
        status, _, err = storesh(tmp_path, "--bucket", bucket, "-c", f"rules load {path}", timeout=30)
        assert status == 1 and phrase in err.decode(), err.decode()
