"""A pytest plugin for running Google's own system tests for google-cloud-storage (`tests/system` of its sdist, written
to run against the real service) against `storesh serve` (issue 54). It changes no test; it only:

- deselects the tests that need Google's network beyond Cloud Storage (Cloud KMS, IAM Credentials, HMAC keys,
  Pub/Sub, zonal buckets over gRPC), each with its reason, written to $STORESH_DESELECTED;
- gives the default client the service account whose key serve checks signed URLs against ($STORESH_SA_FILE), with a
  token preset so that nothing asks Google for one (the tests' `service_account` fixture needs such a credential);
- makes `_helpers.await_config_changes_propagate` return at once: it sleeps 12 s for the real service's bucket settings
  to propagate, which a bucket file does not need; except in the tests that wait for time itself to pass (an object
  to outlive its bucket's retention period), which sleep as written.
"""
import datetime
import json
import os

# Each a test, or a whole file, and why it cannot run here.
DESELECTED = {
    "test_kms_integration.py": "needs Cloud KMS (it creates key rings and keys on cloudkms.googleapis.com)",
    "test_hmac_key_metadata.py": "needs HMAC keys of a real service account (projects/*/hmacKeys on the service)",
    "test_notification.py": "needs Pub/Sub topics and their IAM policies on pubsub.googleapis.com",
    "test_rapid.py": "needs zonal (Rapid) buckets over gRPC (BidiWriteObject), which storesh serve does not speak",
    "test_zonal.py": "needs zonal (Rapid) buckets over gRPC, which storesh serve does not speak",
    "test_transfer_manager.py::test_upload_chunks_concurrently_with_kms": "needs a Cloud KMS key",
    "test__signing.py::test_create_signed_read_url_v2_w_access_token": "signs through IAM Credentials' signBlob",
    "test__signing.py::test_create_signed_read_url_v4_w_access_token": "signs through IAM Credentials' signBlob",
    "test__signing.py::test_generate_signed_post_policy_v4_access_token_sa_email": "signs through IAM Credentials' signBlob",
    "test__signing.py::test_create_signed_read_url_v4_w_access_token_universe_domain": "needs IAM Credentials in a test universe",
}


def reason_deselected(nodeid):
    tail = nodeid.split("tests/system/")[-1].split("[")[0]
    return DESELECTED.get(tail) or DESELECTED.get(tail.split("::")[0])


def pytest_collection_modifyitems(session, config, items):
    kept, dropped = [], []
    for item in items:
        reason = reason_deselected(item.nodeid)
        (dropped if reason else kept).append((item, reason))
    if dropped:
        config.hook.pytest_deselected(items=[item for item, _ in dropped])
        if os.environ.get("STORESH_DESELECTED"):
            with open(os.environ["STORESH_DESELECTED"], "w") as out:
                json.dump({item.nodeid: reason for item, reason in dropped}, out, indent=1)
    items[:] = [item for item, _ in kept]


def pytest_configure(config):
    import sys
    for name, module in list(sys.modules.items()):
        if name.endswith("system._helpers"):
            module.await_config_changes_propagate = _await_only_time
    if os.environ.get("STORESH_SA_FILE"):
        _use_service_account(os.environ["STORESH_SA_FILE"])


# The tests whose wait is for time to pass, not for settings to propagate.
WAITING_FOR_TIME = {"test_delete_object_bucket_w_retention_period"}


def _await_only_time(sec=12):
    import time
    test = os.environ.get("PYTEST_CURRENT_TEST", "")
    if any(f"::{name}" in test for name in WAITING_FOR_TIME):
        time.sleep(sec)


def _use_service_account(path):
    from google.cloud.storage import client as client_module
    from google.oauth2 import service_account
    credentials = service_account.Credentials.from_service_account_file(
        path, scopes=["https://www.googleapis.com/auth/devstorage.full_control"])
    credentials.token = "storesh-serve-takes-any-token"
    credentials.expiry = datetime.datetime.utcnow() + datetime.timedelta(days=1)
    original = client_module.Client.__init__

    def init(self, project=client_module._marker, credentials_given=None, *arguments, **keywords):
        if "credentials" in keywords:
            credentials_given = keywords.pop("credentials")
        if credentials_given is None:
            credentials_given = credentials
            if project is client_module._marker:
                project = os.environ.get("GOOGLE_CLOUD_PROJECT", "demo-app")
        return original(self, project, credentials_given, *arguments, **keywords)

    client_module.Client.__init__ = init
