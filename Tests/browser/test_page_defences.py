"""Rule V8 in a real browser (issue 37): a page of another origin the developer happens to visit, and a document
stored in the bucket, can neither change the bucket nor use storesh serve's page. The attacker's pages are served by
a server of this test's own at http://attacker.test:PORT (the browser maps the name to 127.0.0.1), an origin the
origin policy does not know."""
import http.server
import threading

import pytest
import requests
from selenium.webdriver.common.by import By

from test_web_view import BUCKET, browser, served, wait_for  # noqa: F401  (fixture)

SYNC_RESET = "var x = new XMLHttpRequest(); x.open('POST', '/internal/reset', false); x.send(); document.title = 'ran';"
SVG = f'<svg xmlns="http://www.w3.org/2000/svg"><script>{SYNC_RESET}</script></svg>'.encode()
HTML = f"<html><head><title>page</title></head><body><script>{SYNC_RESET}</script></body></html>".encode()


@pytest.fixture
def attacker(tmp_path):
    """Serves the pages a test writes into its folder, from another origin; yields (folder, origin)."""
    folder = tmp_path / "attacker"
    folder.mkdir()
    handler = lambda *arguments: http.server.SimpleHTTPRequestHandler(*arguments, directory=str(folder))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://attacker.test:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def chrome():
    # The attacker's name leads to this machine, as a site of one's own would.
    driver = browser(arguments=("--host-resolver-rules=MAP attacker.test 127.0.0.1",))
    yield driver
    driver.quit()


def store(served, name, content, content_type, disposition=None):
    answer = served.request("POST", f"/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media", "name": name},
                            data=content, headers={"Content-Type": content_type})
    assert answer.status_code == 200, answer.text
    if disposition:
        quoted = requests.utils.quote(name, safe="")
        assert served.request("PATCH", f"/storage/v1/b/{BUCKET}/o/{quoted}", json={"contentDisposition": disposition}).status_code == 200


def count(served):
    listed = served.request("GET", f"/storage/v1/b/{BUCKET}/o", params={"maxResults": 1000}).json()
    return len(listed.get("items", []))


def test_stored_svg_and_html_with_script_run_nothing_and_change_nothing(served, chrome, attacker):
    store(served, "users/mallory/avatar.svg", SVG, "image/svg+xml")
    store(served, "site/page.html", HTML, "text/html", disposition="inline")
    before = count(served)
    folder, origin = attacker
    targets = [served.url + f"/download/storage/v1/b/{BUCKET}/o/{requests.utils.quote(name, safe='')}?alt=media"
               for name in ("users/mallory/avatar.svg", "site/page.html")]
    # Opened every way a page can: followed from another origin, framed, embedded, and typed into the address bar.
    (folder / "open.html").write_text(
        "<html><body>" + "".join(f'<iframe src="{url}"></iframe><object data="{url}"></object><embed src="{url}">'
                                 for url in targets) + "</body></html>")
    chrome.get(origin + "/open.html")
    for url in targets:
        chrome.get(url)
        assert chrome.title != "ran"
    # Each script, had it run, would have emptied the bucket before its page finished loading (a synchronous request).
    assert count(served) == before
    # What the server sends makes it so: a document with no script and no origin of the server's.
    answer = requests.get(targets[1], headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, timeout=10)
    assert answer.headers["Content-Disposition"].startswith("attachment") and "sandbox" in answer.headers["Content-Security-Policy"]


def test_the_page_framed_by_another_origin_is_refused(served, chrome, attacker):
    folder, origin = attacker
    (folder / "frame.html").write_text(
        f'<html><body><iframe id="victim" style="opacity:0.01" src="{served.url}/?path=files%2F&object=files%2F000.txt">'
        "</iframe></body></html>")
    chrome.get(origin + "/frame.html")
    chrome.switch_to.frame(chrome.find_element(By.ID, "victim"))
    # Refused by the browser: the frame holds no part of the page, so there is nothing to click.
    assert chrome.find_elements(By.CSS_SELECTOR, "form.edit") == []
    assert chrome.find_elements(By.ID, "live") == [] and "storesh-page-token" not in chrome.page_source
    chrome.switch_to.default_content()
    assert served.request("GET", f"/storage/v1/b/{BUCKET}/o/files%2F000.txt").status_code == 200


def test_a_forged_cross_origin_form_post_changes_nothing(served, chrome, attacker):
    folder, origin = attacker
    before = count(served)
    forms = {
        "reset.html": f'<form method="POST" action="{served.url}/internal/reset"></form>',
        "upload.html": f'<form method="POST" enctype="text/plain" action="{served.url}/upload/storage/v1/b/{BUCKET}/o'
                       '?uploadType=media&amp;name=forged.txt"><input name="x" value="forged"></form>',
        "delete.html": f'<form method="POST" action="{served.url}/v0/b/{BUCKET}/o/files%2F000.txt?delete_token=x">'
                       "</form>",
    }
    for page, form in forms.items():
        (folder / page).write_text(f"<html><body>{form}<script>document.forms[0].submit()</script></body></html>")
        chrome.get(origin + "/" + page)
        # The browser follows the post to the server's answer: a refusal.
        wait_for(chrome, lambda: chrome.current_url.startswith(served.url))
        assert "storesh serve refused a request from the web page at " + origin in chrome.page_source
    assert count(served) == before
    assert served.request("GET", f"/storage/v1/b/{BUCKET}/o/forged.txt").status_code == 404


def test_a_deletion_from_the_page_asks_first(served, chrome):
    chrome.get(served.url + "/?path=files%2F&object=files%2F001.txt")
    wait_for(chrome, lambda: "Live" in chrome.find_element(By.ID, "live").text)
    chrome.execute_script('window.confirm = function () { window.asked = true; return false; };')
    chrome.execute_script('document.querySelector("form.edit button.delete").click();')
    assert chrome.execute_script("return window.asked === true;")
    assert served.request("GET", f"/storage/v1/b/{BUCKET}/o/files%2F001.txt").status_code == 200
