"""The JSON API's listing options, compose's and move's semantics as Cloud Storage has them (issue 54):
`matchGlob` (pages stay bounded, tokens go on), `filter` on object contexts, `includeTrailingDelimiter`, compose's `deleteSourceObjects` and a
composite without a content type, `objects.move` atomic under conditions on both sides."""
import pytest
import requests
from google.api_core import exceptions


def names(blobs):
    return [blob.name for blob in blobs]


def test_match_glob_and_trailing_delimiters(server, client):
    bucket = client.create_bucket("globbed")
    for name in ["foo/bar", "foo/baz", "foo/foobar", "foobar", "parent/", "parent/child.txt", "top.txt"]:
        bucket.blob(name).upload_from_string(b"x")
    assert names(bucket.list_blobs(match_glob="**/{foobar,baz}")) == ["foo/baz", "foo/foobar", "foobar"]
    # Page by page: a page may be short, the token says where to go on, and nothing is lost or repeated.
    seen, token = [], None
    while True:
        params = {"matchGlob": "**", "maxResults": "2"} | ({"pageToken": token} if token else {})
        page = requests.get(f"{server.url}/storage/v1/b/globbed/o", params=params, timeout=30).json()
        assert len(page.get("items", [])) <= 2
        seen += [item["name"] for item in page.get("items", [])]
        token = page.get("nextPageToken")
        if not token:
            break
    assert seen == ["foo/bar", "foo/baz", "foo/foobar", "foobar", "parent/", "parent/child.txt", "top.txt"]
    refused = requests.get(f"{server.url}/storage/v1/b/globbed/o", params={"matchGlob": "a{b"}, timeout=30)
    assert refused.status_code == 400 and "matchGlob" in refused.json()["error"]["message"]
    iterator = bucket.list_blobs(delimiter="/", include_trailing_delimiter=True)
    assert names(iterator) == ["foobar", "parent/", "top.txt"] and iterator.prefixes == {"foo/", "parent/"}
    # A filter on object contexts (rule M9), with the glob; any other filter is refused, naming the forms it takes.
    blob = bucket.blob("foo/bar")
    blob.reload()
    requests.patch(f"{server.url}/storage/v1/b/globbed/o/foo%2Fbar", json={"contexts": {"custom": {"team": {"value": "ops"}}}},
                   timeout=30).raise_for_status()
    listed = requests.get(f"{server.url}/storage/v1/b/globbed/o", params={"filter": 'contexts."team"="ops"', "matchGlob": "foo/**"},
                          timeout=30).json()
    assert [item["name"] for item in listed["items"]] == ["foo/bar"]
    listed = requests.get(f"{server.url}/storage/v1/b/globbed/o", params={"filter": '-contexts."team":*', "matchGlob": "foo/**"},
                          timeout=30).json()
    assert [item["name"] for item in listed["items"]] == ["foo/baz", "foo/foobar"]
    refused = requests.get(f"{server.url}/storage/v1/b/globbed/o", params={"filter": 'name="foo"'}, timeout=30)
    assert refused.status_code == 400 and 'contexts."KEY"="VALUE"' in refused.json()["error"]["message"]


def test_compose_deletes_its_sources_when_asked_and_names_no_type(server, client):
    bucket = client.create_bucket("composed")
    first, second = bucket.blob("part-1.txt"), bucket.blob("part-2.txt")
    first.upload_from_string(b"AAA", content_type="text/plain")
    second.upload_from_string(b"BBB")
    whole = bucket.blob("whole")
    whole.compose([first, second], delete_source_objects=True)
    assert whole.content_type is None and bucket.get_blob("whole").content_type is None
    assert whole.download_as_bytes() == b"AAABBB"
    assert bucket.get_blob("part-1.txt") is None and bucket.get_blob("part-2.txt") is None
    # A failed condition on the destination composes nothing and deletes nothing.
    third = bucket.blob("part-3.txt")
    third.upload_from_string(b"C")
    with pytest.raises(exceptions.PreconditionFailed):
        whole.compose([third], delete_source_objects=True, if_generation_match=1)
    assert bucket.get_blob("part-3.txt") is not None and whole.download_as_bytes() == b"AAABBB"


def test_move_renames_atomically_under_both_sides_conditions(server, client):
    bucket = client.create_bucket("moved")
    source = bucket.blob("inbox/report 1.pdf")
    source.upload_from_string(b"%PDF", content_type="application/pdf")
    source.metadata = {"reviewed": "no"}
    source.patch()
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.move_blob(source, "archive/report 1.pdf", if_source_generation_match=source.generation + 1)
    assert bucket.get_blob("archive/report 1.pdf") is None and bucket.get_blob("inbox/report 1.pdf") is not None
    moved = bucket.move_blob(source, "archive/report 1.pdf", if_source_metageneration_match=2, if_generation_match=0)
    assert moved.generation != source.generation
    assert moved.content_type == "application/pdf" and moved.metadata == {"reviewed": "no"}
    assert bucket.get_blob("inbox/report 1.pdf") is None
    assert bucket.blob("archive/report 1.pdf").download_as_bytes() == b"%PDF"
    # The destination's condition: an object there already and ifGenerationMatch=0 refuses the move.
    other = bucket.blob("inbox/other")
    other.upload_from_string(b"o")
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.move_blob(other, "archive/report 1.pdf", if_generation_match=0)
    assert bucket.get_blob("inbox/other") is not None
