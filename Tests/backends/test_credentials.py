"""Rule G3, the whole credentials chain, against a token endpoint and a metadata server of the tests' own on
127.0.0.1 (never the internet): a service account key (an RS256 JWT, verified here with google-auth, which no one
here wrote), an authorized user's refresh token from gcloud's application-default file, and the metadata server.
The storage requests go to `storesh serve` through the fault proxy, as a non-emulator endpoint
($STORESH_GCS_ENDPOINT), so that the proxy sees the bearer tokens. No token, key or assertion may appear in
anything a run prints or leaves behind.
"""
import json
import os
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt

import harness
from backend_support import BUCKET
from faultproxy import FaultProxy

SCOPE = "https://www.googleapis.com/auth/devstorage.full_control"


def new_key():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class TokenServer:
    """An OAuth token endpoint and a metadata server. Each token it gives is new; it records what it was sent."""

    def __init__(self, public_key, refresh_token, client_secret):
        self.public_key = public_key
        self.refresh_token = refresh_token
        self.client_secret = client_secret
        self.given = []  # access tokens handed out
        self.assertions = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def reply(self, status, document, headers=()):
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def token(self):
                token = "ya29.test-" + secrets.token_hex(16)
                server.given.append(token)
                return {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}

            def do_POST(self):
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                grant = form.get("grant_type", [""])[0]
                if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                    assertion = form["assertion"][0]
                    server.assertions.append(assertion)
                    try:
                        claims = jwt.decode(assertion, certs=server.public_key, audience=server.url + "/token")
                    except ValueError as error:
                        return self.reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
                    assert claims["scope"] == SCOPE and claims["iss"] == "storesh-test@demo.iam.gserviceaccount.com"
                    return self.reply(200, self.token())
                if grant == "refresh_token":
                    if form.get("refresh_token") != [server.refresh_token] or form.get("client_secret") != [server.client_secret]:
                        return self.reply(400, {"error": "invalid_grant", "error_description": "Bad Request"})
                    return self.reply(200, self.token())
                self.reply(400, {"error": "unsupported_grant_type"})

            def do_GET(self):
                if self.headers.get("Metadata-Flavor") != "Google":
                    return self.reply(403, {"error": "Missing Metadata-Flavor header"})
                if self.path.startswith("/computeMetadata/v1/instance/service-accounts/default/token"):
                    return self.reply(200, self.token(), [("Metadata-Flavor", "Google")])
                self.reply(200, {}, [("Metadata-Flavor", "Google")])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chain(serve_process, tmp_path):
    requests.post(serve_process + "/internal/reset", headers={"Authorization": "Bearer owner"}, timeout=30).raise_for_status()
    private, public = new_key()
    refresh_token = "1//refresh-" + secrets.token_hex(12)
    client_secret = "secret-" + secrets.token_hex(8)
    tokens = TokenServer(public, refresh_token, client_secret)
    proxy = FaultProxy(serve_process)
    home = tmp_path / "home"
    home.mkdir()
    yield {"tokens": tokens, "proxy": proxy, "home": home, "private": private, "refresh_token": refresh_token,
           "client_secret": client_secret}
    proxy.close()
    tokens.close()


def run(chain, *arguments, **env):
    base = {"STORESH_GCS_ENDPOINT": chain["proxy"].url, "NO_GCE_CHECK": "1",
            "XDG_STATE_HOME": str(chain["home"] / "state")}
    base.update(env)
    status, out, err = harness.storesh(chain["home"], "--bucket", f"gs://{BUCKET}", *arguments, **base)
    return status, out.decode(), err.decode()


def service_account_file(chain, key=None):
    path = chain["home"] / "key.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "demo", "private_key_id": "k1",
        "private_key": key or chain["private"], "client_email": "storesh-test@demo.iam.gserviceaccount.com",
        "token_uri": chain["tokens"].url + "/token"}))
    return str(path)


def secrets_of(chain):
    return [chain["private"].splitlines()[1], chain["refresh_token"], chain["client_secret"],
            *chain["tokens"].given, *chain["tokens"].assertions]


def assert_nothing_leaked(chain, *outputs):
    """No secret in any output, nor in any file the run left (journals, history)."""
    texts = list(outputs)
    for root, _, files in os.walk(chain["home"]):
        for name in files:
            if name == "key.json" or name == "application_default_credentials.json":
                continue
            with open(os.path.join(root, name), "rb") as file:
                texts.append(file.read().decode("utf-8", "replace"))
    for secret in secrets_of(chain):
        for text in texts:
            assert secret not in text


def test_G3_service_account_key_signs_a_jwt_and_every_request_carries_the_token(chain):
    key_file = service_account_file(chain)
    status, out, err = run(chain, "-c", "put --data hi a/b.txt\nls a\nmeta set custom.k=v -- a/b.txt\nwhoami",
                           GOOGLE_APPLICATION_CREDENTIALS=key_file)
    assert status == 0, err
    assert "b.txt" in out and "service account storesh-test@demo.iam.gserviceaccount.com" in out
    # One token for the whole run: cached, not fetched per request.
    assert len(chain["tokens"].given) == 1
    authorizations = {headers.get("authorization") for headers in chain["proxy"].headers}
    assert authorizations == {"Bearer " + chain["tokens"].given[0]}
    assert_nothing_leaked(chain, out, err)


def test_G3_authorized_user_from_gcloud_application_default_file(chain):
    config = chain["home"] / "gcloud"
    config.mkdir()
    (config / "application_default_credentials.json").write_text(json.dumps({
        "type": "authorized_user", "client_id": "client.apps.googleusercontent.com",
        "client_secret": chain["client_secret"], "refresh_token": chain["refresh_token"],
        "quota_project_id": "billing-project", "token_uri": chain["tokens"].url + "/token"}))
    status, out, err = run(chain, "-c", "ls", CLOUDSDK_CONFIG=str(config))
    assert status == 0, err
    assert {h.get("x-goog-user-project") for h in chain["proxy"].headers} == {"billing-project"}
    assert {h.get("authorization") for h in chain["proxy"].headers} == {"Bearer " + chain["tokens"].given[0]}
    assert_nothing_leaked(chain, out, err)


def test_G3_metadata_server_when_no_file_is_found(chain):
    host = chain["tokens"].url.removeprefix("http://")
    status, out, err = run(chain, "-c", "ls\nwhoami", NO_GCE_CHECK="", GCE_METADATA_HOST=host)
    assert status == 0, err
    assert "metadata server" in out
    assert {h.get("authorization") for h in chain["proxy"].headers} == {"Bearer " + chain["tokens"].given[0]}


def test_G3_no_credentials_names_what_was_tried_and_how_to_fix_it(chain):
    status, out, err = run(chain, "-c", "ls")
    assert status == 1
    for tried in ("$GOOGLE_APPLICATION_CREDENTIALS (not set)", "application_default_credentials.json",
                  "metadata server (skipped: $NO_GCE_CHECK is set)", "gcloud auth application-default login",
                  "STORAGE_EMULATOR_HOST", "(unauthenticated)"):
        assert tried in err
    assert chain["proxy"].requests == []


def test_G3_a_key_the_endpoint_refuses_is_unauthenticated_and_names_the_endpoint(chain):
    other, _ = new_key()
    key_file = service_account_file(chain, key=other)
    status, out, err = run(chain, "-c", "ls", GOOGLE_APPLICATION_CREDENTIALS=key_file)
    assert status == 1
    assert "refused the key of service account" in err and "invalid_grant" in err and "(unauthenticated)" in err
    assert chain["tokens"].url in err
    assert_nothing_leaked(chain, out, err)


@pytest.mark.parametrize("content, phrase", [
    ({"type": "external_account"}, "of type 'external_account'"),
    ({"type": "service_account", "client_email": "x@y"}, "has no 'private_key'"),
    ({"type": "service_account", "client_email": "x@y", "private_key": "not a key"}, "not an RSA private key"),
])
def test_G3_an_unusable_credentials_file_is_an_error_naming_it(chain, content, phrase):
    path = chain["home"] / "bad.json"
    path.write_text(json.dumps(content))
    status, _, err = run(chain, "-c", "ls", GOOGLE_APPLICATION_CREDENTIALS=str(path))
    assert status == 1 and phrase in err and str(path) in err
