import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// The bucket in a browser (`GET /` of `storesh serve`): a folder as the listing rules show it (prefixes and items,
/// hidden names not shown as items, as an SDK's list would), a page at a time with the page token in the link, an
/// object's metadata with a link to its content, and the security rules in force. Plain HTML with its style inline:
/// it works with JavaScript off, needs nothing from outside the machine, and reads large enough to project, with no
/// meaning carried by colour alone. It reads as the bucket's administrator; its edits are requests to the APIs, made
/// by its script (`editForm`, `identityForm`).
enum BucketPage {
    /// Entries per page: a screenful that still shows paging in a class.
    static let pageSize = 50

    /// Requests shown beside the bucket; the request log's own view (`?view=requests`) shows every one kept.
    static let requestsBeside = 12

    /// The bucket a page shows when it is not the server's first, which every link of the page keeps
    /// (`bucket=NAME`); nil for the first, whose links stay as they were before a server had several.
    @TaskLocal static var shownBucket: String?

    /// The page for `query`: `bucket` (default the first served), `path` (a folder, default the root), `token` (a
    /// page of it), `object` (its metadata); or, with `view=requests`, the request log alone in large type, for a
    /// projector. `buckets`: every bucket served, the first first, listed for the page to switch (rule V6).
    static func answer(
        _ bucket: ServedBucket, among buckets: [String], journal: RequestJournal, query: QueryParameters, pageToken: String
    ) async throws -> Answer {
        try await $shownBucket.withValue(bucket.name == buckets.first ? nil : bucket.name) {
            try await answerShown(bucket, among: buckets, journal: journal, query: query, pageToken: pageToken)
        }
    }

    private static func answerShown(
        _ bucket: ServedBucket, among buckets: [String], journal: RequestJournal, query: QueryParameters, pageToken: String
    ) async throws -> Answer {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        // The page is the bucket as it is now; a reload must ask again.
        headers[.cacheControl] = "no-store"
        // No other page may frame it (a click there would be a click here: rule V8).
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Content-Security-Policy")!] = "frame-ancestors 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        if query["view"] == "requests" {
            let html = document(
                title: "Requests to gs://\(bucket.name) · storesh", heading: "Requests to gs://\(escaped(bucket.name))",
                main: requestLog(journal.recent(RequestJournal.capacity), bucket: bucket.name, full: true), wide: true,
                pageToken: pageToken)
            return Answer(status: .ok, headers: headers, body: ByteBuffer(string: html))
        }
        let folder = StoragePath(normalizing: query["path"] ?? "")
        let token = query["token"].flatMap { $0.isEmpty ? nil : $0 }
        let page = try await bucket.reader().list(
            folder, options: ListOptions(maxResults: pageSize, pageToken: token, includeMetadata: true))
        var object: ObjectMetadata?
        var missing: String?
        if let name = query["object"], !name.isEmpty {
            do {
                object = try await bucket.reader().metadata(of: try ObjectName(name))
            } catch let error as StorageError {
                missing = error.message
            }
        }
        let rules = try? bucket.rulesSession(as: nil).currentRules()
        let html = render(
            bucket: bucket.name, folder: folder, token: token, page: page, object: object, missing: missing, rules: rules,
            requests: journal.recent(requestsBeside), pageToken: pageToken, buckets: buckets)
        return Answer(status: .ok, headers: headers, body: ByteBuffer(string: html))
    }

    /// Text made safe for HTML, in text and in attribute values.
    static func escaped(_ text: String) -> String { MarkupText.escaped(text) }

    /// A link to this page with these parameters.
    static func link(path: String, token: String? = nil, object: String? = nil) -> String {
        var parameters = ["path=" + NameBytes.percentEncoded(path)]
        if let shownBucket { parameters.insert("bucket=" + NameBytes.percentEncoded(shownBucket), at: 0) }
        if let token { parameters.append("token=" + NameBytes.percentEncoded(token)) }
        if let object { parameters.append("object=" + NameBytes.percentEncoded(object)) }
        return "/?" + parameters.joined(separator: "&")
    }

    /// The page around `main`: its head, header and live script. `pageToken` is the server's own
    /// (`OriginPolicy.newPageToken`): the page's script sends it with every change it makes, which a page of another
    /// origin cannot read and so cannot forge.
    static func document(title: String, heading: String, navigation: String = "", main: String, wide: Bool = false, pageToken: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="storesh-page-token" content="\(escaped(pageToken))">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escaped(title))</title>
        <style>\(style)</style>
        </head>
        <body\(wide ? " class=\"projected\"" : "")>
        <header><h1>\(heading)</h1>\(navigation)
        <p id="live" class="note" aria-live="polite">Reload to see changes (live updates need JavaScript).</p>\(wide ? "" : identityForm)</header>
        <main>
        \(main)</main>
        <script>\(liveScript)</script>
        </body>
        </html>

        """
    }

    static func render(
        bucket: String, folder: StoragePath, token: String?, page: ListPage, object: ObjectMetadata?, missing: String?,
        rules: (source: String, origin: String)?, requests: [ServedExchange], pageToken: String, buckets: [String] = []
    ) -> String {
        let prefix = folder.listingPrefix
        var html = """
            <section class="listing" aria-labelledby="listing-title">
            <h2 id="listing-title">\(prefix.isEmpty ? "the root" : escaped(prefix))</h2>

            """
        if token != nil { html += "<p class=\"note\">A later page (from a page token).</p>\n" }
        if page.prefixes.isEmpty && page.items.isEmpty {
            html += "<p class=\"empty\">Nothing is listed here.</p>\n"
        } else {
            html += "<ul class=\"entries\">\n"
            for child in page.prefixes {
                let name = StoragePath(normalizing: child).name
                html += "<li class=\"prefix\"><a href=\"\(escaped(link(path: child + "/")))\">\(escaped(name))/</a> <span class=\"kind\">prefix</span></li>\n"
            }
            let sizes = Dictionary((page.itemMetadata ?? []).map { (ObjectName(stored: $0.fullPath), $0.size) }) { first, _ in first }
            for item in page.items {
                let name = StoragePath(normalizing: item).name
                let size = sizes[ObjectName(stored: item)].map { " <span class=\"size\">\(MessageText.byteCount($0))</span>" } ?? ""
                let current = object.map { NameBytes.sameBytes($0.fullPath, item) } ?? false ? " aria-current=\"true\"" : ""
                // Two names that look alike are two objects (rule P7): the decomposed one says so.
                let form = MessageText.isComposed(name) ? "" : " <span class=\"kind\">(not NFC)</span>"
                html += "<li class=\"item\"><a href=\"\(escaped(link(path: prefix, token: token, object: item)))\"\(current)>\(escaped(name))</a>\(form)\(size) <span class=\"kind\">item</span></li>\n"
            }
            html += "</ul>\n"
        }
        html += uploadForm(bucket: bucket, prefix: prefix)
        html += "<p class=\"count\">\(page.prefixes.count) \(page.prefixes.count == 1 ? "prefix" : "prefixes"), \(page.items.count) \(page.items.count == 1 ? "item" : "items") on this page (at most \(pageSize))</p>\n"
        if let next = page.nextPageToken {
            html += "<p class=\"paging\"><a rel=\"next\" href=\"\(escaped(link(path: prefix, token: next)))\">Next page</a> <span class=\"token\">pageToken \(escaped(next))</span></p>\n"
        } else {
            html += "<p class=\"paging\">Last page: no page token.</p>\n"
        }
        html += "</section>\n"
        if let object {
            html += metadataPanel(bucket: bucket, object: object)
        } else if let missing {
            html += "<section class=\"object\" aria-label=\"object\"><h2>No such object</h2><p>\(escaped(missing))</p></section>\n"
        }
        if let rules {
            // The origin is a file, or already a parenthesised description (the open rules of a new bucket).
            let origin = rules.origin.hasPrefix("(") ? rules.origin : "(\(rules.origin))"
            html += "<section class=\"rules\"><details><summary>Security rules in force \(escaped(origin))</summary><pre>\(escaped(rules.source))</pre></details></section>\n"
        }
        html += requestLog(requests, bucket: bucket, full: false)
        return document(
            title: "gs://\(bucket)/\(prefix) · storesh", heading: "gs://\(escaped(bucket))",
            navigation: breadcrumb(bucket: bucket, folder: folder) + bucketList(buckets, shown: bucket), main: html, pageToken: pageToken)
    }

    /// The requests that reached the server, newest first, each as the SDK call it stands for, the HTTP exchange,
    /// who made it and what the rules decided: the words say allowed or denied, colour adds nothing to them.
    static func requestLog(_ requests: [ServedExchange], bucket: String, full: Bool) -> String {
        var html = "<section class=\"requests\" aria-labelledby=\"requests-title\">\n<h2 id=\"requests-title\">Requests this server received</h2>\n"
        if !full {
            html += "<p class=\"note\"><a href=\"/?view=requests\">The request log alone, in large type</a> · the last \(requestsBeside) here, newest first</p>\n"
        } else {
            html += "<p class=\"note\"><a href=\"/\">Back to gs://\(escaped(bucket))</a> · the last \(RequestJournal.capacity) at most, newest first</p>\n"
        }
        guard !requests.isEmpty else {
            return html + "<p class=\"empty\">None yet: requests from an app, an SDK, the shell on gs:// or curl appear here as they arrive.</p>\n</section>\n"
        }
        html += "<ol class=\"exchanges\">\n"
        for exchange in requests {
            let denied = exchange.verdicts.contains { !$0.allowed }
            html += "<li class=\"exchange\(denied ? " denied" : "")\" id=\"request-\(exchange.number)\">\n"
            if let call = exchange.call { html += "<p class=\"call\"><code>\(escaped(call))</code></p>\n" }
            let time = String(exchange.time.rfc3339.dropFirst(11).prefix(8))
            html += "<p class=\"http\">#\(exchange.number) <code>\(escaped(exchange.method.rawValue)) \(escaped(exchange.target))</code> → <strong>\(exchange.status) \(escaped(exchange.reason))</strong> in \(String(format: "%.1f", exchange.milliseconds)) ms · \(escaped(exchange.caller)) · \(time)</p>\n"
            for verdict in exchange.verdicts {
                // The decision's first word (allowed, denied) in bold: it is what the class looks for.
                let text = verdict.text
                let (word, rest) = text.firstIndex(of: " ").map { (String(text[..<$0]), String(text[$0...])) } ?? (text, "")
                html += "<p class=\"verdict \(verdict.allowed ? "allowed" : "denied")\">Rules: <strong>\(escaped(word))</strong>\(escaped(rest).replacingOccurrences(of: "\n", with: "<br>"))</p>\n"
            }
            if let note = exchange.rulesNote { html += "<p class=\"verdict\">Rules: \(escaped(note))</p>\n" }
            html += "</li>\n"
        }
        return html + "</ol>\n</section>\n"
    }

    /// gs://BUCKET / a / b /, each part a link to its folder.
    /// The buckets this server serves, when it serves more than one: each a link to its root, the one shown marked.
    static func bucketList(_ buckets: [String], shown: String) -> String {
        guard buckets.count > 1 else { return "" }
        let links = buckets.enumerated().map { index, name in
            let href = index == 0 ? "/" : "/?bucket=" + NameBytes.percentEncoded(name)
            let current = name == shown ? " aria-current=\"page\"" : ""
            return "<li><a href=\"\(escaped(href))\"\(current)>gs://\(escaped(name))</a></li>"
        }
        return "<nav class=\"buckets\" aria-label=\"buckets\"><span class=\"note\">Buckets served:</span> <ul>\(links.joined())</ul></nav>"
    }

    static func breadcrumb(bucket: String, folder: StoragePath) -> String {
        var parts = ["<a href=\"\(escaped(link(path: "")))\">gs://\(escaped(bucket))</a>"]
        var path = ""
        for segment in folder.listingPrefix.split(separator: "/", omittingEmptySubsequences: false).dropLast() {
            path += segment + "/"
            parts.append("<a href=\"\(escaped(link(path: path)))\">\(escaped(String(segment)))</a>")
        }
        return "<nav class=\"breadcrumb\" aria-label=\"folder\">" + parts.joined(separator: " / ") + " /</nav>"
    }

    /// Every property of an object, its custom metadata, and a link to its content. Download tokens are counted,
    /// not shown (rule G7: they open the object to anyone who has them).
    static func metadataPanel(bucket: String, object: ObjectMetadata) -> String {
        var rows: [(String, String)] = [
            ("name", object.name), ("fullPath", object.fullPath), ("bucket", object.bucket),
            ("generation", String(object.generation)), ("metageneration", String(object.metageneration)),
            ("size", object.size < 1024 ? MessageText.counted(Int(object.size), "byte") : "\(MessageText.grouped(Int(object.size))) bytes (\(MessageText.byteCount(object.size)))"), ("timeCreated", object.timeCreated.rfc3339),
            ("updated", object.updated.rfc3339), ("md5Hash", object.md5Hash),
        ]
        if let crc32c = object.crc32c { rows.append(("crc32c", crc32c)) }
        for property in WritableProperty.allCases {
            rows.append((property.rawValue, object[property] ?? "(not set)"))
        }
        var html = "<section class=\"object\" aria-labelledby=\"object-title\">\n<h2 id=\"object-title\">\(escaped(object.fullPath))</h2>\n<dl class=\"metadata\">\n"
        for (key, value) in rows { html += "<dt>\(escaped(key))</dt><dd>\(escaped(value))</dd>\n" }
        html += "</dl>\n<h3>customMetadata</h3>\n"
        var custom = object.customMetadata
        let tokens = custom.removeValue(forKey: ObjectMetadata.downloadTokensKey)
        if custom.isEmpty {
            html += "<p class=\"empty\">(none)</p>\n"
        } else {
            html += "<dl class=\"custom\">\n"
            for (key, value) in custom.sortedByKeyBytes { html += "<dt>\(escaped(key))</dt><dd>\(escaped(value))</dd>\n" }
            html += "</dl>\n"
        }
        if let tokens {
            let count = tokens.split(separator: ",").count
            html += "<p class=\"note\">\(count) download \(count == 1 ? "token" : "tokens") (not shown: a token opens the object to anyone who has it)</p>\n"
        }
        let download = "/download/storage/v1/b/\(NameBytes.percentEncoded(bucket))/o/\(NameBytes.percentEncoded(object.fullPath))?alt=media"
        html += "<p><a class=\"download\" href=\"\(escaped(download))\" download>Download the content</a></p>\n"
        html += editForm(bucket: bucket, object: object, custom: custom)
        return html + "</section>\n"
    }

    /// Where the page's edits go as the owner: the Cloud Storage JSON API of this server, as any client's.
    static func objectResource(bucket: String, name: String) -> String {
        "/storage/v1/b/\(NameBytes.percentEncoded(bucket))/o/\(NameBytes.percentEncoded(name))"
    }

    /// Where they go as a user or signed out: the Firebase v0 API, whose requests the security rules decide, as an
    /// app's SDK calls do.
    static func firebaseResource(bucket: String, name: String? = nil) -> String {
        "/v0/b/\(NameBytes.percentEncoded(bucket))/o" + (name.map { "/" + NameBytes.percentEncoded($0) } ?? "")
    }

    /// Whom the page's edits, deletions and uploads are made as: the owner (the JSON API with no rules, as the
    /// Emulator Suite's page edits), or, to see the rules decide, signed out or signed in as a uid (an unsigned
    /// emulator ID token, as the Firebase emulators take). Kept for the browser tab; shown only where scripts run.
    static let identityForm = """

        <form class="identity" hidden>
        <p><label>Edit and upload as <select name="as">
        <option value="owner">the owner: rules do not apply</option>
        <option value="signed-out">signed out: the rules decide</option>
        <option value="user">signed in as this uid: the rules decide</option>
        </select></label> <label>uid <input name="uid" size="14" placeholder="ada"></label></p>
        </form>
        """

    /// The object's writable properties and custom metadata as a form, and its deletion. The page's script sends
    /// them to the JSON API with the generation and metageneration shown (`ifGenerationMatch`,
    /// `ifMetagenerationMatch`), so that a change made meanwhile, by anyone, is refused rather than overwritten;
    /// they are requests like any client's, in the request log. Without a script the form stays hidden.
    static func editForm(bucket: String, object: ObjectMetadata, custom: [String: String]) -> String {
        var html = """
            <p class="note scriptless">Editing needs JavaScript: the page sends its changes to this server's API.</p>
            <form class="edit" hidden data-object="\(escaped(objectResource(bucket: bucket, name: object.fullPath)))" \
            data-firebase="\(escaped(firebaseResource(bucket: bucket, name: object.fullPath)))" \
            data-generation="\(object.generation)" data-metageneration="\(object.metageneration)" \
            data-name="\(escaped(MessageText.name(object.fullPath)))" data-folder="\(escaped(link(path: NameBytes.folder(ofPrefix: object.fullPath))))">
            <h3>Edit</h3>
            <p class="note">As chosen at the top of the page (the owner, unless you choose a user), on the object as shown (generation \(object.generation), metageneration \(object.metageneration)): a change made since is refused, not overwritten. An emptied field is removed.</p>

            """
        for property in WritableProperty.allCases {
            let value = escaped(object[property] ?? "")
            html += "<p><label>\(property.rawValue) <input class=\"property\" name=\"\(property.rawValue)\" value=\"\(value)\" data-was=\"\(value)\"></label></p>\n"
        }
        html += "<fieldset><legend>customMetadata</legend>\n"
        let rows = custom.sortedByKeyBytes.map { ($0.key, $0.value) } + [("", "")]
        for (key, value) in rows {
            html += "<p class=\"custom-row\"><input class=\"key\" aria-label=\"key\" value=\"\(escaped(key))\" data-was=\"\(escaped(key))\" placeholder=\"new key\"> <input class=\"value\" aria-label=\"value of \(escaped(key.isEmpty ? "the new key" : key))\" value=\"\(escaped(value))\" data-was=\"\(escaped(value))\"></p>\n"
        }
        html += """
            </fieldset>
            <p><button type="submit">Save</button> <button type="button" class="delete">Delete \(escaped(object.name))</button></p>
            <p class="outcome" role="status"></p>
            </form>

            """
        return html
    }

    /// Files from the computer into the folder shown, each only where no object has its name (`ifGenerationMatch=0`).
    static func uploadForm(bucket: String, prefix: String) -> String {
        """
        <form class="upload" hidden data-upload="/upload/storage/v1/b/\(escaped(NameBytes.percentEncoded(bucket)))/o" \
        data-firebase="\(escaped(firebaseResource(bucket: bucket)))" data-prefix="\(escaped(prefix))">
        <p><label>Upload into \(prefix.isEmpty ? "the root" : escaped(prefix)) <input type="file" name="files" multiple></label> <button type="submit">Upload</button></p>
        <p class="outcome" role="status"></p>
        </form>

        """
    }

    /// The page keeps itself current where scripts run: it listens to `/_storesh/events` and, at each change of the
    /// bucket, reads itself again and puts the new `main` in place (everything works without it, by reloading).
    static let liveScript = """
        (function () {
          if (!window.EventSource || !window.fetch || !window.DOMParser) return;
          var live = document.getElementById("live");
          var shown = new URLSearchParams(location.search).get("bucket");
          var events = new EventSource("/_storesh/events" + (shown ? "?bucket=" + encodeURIComponent(shown) : ""));
          events.onopen = function () { live.textContent = "Live: changes to the bucket appear here as they happen."; };
          // The forms are the script's: shown only where it runs.
          function showForms() {
            document.querySelectorAll("form.edit, form.upload, form.identity").forEach(function (form) { form.hidden = false; });
            document.querySelectorAll(".scriptless").forEach(function (note) { note.hidden = true; });
          }
          showForms();
          // Whom edits are made as, kept for this tab (the header is not replaced by live updates).
          var identity = document.querySelector("form.identity");
          if (identity) {
            identity.elements.as.value = sessionStorage.getItem("storesh.as") || "owner";
            identity.elements.uid.value = sessionStorage.getItem("storesh.uid") || "";
            identity.addEventListener("change", function () {
              sessionStorage.setItem("storesh.as", identity.elements.as.value);
              sessionStorage.setItem("storesh.uid", identity.elements.uid.value.trim());
            });
            identity.addEventListener("submit", function (event) { event.preventDefault(); });
          }
          function base64url(text) {
            return btoa(unescape(encodeURIComponent(text))).replace(/[+]/g, "-").replace(/[/]/g, "_").replace(/=+$/, "");
          }
          // Where a change goes and with which headers: the owner's to the JSON API; anyone else's to the v0 API,
          // which the rules decide, signed in with an unsigned emulator ID token (null: no uid was given).
          var pageToken = document.querySelector('meta[name="storesh-page-token"]').content;
          function route(json, headers) {
            headers["X-Storesh-Page-Token"] = pageToken;
            var as = identity ? identity.elements.as.value : "owner", uid = identity ? identity.elements.uid.value.trim() : "";
            if (as === "owner") return { url: json, headers: headers, who: "as the owner" };
            if (as === "user" && !uid) return null;
            if (as === "user") {
              headers.Authorization = "Firebase " + base64url(JSON.stringify({ alg: "none", typ: "JWT" })) + "." +
                base64url(JSON.stringify({ sub: uid, user_id: uid })) + ".";
            }
            return { url: null, headers: headers, who: as === "user" ? "as " + uid : "signed out" };
          }
          var noUid = "Give a uid at the top of the page to act as a signed-in user.";
          // One read of the page at a time, and at most one more after it, however many events arrive. An edit
          // being typed, or files chosen, are not swept away: the page waits until they are sent (an edit's
          // preconditions catch a change made meanwhile).
          var reading = false, again = null;
          function refresh(why) {
            if (reading || document.querySelector("form[data-dirty]")) {
              again = why;
              if (!reading) live.textContent = "The bucket changed (" + why + "): shown once your edit or upload is sent.";
              return;
            }
            reading = true;
            fetch(location.href, { cache: "no-store" }).then(function (answer) { return answer.text(); }).then(function (html) {
              var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
              if (next) {
                var outcomes = Array.from(document.querySelectorAll("main .outcome"), function (p) { return p.textContent; });
                document.querySelector("main").replaceWith(next);
                showForms();
                // What the last edit did stays in view.
                document.querySelectorAll("main .outcome").forEach(function (p, index) { if (outcomes[index]) p.textContent = outcomes[index]; });
              }
              live.textContent = "Updated at " + new Date().toLocaleTimeString() + ": " + why + ".";
            }).finally(function () {
              reading = false;
              if (again) { var later = again; again = null; refresh(later); }
            });
          }
          function failure(answer) {
            return answer.json().then(function (body) { return body.error && body.error.message || answer.statusText; },
                                      function () { return answer.statusText; });
          }
          function touched(event) {
            var form = event.target.closest && event.target.closest("form.edit, form.upload");
            if (form) form.dataset.dirty = "1";
          }
          document.addEventListener("input", touched);
          document.addEventListener("change", touched);
          document.addEventListener("submit", function (event) {
            var form = event.target;
            if (form.matches("form.edit")) { event.preventDefault(); save(form); }
            if (form.matches("form.upload")) { event.preventDefault(); upload(form); }
          });
          document.addEventListener("click", function (event) {
            if (event.target.matches && event.target.matches("form.edit button.delete")) remove(event.target.form);
          });
          function conditions(form, withMetageneration) {
            return "?ifGenerationMatch=" + form.dataset.generation + (withMetageneration ? "&ifMetagenerationMatch=" + form.dataset.metageneration : "");
          }
          function settle(form, text) {
            delete form.dataset.dirty;
            form.querySelector(".outcome").textContent = text;
            refresh(text.replace(/[.]$/, ""));
          }
          // Only what changed: a property set, or null to remove it; custom keys likewise, under metadata.
          function save(form) {
            var body = {}, metadata = {}, before = {}, after = {};
            form.querySelectorAll("input.property").forEach(function (input) {
              if (input.value !== input.dataset.was) body[input.name] = input.value === "" ? null : input.value;
            });
            form.querySelectorAll(".custom-row").forEach(function (row) {
              var key = row.querySelector(".key"), value = row.querySelector(".value");
              if (key.dataset.was) before[key.dataset.was] = value.dataset.was;
              if (key.value !== "" && value.value !== "") after[key.value] = value.value;
            });
            Object.keys(before).forEach(function (key) { if (!(key in after)) metadata[key] = null; });
            Object.keys(after).forEach(function (key) { if (before[key] !== after[key]) metadata[key] = after[key]; });
            if (Object.keys(metadata).length) body.metadata = metadata;
            if (!Object.keys(body).length) { form.querySelector(".outcome").textContent = "Nothing to save: no field changed."; return; }
            var to = route(form.dataset.object, { "Content-Type": "application/json" });
            if (!to) { form.querySelector(".outcome").textContent = noUid; return; }
            fetch((to.url || form.dataset.firebase) + conditions(form, true), {
              method: "PATCH", headers: to.headers, body: JSON.stringify(body)
            }).then(function (answer) {
              if (answer.ok) return answer.json().then(function (object) { settle(form, "Saved " + to.who + ": metageneration " + object.metageneration + "."); });
              if (answer.status === 412) return settle(form, "Not saved: the object changed since the page showed it. Nothing was changed; it is shown as it is now.");
              return failure(answer).then(function (message) { settle(form, "Not saved " + to.who + " (" + answer.status + "): " + message); });
            }, function (error) { form.querySelector(".outcome").textContent = "Not saved: " + error; });
          }
          function remove(form) {
            // A deletion is asked about first: nothing is deleted by a click alone.
            if (!window.confirm("Delete " + form.dataset.name + "? This cannot be undone here.")) return;
            var to = route(form.dataset.object, {});
            if (!to) { form.querySelector(".outcome").textContent = noUid; return; }
            fetch((to.url || form.dataset.firebase) + conditions(form, false), { method: "DELETE", headers: to.headers }).then(function (answer) {
              if (answer.ok) { location.href = form.dataset.folder; return; }
              if (answer.status === 412) return settle(form, "Not deleted: the object changed since the page showed it. It is shown as it is now.");
              return failure(answer).then(function (message) { settle(form, "Not deleted " + to.who + " (" + answer.status + "): " + message); });
            });
          }
          // One file after another; each only where nothing has its name (ifGenerationMatch=0).
          function upload(form) {
            var files = Array.from(form.querySelector("input[type=file]").files), done = [], outcome = form.querySelector(".outcome");
            if (!files.length) { outcome.textContent = "Choose a file first."; return; }
            if (!route("", {})) { outcome.textContent = noUid; return; }
            (function next() {
              if (!files.length) { settle(form, done.join(" ")); return; }
              var file = files.shift(), name = form.dataset.prefix + file.name;
              var to = route(form.dataset.upload + "?uploadType=media&", { "Content-Type": file.type || "application/octet-stream" });
              fetch((to.url || form.dataset.firebase + "?") + "ifGenerationMatch=0&name=" + encodeURIComponent(name), {
                method: "POST", headers: to.headers, body: file
              }).then(function (answer) {
                if (answer.ok) { done.push("Uploaded " + name + " " + to.who + "."); return; }
                if (answer.status === 412) { done.push(name + " exists: not replaced."); return; }
                return failure(answer).then(function (message) { done.push(name + " not uploaded " + to.who + " (" + answer.status + "): " + message); });
              }).then(next);
            })();
          }
          events.addEventListener("change", function () { refresh("the bucket changed"); });
          events.addEventListener("request", function () { refresh("a request arrived"); });
        })();
        """

    /// Large type for a projector, contrast without colour, one column on a narrow screen.
    static let style = """
        body{font:20px/1.5 system-ui,sans-serif;margin:0 auto;max-width:72em;padding:1em;color:#111;background:#fff}
        h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.3em;border-bottom:2px solid #111}
        main{display:grid;grid-template-columns:repeat(auto-fit,minmax(22em,1fr));gap:1.5em}
        nav.buckets ul{display:inline;list-style:none;padding:0}nav.buckets li{display:inline;margin-right:1em}nav.buckets [aria-current]{font-weight:bold}
        ul.entries{list-style:none;padding:0}ul.entries li{padding:.15em 0;border-bottom:1px solid #ccc}
        li.prefix a{font-weight:bold}.kind,.size,.token,.count,.note{color:#444;font-size:.85em}
        a[aria-current]{text-decoration:underline double}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
        dt{font-weight:bold}dd{margin:0;word-break:break-all}pre{white-space:pre-wrap;font-size:.8em}
        .rules,.requests{grid-column:1/-1}
        ol.exchanges{list-style:none;padding:0}li.exchange{border-left:6px solid #888;padding:.3em .8em;margin:.6em 0}
        li.exchange.denied{border-left:6px double #111}li.exchange p{margin:.15em 0}.call code{font-size:1.05em}
        .http{font-size:.9em}.verdict{font-size:.9em}code{word-break:break-all}
        form input,form button,form select{font:inherit;max-width:100%}fieldset{border:1px solid #888}.outcome{font-weight:bold}
        body.projected{font-size:28px;max-width:none}body.projected main{display:block}
        """
}
