import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore

/// The bucket in a browser (`GET /` of `storesh serve`): a folder as the listing rules show it (prefixes and items,
/// hidden names not shown as items, as an SDK's list would), a page at a time with the page token in the link, an
/// object's metadata with a link to its content, and the security rules in force. Plain HTML with its style inline:
/// it works with JavaScript off, needs nothing from outside the machine, and reads large enough to project, with no
/// meaning carried by colour alone. It reads as the bucket's administrator and changes nothing.
enum BucketPage {
    /// Entries per page: a screenful that still shows paging in a class.
    static let pageSize = 50

    /// The page for `query`: `path` (a folder, default the root), `token` (a page of it), `object` (its metadata).
    static func answer(_ bucket: ServedBucket, query: QueryParameters) async throws -> Answer {
        let folder = StoragePath(normalizing: query["path"] ?? "")
        let token = query["token"].flatMap { $0.isEmpty ? nil : $0 }
        let page = try await bucket.reader.list(
            folder, options: ListOptions(maxResults: pageSize, pageToken: token, includeMetadata: true))
        var object: ObjectMetadata?
        var missing: String?
        if let name = query["object"], !name.isEmpty {
            do {
                object = try await bucket.reader.metadata(of: try ObjectName(name))
            } catch let error as StorageError {
                missing = error.message
            }
        }
        let rules = try? bucket.rulesSession(as: nil).currentRules()
        let html = render(
            bucket: bucket.name, folder: folder, token: token, page: page, object: object, missing: missing, rules: rules)
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        // The page is the bucket as it is now; a reload must ask again.
        headers[.cacheControl] = "no-store"
        return Answer(status: .ok, headers: headers, body: ByteBuffer(string: html))
    }

    /// Text made safe for HTML, in text and in attribute values.
    static func escaped(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.unicodeScalars.append(character)
            }
        }
        return output
    }

    /// A link to this page with these parameters.
    static func link(path: String, token: String? = nil, object: String? = nil) -> String {
        var parameters = ["path=" + NameBytes.percentEncoded(path)]
        if let token { parameters.append("token=" + NameBytes.percentEncoded(token)) }
        if let object { parameters.append("object=" + NameBytes.percentEncoded(object)) }
        return "/?" + parameters.joined(separator: "&")
    }

    static func render(
        bucket: String, folder: StoragePath, token: String?, page: ListPage, object: ObjectMetadata?, missing: String?,
        rules: (source: String, origin: String)?
    ) -> String {
        let prefix = folder.listingPrefix
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>gs://\(escaped(bucket))/\(escaped(prefix)) · storesh</title>
            <style>\(style)</style>
            </head>
            <body>
            <header><h1>gs://\(escaped(bucket))</h1>\(breadcrumb(bucket: bucket, folder: folder))
            <p id="live" class="note" aria-live="polite">Reload to see changes (live updates need JavaScript).</p></header>
            <main>
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
            let sizes = Dictionary((page.itemMetadata ?? []).map { ($0.fullPath, $0.size) }) { first, _ in first }
            for item in page.items {
                let name = StoragePath(normalizing: item).name
                let size = sizes[item].map { " <span class=\"size\">\(MessageText.byteCount($0))</span>" } ?? ""
                let current = object?.fullPath == item ? " aria-current=\"true\"" : ""
                html += "<li class=\"item\"><a href=\"\(escaped(link(path: prefix, token: token, object: item)))\"\(current)>\(escaped(name))</a>\(size) <span class=\"kind\">item</span></li>\n"
            }
            html += "</ul>\n"
        }
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
        html += "</main>\n<script>\(liveScript)</script>\n</body>\n</html>\n"
        return html
    }

    /// gs://BUCKET / a / b /, each part a link to its folder.
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
        html += "<p><a class=\"download\" href=\"\(escaped(download))\" download>Download the content</a></p>\n</section>\n"
        return html
    }

    /// The page keeps itself current where scripts run: it listens to `/_storesh/events` and, at each change of the
    /// bucket, reads itself again and puts the new `main` in place (everything works without it, by reloading).
    static let liveScript = """
        (function () {
          if (!window.EventSource || !window.fetch || !window.DOMParser) return;
          var live = document.getElementById("live");
          var events = new EventSource("/_storesh/events");
          events.onopen = function () { live.textContent = "Live: changes to the bucket appear here as they happen."; };
          events.addEventListener("change", function () {
            fetch(location.href, { cache: "no-store" }).then(function (answer) { return answer.text(); }).then(function (html) {
              var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
              if (next) { document.querySelector("main").replaceWith(next); }
              live.textContent = "Updated at " + new Date().toLocaleTimeString() + ": the bucket changed.";
            });
          });
        })();
        """

    /// Large type for a projector, contrast without colour, one column on a narrow screen.
    static let style = """
        body{font:20px/1.5 system-ui,sans-serif;margin:0 auto;max-width:72em;padding:1em;color:#111;background:#fff}
        h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.3em;border-bottom:2px solid #111}
        main{display:grid;grid-template-columns:repeat(auto-fit,minmax(22em,1fr));gap:1.5em}
        ul.entries{list-style:none;padding:0}ul.entries li{padding:.15em 0;border-bottom:1px solid #ccc}
        li.prefix a{font-weight:bold}.kind,.size,.token,.count,.note{color:#444;font-size:.85em}
        a[aria-current]{text-decoration:underline double}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
        dt{font-weight:bold}dd{margin:0;word-break:break-all}pre{white-space:pre-wrap;font-size:.8em}
        .rules{grid-column:1/-1}
        """
}
