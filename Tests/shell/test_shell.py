"""The interactive shell in a real pseudo-terminal: what a person at a terminal does and sees.

Each test waits for what the shell prints (pexpect), never for a fixed time. STORESH_BINARY names the
binary under test (scripts/test sets it).
"""
import json
import os
import re
import signal
import subprocess

import pexpect
import pytest

BINARY = os.path.abspath(os.environ.get("STORESH_BINARY", ".build/debug/storesh"))
UP = "\x1b[A"
CTRL_A, CTRL_C, CTRL_D, CTRL_R = "\x01", "\x03", "\x04", "\x12"


def environment(home, **extra):
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TERM": "xterm", "LANG": "C.UTF-8", "NO_COLOR": "1"}
    env.update(extra)
    return {key: value for key, value in env.items() if value is not None}


def start(home, *arguments, rows=30, columns=100, encoding="utf-8", **extra):
    child = pexpect.spawn(BINARY, list(arguments), env=environment(home, **extra), encoding=encoding,
                          timeout=30, dimensions=(rows, columns))
    # The greeting wraps between words on a narrow terminal.
    child.expect(r"Ctrl-D\s+leaves" if encoding else rb"Ctrl-D\s+leaves")
    return child


def prompt(child, path="gs://teaching/"):
    child.expect_exact(f"{path}> ")


def run(child, line, path="gs://teaching/"):
    child.send(line + "\r")
    prompt(child, path)
    return child.before


def leave(child):
    child.send(CTRL_D)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def make_bucket(home, name, object_names):
    """A bucket file NAME.bucket holding empty objects with these names, made with `storesh import`."""
    bucket = str(home / f"{name}.bucket")
    archive = home / f"{name}.json"
    archive.write_text(json.dumps({"format": "storesh-bucket", "version": 1,
                                   "objects": [{"name": object_name} for object_name in object_names]}))
    subprocess.run([BINARY, "import", "--bucket", bucket, str(archive)], env=environment(home), check=True,
                   capture_output=True)
    return bucket


def export(home, bucket=None):
    arguments = [BINARY, "export"] + (["--bucket", bucket] if bucket else [])
    return subprocess.run(arguments, env=environment(home), capture_output=True, check=True).stdout


def test_typing_and_editing_a_line(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("wd" + CTRL_A + "p\r")  # emacs: Ctrl-A goes to the start of the line
    shell.expect_exact("gs://teaching/\r\n")
    prompt(shell)
    shell.send("pwdd\x7f\r")  # backspace
    shell.expect_exact("gs://teaching/\r\n")
    prompt(shell)
    output = run(shell, "echo héllo wörld ✓")  # multi-byte input
    assert "héllo wörld ✓\r\n" in output
    leave(shell)


# libedit redraws only what changed, so what Tab inserted is checked by its effect: the prompt the
# completed `cd` arrives at, or the output of the completed command.

def test_tab_completes_a_nested_path(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("cd ima\t")
    shell.send("mou\t")
    shell.send("\r")
    prompt(shell, "gs://teaching/images/mountains")
    shell.send("cd ../../do\t\r")  # .. and a path from the parent's parent
    prompt(shell, "gs://teaching/docs")
    shell.send("cat rea\t\r")
    shell.expect_exact("# Teaching bucket")
    prompt(shell, "gs://teaching/docs")
    leave(shell)


def test_tab_lists_the_choices_when_they_differ(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("ls images/\t")
    shell.expect_exact("mountains/")
    shell.expect_exact("thumbnails/")
    prompt(shell)  # the line is shown again after the list
    shell.send("\x15\r")  # Ctrl-U clears it
    prompt(shell)
    leave(shell)


def test_tab_completes_commands_and_metadata_keys(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("cd images/forest.jpg\r")
    prompt(shell, "gs://teaching/images/forest.jpg")
    shell.send("me\ts\tcustom.lo\t")  # the command, the subcommand, a custom key present on the object
    shell.send("Camp\r")
    shell.expect_exact("updated images/forest.jpg")
    prompt(shell, "gs://teaching/images/forest.jpg")
    shell.send("meta set cacheC\tno-cache\r")
    shell.expect_exact("updated images/forest.jpg")
    prompt(shell, "gs://teaching/images/forest.jpg")
    output = run(shell, "meta get", "gs://teaching/images/forest.jpg")
    assert "custom.location  Camp" in output and "cacheControl     no-cache" in output
    leave(shell)


def test_history_is_recalled_in_a_second_session(tmp_path):
    first = start(tmp_path)
    prompt(first)
    run(first, "echo remembered-line")
    run(first, "pwd")
    leave(first)
    history = (tmp_path / ".local/share/storesh/history").read_text()
    assert history == "echo remembered-line\npwd\n"

    second = start(tmp_path)
    prompt(second)
    second.send(UP + UP + "\r")
    second.expect_exact("remembered-line\r\n")
    prompt(second)
    second.send("echo rem" + CTRL_R + "\r")  # Ctrl-R: the last command starting with what is typed
    second.expect_exact("remembered-line\r\n")
    prompt(second)
    leave(second)
    # Deduplicated: the repeated command moved to the end once.
    assert (tmp_path / ".local/share/storesh/history").read_text() == "pwd\necho remembered-line\n"


def test_ctrl_c_at_the_prompt_clears_the_line(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("echo not-run")
    shell.expect_exact("not-run")
    shell.send(CTRL_C)
    shell.expect_exact("^C")
    prompt(shell)
    output = run(shell, "echo after")
    assert "after\r\n" in output and "not-run\r\n" not in output
    leave(shell)


def test_ctrl_c_cancels_a_long_command_and_saves_none_of_it(tmp_path):
    bucket = make_bucket(tmp_path, "big", (f"o/{index:06d}" for index in range(60000)))
    before = export(tmp_path, bucket)

    shell = start(tmp_path, "--bucket", bucket)
    prompt(shell, "gs://big/")
    shell.send("meta set custom.k=v -- o/**\r")
    shell.expect_exact("meta set custom.k=v -- o/**\r\n")  # the line is taken: the command is running
    shell.kill(signal.SIGINT)
    shell.expect_exact("(cancelled)")
    prompt(shell, "gs://big/")
    output = run(shell, "meta get o/000001", "gs://big/")
    assert "custom.k" not in output
    leave(shell)
    assert export(tmp_path, bucket) == before


def test_colour_on_a_terminal_and_never_with_no_color(tmp_path):
    coloured = start(tmp_path, NO_COLOR=None)
    coloured.expect_exact("\x1b[1;36mgs://teaching/\x1b[0m> ")
    coloured.send("ls\r")
    coloured.expect_exact("\x1b[1;34mcorrectPrefix/\x1b[0m")
    coloured.expect_exact("\x1b[0m> ")
    leave(coloured)

    plain = start(tmp_path)
    prompt(plain)
    output = run(plain, "ls")
    assert "\x1b[" not in output and "correctPrefix/" in output
    leave(plain)


def test_long_listings_stop_at_a_screenful_and_say_how_to_go_on(tmp_path):
    shell = start(tmp_path, rows=20)
    prompt(shell)
    output = run(shell, "ls files/uid")
    assert output.count("file-") == 17
    assert "… more: page next   token\u00a0" in output
    # The footer's token is there for a class to look at: `page token` says what it holds.
    output = run(shell, "page token")
    assert "listing     gs://teaching/files/uid" in output and "last entry  files/uid/file-017" in output
    output = run(shell, "page next")
    assert "file-018.csv" in output
    leave(shell)
    coloured = start(tmp_path, rows=20, NO_COLOR=None)
    coloured.expect_exact("\x1b[1;36mgs://teaching/\x1b[0m> ")
    coloured.send("ls files/uid\r")
    coloured.expect_exact("… more: page next   \x1b[2mtoken\u00a0")  # dimmed on a terminal
    coloured.expect_exact("\x1b[0m> ")
    leave(coloured)


def test_errors_point_at_the_typed_line(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("ls --al\r")
    shell.expect_exact("                   ^\r\nerror: `ls` has no option '--al'; did you mean '--all'? (syntax-error)")
    prompt(shell)
    leave(shell)


def test_pasted_binary_and_any_width_never_break_the_shell_or_the_bucket(tmp_path):
    start(tmp_path).close(force=True)  # creates the default bucket
    before = export(tmp_path)
    for columns in (10, 300):
        shell = start(tmp_path, columns=columns, encoding=None)
        # Every byte, control keys and escape sequences included, but Ctrl-Z (0x1A): it suspends the shell, as
        # in any terminal program, and `fg` resumes it.
        shell.send(bytes(byte for byte in range(256) if byte != 0x1A))
        shell.send(b"\xff\xfe\xc3(\x1b[99~\x1b[1;5D" * 20)
        shell.send(CTRL_C.encode())
        shell.expect_exact(b"> ")
        shell.send(b"echo still-here " + b"x" * 500 + b"\t\r")
        shell.expect_exact(b"still-here")
        shell.send(CTRL_C.encode())
        shell.send(CTRL_D.encode())
        shell.expect(pexpect.EOF)
        shell.close()
        assert shell.exitstatus == 0, f"{columns} columns: ended by signal {shell.signalstatus}"
    assert export(tmp_path) == before


def test_output_without_a_final_newline_keeps_the_screen_true(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    run(shell, "put --data x one-byte")
    shell.send("cat one-byte\r")
    shell.expect_exact("x\r\ngs://teaching/> ")  # a newline before the prompt, not `xgs://…`
    shell.send("echo abcdef\x1b[D\x1b[D\x1b[D\x7f\r")  # Left×3 and Backspace delete the c
    shell.expect_exact("abdef\r\n")
    prompt(shell)
    leave(shell)


def test_tab_inside_quotes_and_continued_lines(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    run(shell, "put --data spaced 'docs/a b.txt'")
    shell.send("cat 'docs/a\t\r")  # completed inside the quote, and the quote closed
    shell.expect_exact("spaced\r\ngs://teaching/> ")
    shell.send("echo one \\\r")
    shell.expect_exact("… ")
    shell.send("two\r")
    shell.expect_exact("one two\r\n")
    prompt(shell)
    leave(shell)


def test_broken_utf8_does_not_swallow_what_follows(tmp_path):
    shell = start(tmp_path, encoding=None)
    shell.expect_exact(b"> ")
    shell.send(b"echo [\xc3(]\r")
    shell.expect_exact("[\ufffd(]\r\n".encode())
    shell.send(b"echo x\xc3\r")  # a broken sequence right before Enter: one Enter is enough
    shell.expect_exact("x\ufffd\r\n".encode())
    shell.send(CTRL_D.encode())
    shell.expect(pexpect.EOF)


def test_tab_never_assumes_a_prefix_beyond_a_truncated_page(tmp_path):
    bucket = make_bucket(tmp_path, "many", [f"t/a{index:04d}" for index in range(200)] + ["t/a1000"])
    shell = start(tmp_path, "--bucket", bucket)
    prompt(shell, "gs://many/")
    shell.send("meta get t/\t")  # the first page holds a0000…a0199 only: inserting "a0" would shut out a1000
    shell.expect_exact("… and more: type more of the name to narrow it")
    shell.send("a1\t\r")
    shell.expect_exact("t/a1000\r\n")
    prompt(shell, "gs://many/")
    leave(shell)


def test_exit_after_a_failed_command_does_not_leave_and_leaving_closes_the_bucket(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    output = run(shell, "rm missing; exit")
    assert "Object missing does not exist." in output, "the rm failed, so the exit after it never ran"
    # The line changed nothing before it failed: there is nothing to take back, and nothing more is said.
    assert "nothing was saved" not in output
    output = run(shell, "put --data x kept.txt; rm missing")
    assert "nothing was saved: a line lands whole or not at all; the 1 change reported above was undone" in output
    output = run(shell, "echo still-here")
    assert "still-here\r\n" in output
    leave(shell)
    bucket = tmp_path / ".local" / "share" / "storesh" / "default.bucket"
    assert bucket.exists()
    assert [suffix for suffix in ("-wal", "-shm") if os.path.exists(str(bucket) + suffix)] == []


def test_a_backslash_in_a_comment_continues_nothing(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    output = run(shell, "echo ran # a note \\")
    assert "ran\r\n" in output and "… " not in output
    leave(shell)


def test_tab_does_not_change_what_rules_why_explains(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    run(shell, "meta get images/forest.jpg")
    shell.send("ls ima\t")
    shell.expect_exact("ges/")  # Tab listed images/ to complete the word
    shell.send("\x15")  # Ctrl-U drops the line
    output = run(shell, "rules why")
    assert "allowed get on gs://teaching/images/forest.jpg" in output, output
    leave(shell)


def test_ctrl_c_ends_a_put_that_reads_a_stream(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    shell = start(tmp_path)
    prompt(shell)
    for source in ("/dev/zero", str(fifo)):
        shell.send(f"put {source} streamed.bin\r")
        # The line is taken: the put is reading. (Where the echoed line reaches the terminal's last column the
        # terminal is sent a space and a backspace, which may fall inside the name: tmp_path's length varies.)
        shell.expect("(?: \x08)?".join(re.escape(character) for character in "streamed.bin") + r" ?\x08?\r\n")
        shell.kill(signal.SIGINT)
        shell.expect_exact("(cancelled)")  # while it reads, or just before it starts
        prompt(shell)
    output = run(shell, "ls streamed.bin")
    assert "(nothing under gs://teaching/streamed.bin)" in output
    leave(shell)


def test_the_shell_on_a_real_bucket_prompt_tab_and_changes(tmp_path):
    """gs:// at the prompt: the prompt names the bucket, Tab completes from pages read through a short-lived cache,
    and a change typed at the prompt is planned, applied with its precondition, and seen by the next line."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
    from serving import Server
    bucket = make_bucket(tmp_path, "served", ["photos/cat.jpg", "photos/dog.jpg", "docs/readme.txt"])
    server = Server(tmp_path, bucket, name="served")
    try:
        shell = start(tmp_path, "--bucket", "gs://served", STORAGE_EMULATOR_HOST=server.url,
                      XDG_STATE_HOME=str(tmp_path / "state"))
        prompt(shell, "gs://served/")
        shell.send("cd pho\t\r")
        prompt(shell, "gs://served/photos")
        output = run(shell, "meta set custom.k=v -- c\t", "gs://served/photos")
        assert "updated photos/cat.jpg" in output
        output = run(shell, "meta get cat.jpg", "gs://served/photos")
        assert "custom.k" in output and "metageneration  2" in output
        output = run(shell, "whoami", "gs://served/photos")
        assert "Bearer owner" in output
        # Rule F1 at the prompt: an ID token is a credential, and its line is not kept in the history file.
        output = run(shell, "login --id-token eyJhbGciOiJub25lIn0.eyJ1c2VyX2lkIjoiYWRhIn0.", "gs://served/photos")
        assert "signed in as user ada" in output
        output = run(shell, "logout", "gs://served/photos")
        assert "signed out" in output
        leave(shell)
        history = (tmp_path / ".local" / "share" / "storesh" / "history").read_text()
        assert "logout" in history and "eyJ1c2VyX2lkIjoiYWRhIn0" not in history
    finally:
        status, err = server.stop()
        assert status == 0, err


def test_dry_run_before_a_line_at_the_prompt_shows_its_plan_and_saves_nothing(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    output = run(shell, "dry-run meta set cacheControl=no-store -- images/*.jpg; rm docs/readme.md")
    assert "images/forest.jpg" in output and '→  "no-store"' in output
    assert "would delete docs/readme.md" in output and "dry run: nothing was saved" in output
    output = run(shell, "meta get images/forest.jpg; ls docs")
    assert "no-store" not in output and "readme.md" in output
    output = run(shell, "explain dry-run rm docs/readme.md")
    assert 'storage.reference().child("docs/readme.md").delete()' in output
    leave(shell)


def test_a_login_on_a_failed_line_is_undone_with_it_and_said_so(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    output = run(shell, "login alice; rm missing")
    assert "the line's sign-in was undone with it: still signed out" in output
    assert "not signed in" in run(shell, "whoami")
    run(shell, "login bob")
    output = run(shell, "logout; rm missing")
    assert "the line's sign-in was undone with it: still signed in as bob" in output
    assert "signed in as bob" in run(shell, "whoami")
    leave(shell)


def test_a_shell_opened_with_dry_run_says_so_in_its_banner_and_prompt(tmp_path):
    shell = start(tmp_path, "--dry-run")
    shell.expect_exact("nothing is saved")
    prompt(shell, "(dry run) gs://teaching/")
    output = run(shell, "rm docs/readme.md", path="(dry run) gs://teaching/")
    assert "would delete docs/readme.md" in output and "dry run: nothing was saved" in output
    leave(shell)
    assert "readme.md" in subprocess.run([BINARY, "--quiet", "-c", "ls docs"], env=environment(tmp_path),
                                         capture_output=True, text=True).stdout


def test_tab_after_explain_completes_the_explained_command(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    shell.send("explain meta set cache\t")
    shell.expect_exact("Control=")  # the terminal shows what Tab added
    shell.send("x images/forest.jpg\r")
    prompt(shell)
    assert "newMetadata.cacheControl = \"x\"" in shell.before
    leave(shell)


def test_a_rules_load_on_a_failed_line_is_undone_and_said_so(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    output = run(shell, "rules load --sample owner-only; rm missing")
    assert "the 1 change reported above was undone" in output
    assert "the rules in force are still the open rules of a new bucket" in output
    assert "the open rules of a new bucket" in run(shell, "rules show")
    leave(shell)


def test_an_error_after_output_shows_the_typed_line_again_above_its_caret(tmp_path):
    shell = start(tmp_path)
    prompt(shell)
    width = len("gs://teaching/> ")
    # Nothing printed before the error: the caret stands right under the typed line.
    lines = run(shell, "echo hello; ls --al").replace("\r", "").splitlines()
    assert lines[1] == " " * (width + len("echo hello; ls ")) + "^"
    # The echo's output stands between the typed line and the error: the line comes again, the caret under it.
    lines = run(shell, "echo hello; meta get images/nope.jpg").replace("\r", "").splitlines()
    at = lines.index("hello")
    assert lines[at + 1] == " " * width + "echo hello; meta get images/nope.jpg"
    assert lines[at + 2] == " " * (width + len("echo hello; meta get ")) + "^"
    leave(shell)


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_sentences_wrap_between_words_and_columns_align_by_cells(tmp_path, columns):
    """Issue 36: at any terminal width, a sentence breaks at a blank, never inside a word or a quoted value, and a
    table's columns line up under wide (Korean) characters."""
    shell = start(tmp_path, columns=columns)
    prompt(shell)
    run(shell, "put --data x docs/한국어.txt")
    run(shell, "meta set custom.한국=값 custom.k=v docs/한국어.txt")
    shown = run(shell, "meta get docs/한국어.txt")
    rows = {line.split()[0]: line for line in shown.replace("\r", "").split("\n") if line.startswith("custom.")}

    def cells(text):
        return sum(2 if "\uac00" <= ch <= "\ud7a3" else 1 for ch in text)

    values = [line.index(line.split()[1]) for line in rows.values()]
    starts = [cells(line[:index]) for line, index in zip(rows.values(), values)]
    assert len(rows) == 2 and starts[0] == starts[1], rows
    loaded = run(shell, "rules load --sample open").replace("\r", "")
    words = [line for line in loaded.split("\n") if line and not line.startswith("rules load")]
    assert "storesh)" in loaded
    for line in words:
        assert cells(line) <= columns, (columns, line)
    assert not any(line.endswith("stores") for line in words), words
    joined = " ".join(line.strip() for line in words)
    assert "(the sample built into storesh)" in joined, joined
    leave(shell)


def cells(text):
    """Terminal cells of a line: East Asian wide characters take two (the tests' texts hold no other kind)."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


READING = ["help ls", "help L3", "help L", "help scripts", "help", "explain meta set cacheControl=no-cache -- images/mountains/summit.jpg",
           "explain meta unset custom.activity -- images/mountains/summit.jpg", "meta get images/mountains/summit.jpg",
           "page token AQh0ZWFjaGluZw9sZXNzb25zL3BhZ2luZy8BEWxlc3NvbnMvcGFnaW5nL2IvWVpJww", "rules show", "ls wrongPrefix",
           "dry-run meta set custom.note='a value long enough to wrap on a narrow terminal, word after word' -- images/mountains/summit.jpg"]


@pytest.mark.parametrize("columns", [40, 80, 120])
@pytest.mark.parametrize("line", READING)
def test_what_people_read_wraps_between_words_to_the_terminal(tmp_path, columns, line):
    """Every line fits the terminal, and wrapping only moved blanks: the words are those printed to a pipe, in order,
    none cut (a word wider than the line stands alone on one)."""
    piped = subprocess.run([BINARY, "--quiet", "-c", line], env=environment(tmp_path), capture_output=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    child = pexpect.spawn(BINARY, ["--quiet", "-c", line], env=environment(tmp_path), encoding="utf-8", timeout=60,
                          dimensions=(24, columns))
    child.expect(pexpect.EOF)
    shown = child.before.replace("\r\n", "\n")
    child.close()
    assert child.exitstatus == 0, shown
    for row in shown.splitlines():
        assert cells(row) <= columns or " " not in row.strip(), f"{cells(row)} cells at {columns}: {row!r}"
    assert shown.split() == piped.stdout.decode().split()


@pytest.mark.parametrize("columns", [40, 80])
def test_a_scripts_error_wraps_between_words_and_its_caret_stays_under_its_column(tmp_path, columns):
    def shown(script):
        child = pexpect.spawn(BINARY, ["--quiet", "-c", script], env=environment(tmp_path), encoding="utf-8", timeout=60,
                              dimensions=(24, columns))
        child.expect(pexpect.EOF)
        child.close()
        rows = child.before.replace("\r\n", "\n").splitlines()
        assert all(cells(row) <= columns for row in rows), rows
        return rows
    rows = shown("page token")
    assert " ".join(" ".join(rows).split()).startswith("-c:1:1: error: There is no page token to show: no listing yet.")
    rows = shown("ls; tokens")
    assert rows[-2:] == ["    ls; tokens", "        ^"], rows
    assert " ".join(" ".join(rows[:-2]).split()).startswith("-c:1:5: error: unknown command 'tokens'")


@pytest.mark.parametrize("columns", [40, 80])
def test_reset_asks_its_question_wrapped_between_words(tmp_path, columns):
    bucket = make_bucket(tmp_path, "a-rather-long-bucket-name-for-the-projector", ["x.txt"])
    child = pexpect.spawn(BINARY, ["reset", "--bucket", bucket], env=environment(tmp_path), encoding="utf-8", timeout=60,
                          dimensions=(24, columns))
    child.expect_exact("Type yes to go on: ")
    asked = child.before.replace("\r\n", "\n") + "Type yes to go on:"
    child.send("no\r")
    child.expect(pexpect.EOF)
    child.close()
    rows = asked.splitlines()
    assert len(rows) > 1 and all(cells(row) <= columns or " " not in row.strip() for row in rows), rows
    assert " ".join(asked.split()).startswith("storesh: Empty gs://a-rather-long-bucket-name-for-the-projector (")
    assert "delete its 1 object and put back the open rules? Type yes to go on:" in " ".join(asked.split())


def test_names_that_look_alike_stay_apart_in_completion_and_meta_get(tmp_path):
    """verão.jpg written composed (NFC) and decomposed (NFD) is two objects (rule P7): Tab lists both, the decomposed
    one marked, and inserts neither for the other; meta get of the decomposed one says so."""
    composed, decomposed = "photos/ver\u00e3o.jpg", "photos/vera\u0303o.jpg"
    bucket = make_bucket(tmp_path, "alike", [composed, decomposed])
    shell = start(tmp_path, "--bucket", bucket)
    prompt(shell, "gs://alike/")
    shell.send("meta get photos/ver\t")
    shell.expect_exact("(not NFC)")
    prompt(shell, "gs://alike/")
    shell.send("\x15\r")
    prompt(shell, "gs://alike/")
    shell.send(f"meta get '{decomposed}'\r")
    shell.expect_exact("(not NFC)")
    prompt(shell, "gs://alike/")
    leave(shell)
