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


def browser(javascript=True, arguments=()):
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", *arguments):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    # The console, to see what the page's policy refused.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
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


def test_the_page_runs_its_own_script_and_style_under_its_policy_and_nothing_is_refused(served, chrome):
    """The style and script come from the server beside the page (issue 55); the policy forbids anything inline,
    and the page still works whole: styled, its forms shown, live."""
    chrome.get(served.url + "/?path=images/&object=images/forest.jpg")
    wait_for(chrome, lambda: chrome.find_element(By.ID, "live").text.startswith("Live:"))
    assert chrome.execute_script("return getComputedStyle(document.body).fontSize") == "20px"
    assert chrome.find_element(By.CSS_SELECTOR, "form.edit").is_displayed()
    refused = [entry["message"] for entry in chrome.get_log("browser") if "Content Security Policy" in entry["message"]]
    assert refused == []


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
    assert f"GET /v0/b/{BUCKET}/o/images/forest.jpg" in entry and "403 Forbidden" in entry and "signed out" in entry
    assert "denied get on gs://" + BUCKET + "/images/forest.jpg" in entry and "storage.rules:4" in entry
    assert chrome.find_elements(By.CSS_SELECTOR, "li.exchange.denied p.verdict.denied strong")[0].text == "denied"
    assert chrome.execute_script("return window.storeshMarker") == 1, "updated in place, not reloaded"
    screenshot(chrome, "request-log.png")


def retyped(driver, selector, text):
    """Replaces the text of the field at `selector`; False when a live update replaced it meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    try:
        field = driver.find_element(By.CSS_SELECTOR, selector)
        field.clear()
        field.send_keys(text)
        return field.get_attribute("value") == text and driver.execute_script(
            'return !!document.querySelector("form.edit[data-dirty]");')
    except StaleElementReferenceException:
        return False


def chosen(driver, path):
    """Chooses the file at `path` in the upload form; False when a live update replaced the form meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    try:
        driver.find_element(By.CSS_SELECTOR, "form.upload input[type=file]").send_keys(path)
        return driver.execute_script('return !!document.querySelector("form.upload[data-dirty]");')
    except StaleElementReferenceException:
        return False


def meta(tmp_path, served, name):
    status, out, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--json", "-c", f"meta get {name}")
    assert status == 0, err.decode()
    import json
    return json.loads(out)


def test_an_edit_from_the_page_is_refused_after_a_concurrent_change_then_saved_and_files_upload(served, chrome, tmp_path):
    chrome.get(served.url + "/?path=images%2F&object=images%2Fforest.jpg")
    wait_for(chrome, lambda: "Live" in chrome.find_element(By.ID, "live").text)
    assert chrome.find_element(By.CSS_SELECTOR, "form.edit").is_displayed()
    # The first key typed holds live updates back; until then one may replace the form.
    wait_for(chrome, lambda: retyped(chrome, "form.edit input[name=cacheControl]", "no-store"))
    # Meanwhile a shell changes the object the page shows.
    status, _, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--quiet", "-c",
                                     "meta set contentLanguage=fr -- images/forest.jpg")
    assert status == 0, err.decode()
    chrome.find_element(By.CSS_SELECTOR, "form.edit button[type=submit]").click()

    def outcome():
        return chrome.execute_script('var o = document.querySelector("form.edit .outcome"); return o ? o.textContent : "";')
    wait_for(chrome, lambda: outcome().startswith("Not saved: the object changed"))
    shown = meta(tmp_path, served, "images/forest.jpg")
    assert shown["cacheControl"] == "public,max-age=60" and shown["contentLanguage"] == "fr", "nothing of the page's edit landed"
    # The page now shows the object as it is; the same edit on it is saved, with a key added and one removed.
    wait_for(chrome, lambda: chrome.execute_script(
        'return document.querySelector("form.edit").dataset.metageneration') == str(shown["metageneration"]))
    wait_for(chrome, lambda: retyped(chrome, "form.edit input[name=cacheControl]", "no-store"))
    form = chrome.find_element(By.CSS_SELECTOR, "form.edit")
    rows = form.find_elements(By.CSS_SELECTOR, ".custom-row")
    rows[0].find_element(By.CSS_SELECTOR, ".value").clear()  # activity: removed
    rows[-1].find_element(By.CSS_SELECTOR, ".key").send_keys("reviewed")
    rows[-1].find_element(By.CSS_SELECTOR, ".value").send_keys("yes")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(chrome, lambda: outcome().startswith("Saved as the owner: metageneration"))
    saved = meta(tmp_path, served, "images/forest.jpg")
    assert saved["cacheControl"] == "no-store" and saved["contentLanguage"] == "fr"
    custom = {key: value for key, value in saved.get("customMetadata", {}).items() if key != "firebaseStorageDownloadTokens"}
    assert custom == {"reviewed": "yes"}
    assert int(saved["metageneration"]) == int(shown["metageneration"]) + 1
    screenshot(chrome, "edit.png")

    # A file from the computer into the folder shown; a second upload of the same name replaces nothing.
    upload = tmp_path / "note.txt"
    upload.write_text("from the page")
    for attempt in ("Uploaded images/note.txt as the owner.", "images/note.txt exists: not replaced."):
        wait_for(chrome, lambda: chosen(chrome, str(upload)))
        chrome.find_element(By.CSS_SELECTOR, "form.upload button[type=submit]").click()
        wait_for(chrome, lambda: attempt in chrome.execute_script(
            'return document.querySelector("form.upload .outcome").textContent;'))
    wait_for(chrome, lambda: "note.txt" in entries(chrome))
    status, out, _ = harness.storesh(tmp_path, "--bucket", served.bucket_file, "-c", "cat images/note.txt")
    assert status == 0 and out == b"from the page"

    # The page's requests are in the request log like any client's: the refused PATCH and the saved one.
    chrome.get(served.url + "/?view=requests")
    log = chrome.execute_script('return document.querySelector("section.requests").innerText;')
    assert "objects.patch (Cloud Storage JSON API)" in log and "412 Precondition Failed" in log and "200 OK" in log


def test_a_delete_from_the_page_is_refused_after_the_object_was_rewritten_then_done(served, chrome, tmp_path):
    chrome.get(served.url + "/?path=files%2F&object=files%2F000.txt")
    wait_for(chrome, lambda: "Live" in chrome.find_element(By.ID, "live").text)
    shown = chrome.execute_script('return document.querySelector("form.edit").dataset.generation;')
    status, _, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--quiet", "-c", "put --data newer files/000.txt")
    assert status == 0, err.decode()
    # Clicked in the page's own script: a live update may replace the button between a find and a click. The page
    # asks before it deletes; here the answer is yes.
    chrome.execute_script('window.confirm = function () { return true; };')
    chrome.execute_script('document.querySelector("form.edit button.delete").click();')
    wait_for(chrome, lambda: "Not deleted: the object changed" in chrome.execute_script(
        'var o = document.querySelector("form.edit .outcome"); return o ? o.textContent : "";'))
    status, out, _ = harness.storesh(tmp_path, "--bucket", served.bucket_file, "-c", "cat files/000.txt")
    assert status == 0 and out == b"newer", "the rewritten object is still there"
    # The page now shows the new generation; deleting that one is done, and the folder is shown.
    wait_for(chrome, lambda: chrome.execute_script('return document.querySelector("form.edit").dataset.generation;') != shown)
    chrome.execute_script('document.querySelector("form.edit button.delete").click();')
    wait_for(chrome, lambda: "object=" not in chrome.current_url and "001.txt" in entries(chrome))
    assert "000.txt" not in entries(chrome)
    status, _, _ = harness.storesh(tmp_path, "--bucket", served.bucket_file, "-c", "meta get files/000.txt")
    assert status == 1


def act_as(driver, who, uid=""):
    """Chooses whom the page's edits are made as, as a person would with the select and the uid field."""
    driver.execute_script(
        'var f = document.querySelector("form.identity"); f.elements.as.value = arguments[0];'
        ' f.elements.uid.value = arguments[1]; f.dispatchEvent(new Event("change", {bubbles: true}));', who, uid)


def test_edits_as_a_user_or_signed_out_are_decided_by_the_rules_and_logged_with_them(served, chrome, tmp_path):
    rules = tmp_path / "storage.rules"
    rules.write_text("rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n"
                     "    match /users/{uid}/{all=**} { allow read, write: if request.auth != null && request.auth.uid == uid; }\n"
                     "  }\n}\n")
    status, _, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--quiet", "-c",
                                     f"put --data hi users/ada/profile.txt\nrules load {rules}")
    assert status == 0, err.decode()
    chrome.get(served.url + "/?path=users%2Fada%2F&object=users%2Fada%2Fprofile.txt")
    wait_for(chrome, lambda: chrome.execute_script('return !document.querySelector("form.identity").hidden;'))
    assert chrome.find_element(By.CSS_SELECTOR, "form.identity").is_displayed()

    def outcome(form="edit"):
        return chrome.execute_script(f'var o = document.querySelector("form.{form} .outcome"); return o ? o.textContent : "";')

    def save(expected):
        wait_for(chrome, lambda: retyped(chrome, "form.edit input[name=cacheControl]", "no-cache"))
        chrome.execute_script('document.querySelector("form.edit button[type=submit]").click();')
        wait_for(chrome, lambda: outcome().startswith(expected))

    act_as(chrome, "signed-out")
    save("Not saved signed out (403)")
    act_as(chrome, "user", "bob")
    save("Not saved as bob (403)")
    act_as(chrome, "user", "")
    save("Give a uid")
    def as_ada(command):
        # The rules bind the shell too: it reads as ada.
        status, out, err = harness.storesh(tmp_path, "--bucket", served.bucket_file, "--json", "-c", f"login ada\n{command}")
        assert status == 0, err.decode()
        return out

    def profile():
        import json
        return json.loads(as_ada("meta get users/ada/profile.txt").splitlines()[-1])
    assert "cacheControl" not in profile(), "no refused edit landed"
    act_as(chrome, "user", "ada")
    save("Saved as ada: metageneration 2")
    assert profile()["cacheControl"] == "no-cache"
    # The choice stays for the tab, through a reload; an upload as ada into her folder is hers to make.
    chrome.get(served.url + "/?path=users%2Fada%2F")
    # The page's script ran (a live update may already have replaced the "Live" line).
    wait_for(chrome, lambda: chrome.execute_script('return !document.querySelector("form.identity").hidden;'))
    assert chrome.execute_script('return document.querySelector("form.identity").elements.uid.value;') == "ada"
    upload = tmp_path / "avatar.txt"
    upload.write_text("ada's")
    wait_for(chrome, lambda: chosen(chrome, str(upload)))
    chrome.execute_script('document.querySelector("form.upload button[type=submit]").click();')
    wait_for(chrome, lambda: "Uploaded users/ada/avatar.txt as ada." in outcome("upload"))
    import json
    assert json.loads(as_ada("cat users/ada/avatar.txt").splitlines()[-1])["text"] == "ada's"

    # The class sees each attempt in the request log: who made it, and the rule's decision.
    chrome.get(served.url + "/?view=requests")
    log = chrome.execute_script('return document.querySelector("section.requests").innerText;')
    assert "signed out" in log and "signed in as bob" in log and "signed in as ada" in log
    assert "denied update on gs://" + BUCKET + "/users/ada/profile.txt" in log
    assert "403 Forbidden" in log and "storage.rules:4" in log
