"""The bucket in a browser (issue 25, first slice): `GET /` of storesh serve is a page of plain HTML that shows a
folder as the listing rules show it, pages with the page token in the link, an object's metadata with a link to
its content, and the rules in force; it needs no JavaScript and escapes every name."""
import os
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests

from serving import BUCKET, harness


class Page(HTMLParser):
    """A page's links (href → text), its text, the sources of its scripts and style sheets, and what it holds inline:
    script or style elements with content, and style attributes."""

    def __init__(self, html):
        super().__init__()
        self.links, self.text, self.scripts, self.sheets, self.inline = {}, [], [], [], []
        self._href = None
        self._inside = None
        self.feed(html)

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if tag == "a":
            self._href = attributes.get("href")
            self.links[self._href] = ""
        if tag == "script":
            self.scripts.append(attributes.get("src"))
        if tag == "link" and attributes.get("rel") == "stylesheet":
            self.sheets.append(attributes.get("href"))
        if tag in ("script", "style"):
            self._inside = tag
        if "style" in attributes or any(name.startswith("on") for name in attributes):
            self.inline.append((tag, attributes))

    def handle_endtag(self, tag):
        if tag == "a":
            self._href = None
        if tag in ("script", "style"):
            self._inside = None

    def handle_data(self, data):
        if self._inside and data.strip():
            self.inline.append((self._inside, data[:80]))
        self.text.append(data)
        if self._href is not None:
            self.links[self._href] += data

    def link(self, text):
        """The href of the link whose text is `text`."""
        found = [href for href, shown in self.links.items() if shown.strip() == text]
        assert found, f"no link {text!r} among {sorted(self.links.values())}"
        return found[0]


def page(server, url="/", **params):
    """The page at `url` (a link of another page), with `params` as its query (path, token, object)."""
    answer = server.request("GET", url, params=params or None)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("text/html")
    return Page(answer.text), answer.text


def test_a_folder_as_the_listing_rules_show_it_with_no_script(server, client):
    bucket = client.bucket(BUCKET)
    for name in ["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/", "images/forest.jpg"]:
        bucket.blob(name).upload_from_string(name.encode())
    root, html = page(server)
    # Everything is in the HTML itself; the one script, from this server, only keeps the page current.
    assert len(root.scripts) == 1 and root.scripts[0].startswith("/_storesh/page.js?v=")
    # Rule L3's seed example: prefixes at the root, and sadItem (under an empty segment) is no item anywhere.
    assert {"correctPrefix/", "wrongPrefix/", "lonelyItem/", "images/"} <= set(root.links.values())
    wrong, _ = page(server, root.link("wrongPrefix/"))
    assert "sadItem" not in "".join(wrong.text) and "Nothing is listed here." in "".join(wrong.text)
    images, _ = page(server, root.link("images/"))
    assert "forest.jpg" in images.links.values()
    # The breadcrumb leads back to the root.
    assert page(server, images.link(f"gs://{BUCKET}"))[0].links.keys() == root.links.keys()


def test_pages_follow_their_page_token_to_the_last(server, client):
    bucket = client.bucket(BUCKET)
    for number in range(60):
        bucket.blob(f"files/{number:03}.txt").upload_from_string(b"x")
    first, _ = page(server, path="files/")
    items = [text for href, text in first.links.items() if "object=" in href]
    assert len(items) == 50 and items[0] == "000.txt"
    assert "pageToken" in "".join(first.text)
    second, _ = page(server, first.link("Next page"))
    rest = [text for href, text in second.links.items() if "object=" in href]
    assert rest == [f"{number:03}.txt" for number in range(50, 60)]
    assert "Last page: no page token." in "".join(second.text)


def test_an_objects_metadata_and_content_with_its_tokens_unshown(server, client):
    blob = client.bucket(BUCKET).blob("images/forest.jpg")
    blob.metadata = {"activity": "Hiking", "firebaseStorageDownloadTokens": "secret-token"}
    blob.cache_control = "public, max-age=60"
    blob.upload_from_string(b"\xff\xd8 a forest", content_type="image/jpeg")
    panel, html = page(server, path="images/", object="images/forest.jpg")
    text = "".join(panel.text)
    for shown in ["image/jpeg", "public, max-age=60", "activity", "Hiking", "metageneration", "1 download token"]:
        assert shown in text
    assert "secret-token" not in html
    content = requests.get(urljoin(server.url, panel.link("Download the content")), timeout=30)
    assert content.content == b"\xff\xd8 a forest"
    missing, _ = page(server, object="images/nope.jpg")
    assert "does not exist" in "".join(missing.text)
    # The edit form is the script's (hidden without it), on the object as shown, without the tokens.
    generation = client.bucket(BUCKET).get_blob("images/forest.jpg").generation
    assert f'<form class="edit" hidden data-object="/storage/v1/b/{BUCKET}/o/images%2Fforest.jpg"' in html
    assert f'data-generation="{generation}" data-metageneration="1"' in html
    assert "Editing needs JavaScript" in text and '<form class="upload" hidden' in html


def test_every_name_is_escaped(server, client):
    name = "odd/<b>bold<i> & \"quotes\" 'too'.txt"
    client.bucket(BUCKET).blob(name).upload_from_string(b"x")
    listing, html = page(server, path="odd/", object=name)
    assert "<b>" not in html and "&lt;b&gt;bold&lt;i&gt; &amp; &quot;quotes&quot; &#39;too&#39;.txt" in html
    assert "<b>bold<i> & \"quotes\" 'too'.txt" in listing.links.values()


def test_the_rules_in_force_are_shown(server):
    _, html = page(server)
    assert "Security rules in force" in html and "rules_version" in html


def test_the_page_hears_of_every_change_by_a_client_or_a_shell_and_the_server_still_stops(server, client, tmp_path):
    events = server.session.get(server.url + "/_storesh/events", stream=True, timeout=(5, 20))
    assert events.status_code == 200 and events.headers["Content-Type"] == "text/event-stream"
    lines = events.iter_lines(chunk_size=1, decode_unicode=True)

    def events_until(*names):
        """Reads events until each of `names` came, in any order; returns every event read."""
        seen, waiting = [], set(names)
        for line in lines:
            if line.startswith("event: "):
                seen.append(line[len("event: "):])
                waiting.discard(seen[-1])
                if not waiting:
                    return seen
        raise AssertionError(f"the event stream ended after {seen}")

    assert next(lines).startswith("retry:")
    # A client's upload: a request the log shows, and a change of the bucket.
    client.bucket(BUCKET).blob("live/client.txt").upload_from_string(b"from a client")
    assert set(events_until("change", "request")) == {"change", "request"}
    # Another process on the same file: the shell. Its change is no request to this server.
    status, _, err = harness.storesh(tmp_path, "--bucket", server.bucket_file, "--quiet", "-c", "put --data shell live/shell.txt")
    assert status == 0, err.decode()
    assert events_until("change") == ["change"]
    listed, _ = page(server, path="live/")
    assert {"client.txt", "shell.txt"} <= set(listed.links.values())
    # A page left open does not keep the server from stopping, and the bucket is left as one file.
    status, err = server.stop()
    assert status == 0, err
    assert not os.path.exists(server.bucket_file + "-wal") and not os.path.exists(server.bucket_file + "-shm")


LOG_RULES = """rules_version = '2';
service firebase.storage {
  match /b/{bucket}/o {
    match /public/{all=**} { allow read: if true; }
    match /private/{uid}/{all=**} { allow read: if request.auth != null && request.auth.uid == uid; }
  }
}
"""


def unsigned_token(uid):
    """An emulator ID token (alg none, no signature), as createMockUserToken makes one."""
    import base64
    import json

    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "type": "JWT"}) + "." + part({"sub": uid, "user_id": uid}) + "."


def exchanges(html):
    """The request log's entries, newest first, each as its text."""
    import re
    return [re.sub(r"<[^>]+>", "", entry) for entry in re.findall(r'<li class="exchange[^"]*"[^>]*>(.*?)</li>', html, re.S)]


def test_the_request_log_shows_each_requests_sdk_call_exchange_caller_and_rules_decision(server, tmp_path):
    status, _, err = harness.storesh(tmp_path, "--bucket", server.bucket_file, "--quiet", "-c",
                                     "put --data hi public/a.txt\nput --data secret private/ada/b.txt")
    assert status == 0, err.decode()
    rules = tmp_path / "storage.rules"
    rules.write_text(LOG_RULES)
    status, _, err = harness.storesh(tmp_path, "--bucket", server.bucket_file, "--quiet", "-c", f"rules load {rules}")
    assert status == 0, err.decode()
    _, html = page(server, view="requests")
    assert "None yet" in html
    private = "/v0/b/" + BUCKET + "/o/private%2Fada%2Fb.txt"
    assert server.request("GET", private).status_code == 403
    assert server.request("GET", private, headers={"Authorization": "Firebase " + unsigned_token("ada")}).status_code == 200
    listed = server.request("GET", "/v0/b/" + BUCKET + "/o", params={"prefix": "public/", "delimiter": "/", "maxResults": "5"})
    assert listed.status_code == 200
    assert server.request("GET", "/storage/v1/b/" + BUCKET + "/o/public%2Fa.txt").status_code == 200
    assert server.request("GET", private, params={"alt": "media", "token": "not-a-real-token"}).status_code == 403
    page(server)  # the page's own reads are not requests of the log

    _, html = page(server, view="requests")
    logged = exchanges(html)
    assert len(logged) == 5, logged
    media, admin, listing, signed_in, denied = logged
    # The SDK call each request stands for, its HTTP exchange, who made it, and what the rules decided.
    assert 'storage.reference().child(&quot;private/ada/b.txt&quot;).getMetadata()' in denied
    # The name as people read it, not as the URL escapes it (issue 52).
    assert f"GET /v0/b/{BUCKET}/o/private/ada/b.txt → 403 Forbidden" in denied and "signed out" in denied
    assert "denied get on gs://" + BUCKET + "/private/ada/b.txt" in denied and "storage.rules:5" in denied
    assert "signed in as ada" in signed_in and "allowed get" in signed_in and "storage.rules:5" in signed_in
    assert 'child(&quot;public&quot;).list(maxResults: 5)' in listing and "allowed list" in listing and "storage.rules:4" in listing
    assert "objects.get (Cloud Storage JSON API)" in admin and "the administrator" in admin and "rules do not apply" in admin
    assert ".data(maxSize: 10 * 1024 * 1024)" in media and "not-a-real-token" not in html
    assert '<li class="exchange denied"' in html
    # Beside the bucket: the same log, newest first.
    _, beside = page(server)
    assert exchanges(beside)[0] == exchanges(page(server, view="requests")[1])[0]


def test_the_page_holds_no_inline_script_or_style_and_its_policy_allows_none(server, client):
    """The page's style and script are served beside it (issue 55): its policy then forbids anything inline, so a
    name that escaped its escaping still could not run."""
    bucket = client.bucket(BUCKET)
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2) style="x">'
    bucket.blob(f"names/{hostile}").upload_from_string(b"x")
    blob = bucket.blob("names/plain.txt")
    blob.metadata = {hostile: hostile}
    blob.upload_from_string(b"x")
    answer = server.request("GET", "/", params={"path": "names/", "object": "names/plain.txt"})
    shown = Page(answer.text)
    assert shown.inline == [], shown.inline
    assert len(shown.scripts) == 1 and len(shown.sheets) == 1
    assert hostile in "".join(shown.text)
    policy = answer.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert answer.headers["X-Content-Type-Options"] == "nosniff" and answer.headers["Referrer-Policy"] == "no-referrer"
    # Each asset: its type, kept for good under a link that names its content, with the same headers.
    for link, kind in [(shown.scripts[0], "text/javascript"), (shown.sheets[0], "text/css")]:
        asset = server.request("GET", link)
        assert asset.status_code == 200 and asset.headers["Content-Type"].startswith(kind)
        assert "immutable" in asset.headers["Cache-Control"] and asset.headers["X-Content-Type-Options"] == "nosniff"
        assert len(asset.content) > 200
