"""The bucket in a browser, in a real headless Chromium (Debian's chromium and chromium-driver, driven by selenium):
the folder tree by the listing rules, paging, an object's metadata, the page with JavaScript off, and the live update
a class sees when a shell changes the bucket. STORESH_SCREENSHOTS=DIR keeps the screenshots (the README's is one)."""
import os
import shutil
import signal
import sys

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
from serving import Server, harness  # noqa: E402

BUCKET = "served"  # named after its file, as storesh -c made it


def browser(javascript=True):
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    binary = shutil.which("chromium")
    if binary:
        options.binary_location = binary
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


@pytest.fixture
def served(tmp_path):
    """storesh serve on a bucket with the seed example of rule L3, a few images, and a folder of 60 files."""
    bucket = tmp_path / "served.bucket"
    script = ["put --raw --data happy correctPrefix/happyItem", "put --raw --data sad wrongPrefix//sadItem",
              "put --raw --data lonely lonelyItem/", "put --data forest --content-type image/jpeg images/forest.jpg",
              "meta set custom.activity=Hiking cacheControl=public,max-age=60 -- images/forest.jpg"]
    script += [f"put --data x files/{number:03}.txt" for number in range(60)]
    status, _, err = harness.storesh(tmp_path, "--bucket", str(bucket), "--quiet", "-c", "\n".join(script))
    assert status == 0, err.decode()
    server = Server(tmp_path, bucket)
    yield server
    status, err = server.stop(signal.SIGINT)
    assert status == 0, err


@pytest.fixture
def chrome():
    driver = browser()
    yield driver
    driver.quit()


def screenshot(driver, name):
    directory = os.environ.get("STORESH_SCREENSHOTS")
    if directory:
        os.makedirs(directory, exist_ok=True)
        driver.save_screenshot(os.path.join(directory, name))


def entries(driver):
    # Read in one script: a live update may replace the list between two reads of its elements.
    return driver.execute_script(
        'return Array.from(document.querySelectorAll("ul.entries li a"), a => a.innerText.split(" ")[0]);')


def wait_for(driver, condition, seconds=15):
    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda _: condition())


def test_the_tree_by_the_listing_rules_and_an_objects_metadata(served, chrome):
    chrome.get(served.url + "/")
    assert chrome.title.startswith("gs://" + BUCKET)
    # Rule L3: prefixes at the root; sadItem is no item under wrongPrefix/.
    assert {"correctPrefix/", "wrongPrefix/", "lonelyItem/", "images/", "files/"} <= set(entries(chrome))
    chrome.find_element(By.LINK_TEXT, "wrongPrefix/").click()
    assert entries(chrome) == [] and "Nothing is listed here." in chrome.page_source
    chrome.back()
    chrome.find_element(By.LINK_TEXT, "images/").click()
    chrome.find_element(By.LINK_TEXT, "forest.jpg").click()
    panel = chrome.find_element(By.CSS_SELECTOR, "section.object").text
    for shown in ("image/jpeg", "public,max-age=60", "activity", "Hiking", "metageneration"):
        assert shown in panel
    screenshot(chrome, "object.png")


def test_paging_follows_the_page_token(served, chrome):
    chrome.get(served.url + "/?path=files%2F")
    assert len(entries(chrome)) == 50
    chrome.find_element(By.LINK_TEXT, "Next page").click()
    assert entries(chrome) == [f"{number:03}.txt" for number in range(50, 60)]
    assert "Last page: no page token." in chrome.page_source


def test_listing_and_metadata_work_with_javascript_off(served):
    driver = browser(javascript=False)
    try:
        driver.get(served.url + "/?path=images%2F&object=images%2Fforest.jpg")
        assert "forest.jpg" in entries(driver)
        assert "Hiking" in driver.find_element(By.CSS_SELECTOR, "section.object").text
        assert "live updates need JavaScript" in driver.find_element(By.ID, "live").text
    finally:
        driver.quit()


def test_a_change_made_in_a_shell_appears_without_reloading(served, chrome, tmp_path):
    chrome.get(served.url + "/?path=images%2F")
    wait_for(chrome, lambda: "Live" in chrome.find_element(By.ID, "live").text)
    # A marker on the window: gone if the page were reloaded, kept by a live update.
    chrome.execute_script("window.storeshMarker = 1")
    status, _, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--quiet", "-c",
                                     "put --data new --content-type text/plain images/new.txt")
    assert status == 0, err.decode()
    wait_for(chrome, lambda: "new.txt" in entries(chrome))
    assert chrome.execute_script("return window.storeshMarker") == 1
    assert "the bucket changed" in chrome.find_element(By.ID, "live").text
    screenshot(chrome, "live.png")


def test_a_denied_request_appears_live_in_the_request_log_with_its_rule(served, chrome, tmp_path):
    rules = tmp_path / "storage.rules"
    rules.write_text("rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n"
                     "    match /images/{all=**} { allow read: if request.auth != null; }\n  }\n}\n")
    status, _, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--quiet", "-c", f"rules load {rules}")
    assert status == 0, err.decode()
    chrome.get(served.url + "/?view=requests")
    wait_for(chrome, lambda: "Live" in chrome.find_element(By.ID, "live").text)
    chrome.execute_script("window.storeshMarker = 1")
    # An app signed out asks for an image's metadata, as the SDK's getMetadata() does.
    path = "/v0/b/" + BUCKET + "/o/images%2Fforest.jpg"
    assert served.request("GET", path).status_code == 403

    def newest():
        return chrome.execute_script('var e = document.querySelector("li.exchange"); return e ? e.innerText : "";')
    wait_for(chrome, lambda: "403" in newest())
    entry = newest()
    assert 'storage.reference().child("images/forest.jpg").getMetadata()' in entry
    assert f"GET {path}" in entry and "403 Forbidden" in entry and "signed out" in entry
    assert "denied get on gs://" + BUCKET + "/images/forest.jpg" in entry and "storage.rules:4" in entry
    assert chrome.find_elements(By.CSS_SELECTOR, "li.exchange.denied p.verdict.denied strong")[0].text == "denied"
    assert chrome.execute_script("return window.storeshMarker") == 1, "updated in place, not reloaded"
    screenshot(chrome, "request-log.png")
