"""The bucket in a browser (issue 25, first slice): `GET /` of storesh serve is a page of plain HTML that shows a
folder as the listing rules show it, pages with the page token in the link, an object's metadata with a link to
its content, and the rules in force; it needs no JavaScript and escapes every name."""
import os
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests

from serving import BUCKET, harness


class Page(HTMLParser):
    """A page's links (href → text), its text, and whether it holds a script."""

    def __init__(self, html):
        super().__init__()
        self.links, self.text, self.scripts = {}, [], 0
        self._href = None
        self.feed(html)

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if tag == "a":
            self._href = attributes.get("href")
            self.links[self._href] = ""
        if tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "a":
            self._href = None

    def handle_data(self, data):
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
    # Everything is in the HTML itself; the one script only keeps the page current, and loads nothing.
    assert root.scripts == 1 and "<script src" not in html
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

    def next_event():
        for line in lines:
            if line.startswith("event: "):
                return line
        raise AssertionError("the event stream ended")

    assert next(lines).startswith("retry:")
    client.bucket(BUCKET).blob("live/client.txt").upload_from_string(b"from a client")
    assert next_event() == "event: change"
    # Another process on the same file: the shell.
    status, _, err = harness.storesh(tmp_path, "--bucket", server.bucket_file, "--quiet", "-c", "put --data shell live/shell.txt")
    assert status == 0, err.decode()
    assert next_event() == "event: change"
    listed, _ = page(server, path="live/")
    assert {"client.txt", "shell.txt"} <= set(listed.links.values())
    # A page left open does not keep the server from stopping, and the bucket is left as one file.
    status, err = server.stop()
    assert status == 0, err
    assert not os.path.exists(server.bucket_file + "-wal") and not os.path.exists(server.bucket_file + "-shm")
