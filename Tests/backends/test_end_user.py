"""Rule F1: signed in as an end user, storesh uses the Firebase Storage API v0 of `storesh serve`, so the bucket's
security rules decide, as they do for the apps: `login UID` (an unsigned emulator token), `$STORESH_ID_TOKEN`,
`logout`, `whoami`; a plan through an API without preconditions says so; the token is never printed or written.
"""
import base64
import json
import os

import pytest
import requests

import harness
from backend_support import BUCKET

RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /{allPaths=**} {
      allow read: if request.auth != null;
      allow write: if request.auth.uid == 'ada';
    }
  }
}
"""


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def emulator_token(uid):
    header = {"alg": "none", "typ": "JWT"}
    payload = {"iss": "https://securetoken.google.com/conformance", "aud": "conformance", "iat": 0, "exp": 4102444800,
               "sub": uid, "user_id": uid, "firebase": {"sign_in_provider": "custom", "identities": {}}}
    return b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode()) + "."


@pytest.fixture
def served(serve_process, serve_file, tmp_path):
    owner = {"Authorization": "Bearer owner"}
    requests.post(serve_process + "/internal/reset", headers=owner, timeout=30).raise_for_status()
    requests.put(serve_process + "/internal/setRules", timeout=30,
                 json={"rules": {"files": [{"name": "storage.rules", "content": RULES}]}}).raise_for_status()
    env = {"STORAGE_EMULATOR_HOST": serve_process, "XDG_STATE_HOME": str(tmp_path / "state")}
    status, _, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "-c",
                                     "put --data a photos/a.jpg; put --data b photos/b.jpg", **env)
    assert status == 0, err.decode()
    yield env
    # Open rules again for the other tests of the session's server.
    requests.put(serve_process + "/internal/setRules", timeout=30, json={"rules": {"files": [{"name": "storage.rules", "content":
        "rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /{allPaths=**} { allow read, write; } } }"}]}})


def run(tmp_path, env, script, **extra):
    status, out, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "-c", script, **dict(env, **extra))
    return status, out.decode(), err.decode()


def test_F1_login_uid_makes_the_rules_decide(served, tmp_path):
    status, out, err = run(tmp_path, served, "login bob\nwhoami\nls photos")
    assert status == 0, err
    assert "Firebase Storage API v0" in out and "user bob" in out and "a.jpg" in out
    status, out, err = run(tmp_path, served, "login bob\nmeta set custom.by=bob -- photos/a.jpg")
    assert status == 1 and "User does not have permission to access gs://conformance.appspot.com/photos/a.jpg. (unauthorized)" in err
    assert "no preconditions" in err
    status, out, err = run(tmp_path, served, "login ada\nmeta set custom.by=ada -- photos/*\nlogout\nmeta get photos/b.jpg")
    assert status == 0, err
    assert "custom.by       ada" in out
    status, out, err = run(tmp_path, served, "ls photos", STORESH_ID_TOKEN="not-a-token")
    assert status == 1 and "(unauthenticated)" in err


def test_F1_an_id_token_from_the_environment_is_never_printed_or_written(served, tmp_path):
    token = emulator_token("ada")
    status, out, err = run(tmp_path, served, "whoami\nmeta set custom.via=env -- photos/a.jpg", STORESH_ID_TOKEN=token)
    assert status == 0, err
    assert "user ada" in out
    texts = [out, err]
    for root, _, files in os.walk(tmp_path / "state"):
        for name in files:
            texts.append(open(os.path.join(root, name), encoding="utf-8", errors="replace").read())
    assert len(texts) > 2  # the run's journal is among them
    assert all(token not in text and token.split(".")[1] not in text for text in texts)


def test_F1_a_dry_run_through_the_v0_api_says_it_has_no_preconditions(served, tmp_path):
    status, out, err = run(tmp_path, served, "login ada\nmeta set custom.k=v -- photos/*", )
    assert status == 0, err
    status, out, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "run", "--dry-run", "-",
                                       stdin=b"login ada\nmeta set custom.k=w -- photos/*\n", **served)
    assert status == 0 and "no preconditions" in err.decode()


def test_F1_rules_why_says_what_the_service_decided_not_local_rules(served, serve_process, tmp_path):
    """Issue 36: on gs:// storesh evaluates no rules of its own; `rules why` says the service decides, and after
    login what it answered the last request, with the decision in words when the server says it (storesh serve does)."""
    status, out, err = run(tmp_path, served, "rules why")
    assert status == 0, err
    assert "the service decides each request, not storesh" in out and "allow read, write" not in out
    only_ada = RULES.replace("allow read: if request.auth != null;", "allow read: if request.auth.uid == 'ada';")
    requests.put(serve_process + "/internal/setRules", timeout=30,
                 json={"rules": {"files": [{"name": "storage.rules", "content": only_ada}]}}).raise_for_status()
    status, out, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "--keep-going", "-c",
                                       "login bob\nmeta get photos/a.jpg\nrules why", **served)
    out = out.decode()
    assert f"the service answered GET gs://{BUCKET}/photos/a.jpg with 403: denied get on gs://{BUCKET}/photos/a.jpg" in out, out
    assert "request.auth.uid == 'ada'" in out or "the condition is false" in out, out


def test_F1_signed_in_a_large_file_goes_up_in_resumable_pieces_and_comes_down_whole(served, tmp_path):
    """A file larger than one upload piece (8 MiB) goes through the v0 API's resumable upload, as the SDKs'
    putFile sends it; get streams it back. The rules decide both: bob may not write."""
    source = tmp_path / "clip.bin"
    content = b"".join(n.to_bytes(4, "big") * (1 << 18) for n in range(20))  # 20 MiB, each MiB different
    source.write_bytes(content)
    status, out, err = run(tmp_path, served, f"login bob\nput {source} videos/clip.bin")
    assert status == 1 and "(unauthorized)" in err, err
    status, out, err = run(tmp_path, served, f"login ada\nput {source} videos/clip.bin\nget videos/clip.bin {tmp_path / 'back.bin'}")
    assert status == 0, err
    assert (tmp_path / "back.bin").read_bytes() == content
    # The pieces, as --trace shows the requests: a start, then three uploads, the last one finalizing.
    status, _, trace = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "--trace", "-c",
                                       f"login ada\nput {source} videos/clip2.bin", **served)
    assert status == 0, trace
    posts = [line for line in trace.decode().splitlines() if "POST" in line]
    assert len(posts) == 4, trace.decode()


def test_F1_a_plans_changes_are_made_as_the_user_who_planned_them_and_one_identity_per_plan(served, tmp_path, serve_process):
    """Issue 52: a script's `login` was performed while it was planned and forgotten by the apply: `login bob`, a
    change bob may not make, `logout`: planned as bob, applied with the bucket's own credentials, and it landed.
    Now the changes are made as bob (refused by the rules), a script whose changes would be made as two identities
    is refused before anything is sent, and a dry run's `login` signs no one in."""
    status, out, err = run(tmp_path, served, "login bob\nmeta set custom.by=bob -- photos/a.jpg\nlogout")
    assert status == 1 and "(unauthorized)" in err, (out, err)
    status, out, err = run(tmp_path, served, "meta get photos/a.jpg")
    assert "custom.by" not in out, out
    status, out, err = run(tmp_path, served, "login ada\nmeta set custom.by=ada -- photos/a.jpg\nlogout\nmeta set custom.by=admin -- photos/b.jpg")
    assert status == 1 and "as one identity" in err and "user ada" in err, err
    status, out, err = run(tmp_path, served, "meta get photos/a.jpg\nmeta get photos/b.jpg")
    assert "custom.by" not in out, out
    # A dry run plans as the user it signs in, and keeps no plan whose changes that sign-in made.
    plan = tmp_path / "plan.json"
    status, out, err = harness.storesh(tmp_path, "--bucket", f"gs://{BUCKET}", "--quiet", "--dry-run", "--plan", str(plan),
                                       "-c", "login ada\nmeta set custom.by=ada -- photos/a.jpg", **served)
    assert "the plan was not kept" in err.decode() and "user ada" in err.decode(), err.decode()
    assert not plan.exists()


def test_F1_a_dry_run_or_a_failed_line_at_the_prompt_puts_the_sign_in_back(served, tmp_path):
    """A line's `login` lands with the line: a dry run, or a line that fails, leaves whoever was signed in before
    (the session once stayed signed in as the dry run's user)."""
    import pexpect
    child = pexpect.spawn(harness.BINARY, ["--bucket", f"gs://{BUCKET}", "--quiet"], env=harness.environment(tmp_path, **served),
                          encoding="utf-8", timeout=60, dimensions=(24, 200))
    try:
        def line(text):
            child.send(text + "\r")
            child.expect_exact(f"gs://{BUCKET}/> ")
            return child.before
        child.expect_exact(f"gs://{BUCKET}/> ")
        said = line("dry-run login bob")
        assert "sign-in was undone with it" in said, said
        assert "user bob" not in line("whoami")
        said = line("login bob; meta get photos/none.jpg")
        assert "sign-in was undone with it" in said, said
        assert "user bob" not in line("whoami")
        line("login ada")
        said = line("login bob; meta get photos/none.jpg")
        assert "still signed in as" in said and "ada" in said, said
        assert "user ada" in line("whoami")
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close()


def test_F1_page_token_shows_the_v0_apis_own_tokens(served, tmp_path):
    """Issue 52: signed in, listings come from the Firebase v0 API with the service's own tokens, which `page token`
    refused as not storesh's. storesh serve's are shown; a token no one issued is still refused."""
    status, out, err = run(tmp_path, served, "login ada\nls -n 1 photos\npage token")
    assert status == 0, err
    assert "a.jpg" in out and "b.jpg" not in out.split("page token")[0], out
    assert "photos/a.jpg" in out.split("a.jpg", 1)[1], out
    status, out, err = run(tmp_path, served, "login ada\npage token not-a-token")
    assert status == 1 and "the service's own" in err, err
