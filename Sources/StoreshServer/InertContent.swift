import Foundation
import HTTPTypes

/// Whatever a bucket holds is served so that no browser runs it in the server's origin (rule V8). The page and the
/// APIs share one origin, and the page can change the bucket, so a stored HTML or SVG file with a script in it,
/// opened by a link from anywhere, must be a document that runs nothing, loads nothing and reaches nothing:
/// - `Content-Security-Policy: sandbox; default-src 'none'`: no script, no plugin, no form, and an opaque origin,
///   so that even a browser that ran something could not act as the page (its requests carry `Origin: null`,
///   which the origin policy refuses);
/// - `X-Content-Type-Options: nosniff`: the stored type is the type, never guessed from the bytes;
/// - the types a browser renders actively (HTML, XHTML, SVG, XML, XSL, JavaScript, PDF, …) are attachments when a
///   browser navigates to them, and whenever the object says nothing of its disposition.
/// Cloud Storage serves user content from a domain of its own for the same reason; the SDKs and clients read
/// content with requests, which none of these headers changes.
enum InertContent {
    static let policy = "sandbox; default-src 'none'"

    static func headers(contentType: String?, storedDisposition: String?, request: HTTPFields) -> HTTPFields {
        var headers = HTTPFields()
        headers[HTTPField.Name("Content-Security-Policy")!] = policy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-site"
        if let storedDisposition { headers[.contentDisposition] = storedDisposition }
        if isActive(contentType), storedDisposition == nil || isBrowserNavigation(request) {
            headers[.contentDisposition] = attachment(keeping: storedDisposition)
        }
        return headers
    }

    /// Whether a browser would render `contentType` as a document that can run or load things.
    static func isActive(_ contentType: String?) -> Bool {
        let mediaType =
            (contentType ?? "").split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
        if mediaType.hasSuffix("+xml") || mediaType.hasSuffix("/xml") { return true }
        return activeTypes.contains(mediaType) || mediaType.contains("javascript") || mediaType.contains("ecmascript")
    }

    static let activeTypes: Set<String> = [
        "text/html", "application/xhtml+xml", "image/svg+xml", "text/xsl", "application/xslt+xml", "application/pdf",
        "text/vtt", "multipart/x-mixed-replace", "application/x-shockwave-flash", "text/cache-manifest", "text/xml",
    ]

    /// Whether the request is a browser opening the content as a page (a link followed, a frame, an address typed),
    /// by the fetch metadata browsers send; a client's request for the bytes is not.
    static func isBrowserNavigation(_ request: HTTPFields) -> Bool {
        if request[HTTPField.Name("Sec-Fetch-Mode")!]?.lowercased() == "navigate" { return true }
        let destination = request[HTTPField.Name("Sec-Fetch-Dest")!]?.lowercased() ?? ""
        return ["document", "iframe", "frame", "embed", "object"].contains(destination)
    }

    /// `attachment`, with the stored disposition's parameters (a file name) kept.
    static func attachment(keeping stored: String?) -> String {
        guard let stored, let semicolon = stored.firstIndex(of: ";") else { return "attachment" }
        return "attachment" + stored[semicolon...]
    }
}
