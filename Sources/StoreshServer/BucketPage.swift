import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// The bucket in a browser (`GET /` of `storesh serve`): a folder as the listing rules show it (prefixes and items,
/// hidden names not shown as items, as an SDK's list would), a page at a time with the page token in the link, an
/// object's metadata with a link to its content, and the security rules in force. Plain HTML (written by `HTML`),
/// its style and script served beside it (`PageAssets`): it works with JavaScript off, needs nothing from outside the machine, and reads large enough to project, with no
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
        _ bucket: ServedBucket, among buckets: [String], journal: RequestJournal, query: QueryParameters,
        pageToken: String
    ) async throws -> Answer {
        try await $shownBucket.withValue(bucket.name == buckets.first ? nil : bucket.name) {
            try await answerShown(bucket, among: buckets, journal: journal, query: query, pageToken: pageToken)
        }
    }

    private static func answerShown(
        _ bucket: ServedBucket, among buckets: [String], journal: RequestJournal, query: QueryParameters,
        pageToken: String
    ) async throws -> Answer {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        // The page is the bucket as it is now; a reload must ask again. (Its security headers are the
        // PageSecurityMiddleware's.)
        headers[.cacheControl] = "no-store"
        if query["view"] == "requests" {
            let html = document(
                title: "Requests to gs://\(bucket.name) · storesh", heading: "Requests to gs://\(bucket.name)",
                main: requestLog(journal.recent(RequestJournal.capacity), bucket: bucket.name, full: true), wide: true,
                pageToken: pageToken)
            return Answer(status: .ok, headers: headers, body: ByteBuffer(string: html.markup))
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
            bucket: bucket.name, folder: folder, token: token, page: page, object: object, missing: missing,
            rules: rules,
            requests: journal.recent(requestsBeside), pageToken: pageToken, buckets: buckets)
        return Answer(status: .ok, headers: headers, body: ByteBuffer(string: html.markup))
    }

    /// A link to this page with these parameters.
    static func link(path: String, token: String? = nil, object: String? = nil) -> String {
        var parameters = ["path=" + NameBytes.percentEncoded(path)]
        if let shownBucket { parameters.insert("bucket=" + NameBytes.percentEncoded(shownBucket), at: 0) }
        if let token { parameters.append("token=" + NameBytes.percentEncoded(token)) }
        if let object { parameters.append("object=" + NameBytes.percentEncoded(object)) }
        return "/?" + parameters.joined(separator: "&")
    }

    /// The page around `main`: its head, header, style and live script (`PageAssets`). `pageToken` is the server's
    /// own (`OriginPolicy.newPageToken`): the page's script sends it with every change it makes, which a page of
    /// another origin cannot read and so cannot forge.
    static func document(
        title: String, heading: HTML, navigation: HTML = "", main: HTML, wide: Bool = false, pageToken: String
    ) -> HTML {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="storesh-page-token" content="\(pageToken)">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title)</title>
        <link rel="stylesheet" href="\(PageAssets.style.link)">
        </head>
        <body\(" class=\"projected\"", if: wide)>
        <header><h1>\(heading)</h1>\(navigation)
        <p id="live" class="note" aria-live="polite">Reload to see changes (live updates need JavaScript).</p>\(identityForm, if: !wide)</header>
        <main>
        \(main)</main>
        <script src="\(PageAssets.script.link)"></script>
        </body>
        </html>

        """
    }

    static func render(
        bucket: String, folder: StoragePath, token: String?, page: ListPage, object: ObjectMetadata?, missing: String?,
        rules: (source: String, origin: String)?, requests: [ServedExchange], pageToken: String, buckets: [String] = []
    ) -> HTML {
        let prefix = folder.listingPrefix
        var html: HTML = """
            <section class="listing" aria-labelledby="listing-title">
            <h2 id="listing-title">\(prefix.isEmpty ? "the root" : prefix)</h2>

            """
        if token != nil { html += "<p class=\"note\">A later page (from a page token).</p>\n" }
        if page.prefixes.isEmpty && page.items.isEmpty {
            html += "<p class=\"empty\">Nothing is listed here.</p>\n"
        } else {
            html += "<ul class=\"entries\">\n"
            for child in page.prefixes {
                let name = StoragePath(normalizing: child).name
                html +=
                    "<li class=\"prefix\"><a href=\"\(link(path: child + "/"))\">\(name)/</a> <span class=\"kind\">prefix</span></li>\n"
            }
            let sizes = Dictionary((page.itemMetadata ?? []).map { (ObjectName(stored: $0.fullPath), $0.size) }) {
                first, _ in first
            }
            for item in page.items {
                let name = StoragePath(normalizing: item).name
                let size: HTML =
                    sizes[ObjectName(stored: item)].map { " <span class=\"size\">\(MessageText.byteCount($0))</span>" }
                    ?? ""
                let current = object.map { NameBytes.sameBytes($0.fullPath, item) } ?? false
                // Two names that look alike are two objects (rule P7): the decomposed one says so.
                let decomposed = !MessageText.isComposed(name)
                html += """
                    <li class="item"><a href="\(link(path: prefix, token: token, object: item))"\(" aria-current=\"true\"", if: current)>\(name)</a>\
                    \(" <span class=\"kind\">(not NFC)</span>", if: decomposed)\(size) <span class="kind">item</span></li>

                    """
            }
            html += "</ul>\n"
        }
        html += uploadForm(bucket: bucket, prefix: prefix)
        html += """
            <p class="count">\(MessageText.counted(page.prefixes.count, "prefix", "prefixes")), \
            \(MessageText.counted(page.items.count, "item")) on this page (at most \(pageSize))</p>

            """
        if let next = page.nextPageToken {
            html +=
                "<p class=\"paging\"><a rel=\"next\" href=\"\(link(path: prefix, token: next))\">Next page</a> <span class=\"token\">pageToken \(next)</span></p>\n"
        } else {
            html += "<p class=\"paging\">Last page: no page token.</p>\n"
        }
        html += "</section>\n"
        if let object {
            html += metadataPanel(bucket: bucket, object: object)
        } else if let missing {
            html +=
                "<section class=\"object\" aria-label=\"object\"><h2>No such object</h2><p>\(missing)</p></section>\n"
        }
        if let rules {
            // The origin is a file, or already a parenthesised description (the open rules of a new bucket).
            let origin = rules.origin.hasPrefix("(") ? rules.origin : "(\(rules.origin))"
            html +=
                "<section class=\"rules\"><details><summary>Security rules in force \(origin)</summary><pre>\(rules.source)</pre></details></section>\n"
        }
        html += requestLog(requests, bucket: bucket, full: false)
        return document(
            title: "gs://\(bucket)/\(prefix) · storesh", heading: "gs://\(bucket)",
            navigation: breadcrumb(bucket: bucket, folder: folder) + bucketList(buckets, shown: bucket), main: html,
            pageToken: pageToken)
    }

    /// The requests that reached the server, newest first, each as the SDK call it stands for, the HTTP exchange,
    /// who made it and what the rules decided: the words say allowed or denied, colour adds nothing to them.
    static func requestLog(_ requests: [ServedExchange], bucket: String, full: Bool) -> HTML {
        var html: HTML =
            "<section class=\"requests\" aria-labelledby=\"requests-title\">\n<h2 id=\"requests-title\">Requests this server received</h2>\n"
        if !full {
            html +=
                "<p class=\"note\"><a href=\"/?view=requests\">The request log alone, in large type</a> · the last \(requestsBeside) here, newest first</p>\n"
        } else {
            html +=
                "<p class=\"note\"><a href=\"/\">Back to gs://\(bucket)</a> · the last \(RequestJournal.capacity) at most, newest first</p>\n"
        }
        guard !requests.isEmpty else {
            return html
                + "<p class=\"empty\">None yet: requests from an app, an SDK, the shell on gs:// or curl appear here as they arrive.</p>\n</section>\n"
        }
        html += "<ol class=\"exchanges\">\n"
        for exchange in requests {
            let denied = exchange.verdicts.contains { !$0.allowed }
            html += "<li class=\"exchange\(" denied", if: denied)\" id=\"request-\(exchange.number)\">\n"
            if let call = exchange.call { html += "<p class=\"call\"><code>\(call)</code></p>\n" }
            let time = String(exchange.time.rfc3339.dropFirst(11).prefix(8))
            let milliseconds = String(format: "%.1f", exchange.milliseconds)
            html += """
                <p class="http">#\(exchange.number) <code>\(exchange.method.rawValue) \(exchange.target)</code> → \
                <strong>\(exchange.status) \(exchange.reason)</strong> in \(milliseconds) ms · \(exchange.caller) · \(time)</p>

                """
            for verdict in exchange.verdicts {
                // The decision's first word (allowed, denied) in bold: it is what the class looks for.
                let text = verdict.text
                let (word, rest) =
                    text.firstIndex(of: " ").map { (String(text[..<$0]), String(text[$0...])) } ?? (text, "")
                let decision = verdict.allowed ? "allowed" : "denied"
                html += "<p class=\"verdict \(decision)\">Rules: <strong>\(word)</strong>\(HTML.lines(rest))</p>\n"
            }
            if let note = exchange.rulesNote { html += "<p class=\"verdict\">Rules: \(note)</p>\n" }
            html += "</li>\n"
        }
        return html + "</ol>\n</section>\n"
    }

    /// The buckets this server serves, when it serves more than one: each a link to its root, the one shown marked.
    static func bucketList(_ buckets: [String], shown: String) -> HTML {
        guard buckets.count > 1 else { return "" }
        let links = buckets.enumerated().map { index, name -> HTML in
            let href = index == 0 ? "/" : "/?bucket=" + NameBytes.percentEncoded(name)
            return "<li><a href=\"\(href)\"\(" aria-current=\"page\"", if: name == shown)>gs://\(name)</a></li>"
        }
        return
            "<nav class=\"buckets\" aria-label=\"buckets\"><span class=\"note\">Buckets served:</span> <ul>\(links)</ul></nav>"
    }

    /// gs://BUCKET / a / b /, each part a link to its folder.
    static func breadcrumb(bucket: String, folder: StoragePath) -> HTML {
        var parts: [HTML] = ["<a href=\"\(link(path: ""))\">gs://\(bucket)</a>"]
        var path = ""
        for segment in folder.listingPrefix.split(separator: "/", omittingEmptySubsequences: false).dropLast() {
            path += segment + "/"
            parts.append("<a href=\"\(link(path: path))\">\(segment)</a>")
        }
        return "<nav class=\"breadcrumb\" aria-label=\"folder\">\(parts.joined(separator: " / ")) /</nav>"
    }

    /// Every property of an object, its custom metadata, and a link to its content. Download tokens are counted,
    /// not shown (rule G7: they open the object to anyone who has them).
    static func metadataPanel(bucket: String, object: ObjectMetadata) -> HTML {
        let size =
            object.size < 1024
            ? MessageText.counted(Int(object.size), "byte")
            : "\(MessageText.grouped(Int(object.size))) bytes (\(MessageText.byteCount(object.size)))"
        var rows: [(String, String)] = [
            ("name", object.name), ("fullPath", object.fullPath), ("bucket", object.bucket),
            ("generation", String(object.generation)), ("metageneration", String(object.metageneration)),
            ("size", size), ("timeCreated", object.timeCreated.rfc3339), ("updated", object.updated.rfc3339),
            ("md5Hash", object.md5Hash),
        ]
        if let crc32c = object.crc32c { rows.append(("crc32c", crc32c)) }
        for property in WritableProperty.allCases {
            rows.append((property.rawValue, object[property] ?? "(not set)"))
        }
        var html: HTML =
            "<section class=\"object\" aria-labelledby=\"object-title\">\n<h2 id=\"object-title\">\(object.fullPath)</h2>\n<dl class=\"metadata\">\n"
        for (key, value) in rows { html += "<dt>\(key)</dt><dd>\(value)</dd>\n" }
        html += "</dl>\n<h3>customMetadata</h3>\n"
        var custom = object.customMetadata
        let tokens = custom.removeValue(forKey: ObjectMetadata.downloadTokensKey)
        if custom.isEmpty {
            html += "<p class=\"empty\">(none)</p>\n"
        } else {
            html += "<dl class=\"custom\">\n"
            for (key, value) in custom.sortedByKeyBytes { html += "<dt>\(key)</dt><dd>\(value)</dd>\n" }
            html += "</dl>\n"
        }
        if let tokens {
            let count = tokens.split(separator: ",").count
            html +=
                "<p class=\"note\">\(MessageText.counted(count, "download token")) (not shown: a token opens the object to anyone who has it)</p>\n"
        }
        let download =
            "/download/storage/v1/b/\(NameBytes.percentEncoded(bucket))/o/\(NameBytes.percentEncoded(object.fullPath))?alt=media"
        html += "<p><a class=\"download\" href=\"\(download)\" download>Download the content</a></p>\n"
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
    static let identityForm: HTML = """

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
    static func editForm(bucket: String, object: ObjectMetadata, custom: CustomMetadata) -> HTML {
        var html: HTML = """
            <p class="note scriptless">Editing needs JavaScript: the page sends its changes to this server's API.</p>
            <form class="edit" hidden data-object="\(objectResource(bucket: bucket, name: object.fullPath))" \
            data-firebase="\(firebaseResource(bucket: bucket, name: object.fullPath))" \
            data-generation="\(object.generation)" data-metageneration="\(object.metageneration)" \
            data-name="\(MessageText.name(object.fullPath))" data-folder="\(link(path: NameBytes.folder(ofPrefix: object.fullPath)))">
            <h3>Edit</h3>
            <p class="note">As chosen at the top of the page (the owner, unless you choose a user), on the object as shown (generation \(object.generation), metageneration \(object.metageneration)): a change made since is refused, not overwritten. An emptied field is removed.</p>

            """
        for property in WritableProperty.allCases {
            let value = object[property] ?? ""
            html +=
                "<p><label>\(property.rawValue) <input class=\"property\" name=\"\(property.rawValue)\" value=\"\(value)\" data-was=\"\(value)\"></label></p>\n"
        }
        html += "<fieldset><legend>customMetadata</legend>\n"
        let rows = custom.sortedByKeyBytes.map { ($0.key, $0.value) } + [("", "")]
        for (key, value) in rows {
            html += """
                <p class="custom-row"><input class="key" aria-label="key" value="\(key)" data-was="\(key)" placeholder="new key"> \
                <input class="value" aria-label="value of \(key.isEmpty ? "the new key" : key)" value="\(value)" data-was="\(value)"></p>

                """
        }
        html += """
            </fieldset>
            <p><button type="submit">Save</button> <button type="button" class="delete">Delete \(object.name)</button></p>
            <p class="outcome" role="status"></p>
            </form>

            """
        return html
    }

    /// Files from the computer into the folder shown, each only where no object has its name (`ifGenerationMatch=0`).
    static func uploadForm(bucket: String, prefix: String) -> HTML {
        """
        <form class="upload" hidden data-upload="/upload/storage/v1/b/\(NameBytes.percentEncoded(bucket))/o" \
        data-firebase="\(firebaseResource(bucket: bucket))" data-prefix="\(prefix)">
        <p><label>Upload into \(prefix.isEmpty ? "the root" : prefix) <input type="file" name="files" multiple></label> <button type="submit">Upload</button></p>
        <p class="outcome" role="status"></p>
        </form>

        """
    }
}
