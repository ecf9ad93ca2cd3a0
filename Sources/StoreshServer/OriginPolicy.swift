import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore

/// Who may reach the server from a browser. `storesh serve` has no credentials of its own (rule V3: `Bearer owner`
/// is the administrator, and `/internal/*` needs nothing, as in the emulator), so a page the developer happens to
/// visit must not be able to use it:
/// - a request that names a host (`Host`) other than loopback, an IP address, the `--host` given or an
///   `--allow-host` name is refused, so a hostile DNS name rebound to 127.0.0.1 reaches nothing;
/// - a request from a page (`Origin`) is answered only for the origins an app under development uses: localhost,
///   127.0.0.1 and [::1] on any port, the server's own origin, and the `--cors` origins; any other page's request
///   is refused before it does anything, and its preflight allows nothing.
package struct OriginPolicy: Sendable {
    /// Origins allowed beside the local ones (`--cors`), as `scheme://host[:port]`; `*` allows every origin.
    package var origins: [String]
    /// Host names allowed beside loopback, IP addresses and the address listened on (`--allow-host`).
    package var hosts: [String]

    package init(origins: [String] = [], hosts: [String] = []) {
        self.origins = origins.map { $0.lowercased() }
        self.hosts = hosts.map { $0.lowercased() }
    }

    static let exposedHeaders = [
        "X-Goog-Upload-URL", "X-Goog-Upload-Status", "X-Goog-Upload-Size-Received", "X-Goog-Upload-Chunk-Granularity",
        "X-GUploader-UploadID", "X-Goog-Hash", "X-Goog-Generation", "X-Goog-Metageneration", "Location", "Range",
        "Content-Range", "ETag",
    ].joined(separator: ", ")

    /// A refusal for a request whose `Host` this server does not answer to, or whose page's origin it does not
    /// serve; nil when it may go on. `listening` is the host the server was told to listen on.
    func refusal(_ request: Request, listening: String) -> HTTPFailure? {
        // One Host, well formed: a malformed one must not skip the check, nor a second one hide behind a first.
        if !request.headers[values: Self.hostField].isEmpty {
            return HTTPFailure(.badRequest, reason: "badRequest", "A request has one Host header; this one has more.")
        }
        if let authority = request.head.authority {
            guard let host = Self.hostName(ofAuthority: authority) else {
                return HTTPFailure(
                    .badRequest, reason: "badRequest",
                    "The Host header '\(MessageText.oneLine(authority))' is not a host name with an optional port.")
            }
            guard allowsHost(host, listening: listening) else {
                return HTTPFailure(
                    .forbidden, reason: "forbidden",
                    "storesh serve does not answer to the host name '\(host)' (Host: \(authority)): it answers to localhost, IP addresses and the --host it listens on, so that a web page cannot reach it through a DNS name of its own. Start it with --allow-host \(host) to answer to that name."
                )
            }
        }
        if let origin = request.headers[.origin], !allowsOrigin(origin, authority: request.head.authority) {
            return HTTPFailure(
                .forbidden, reason: "forbidden",
                "storesh serve refused a request from the web page at \(origin): it answers pages served from localhost, 127.0.0.1 or [::1] (any port) and the origins given with --cors. Start it with --cors \(origin) to let that page in; nothing was done."
            )
        }
        return nil
    }

    func allowsHost(_ host: String, listening: String) -> Bool {
        let name = host.lowercased()
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if Self.isIPAddress(name) { return true }
        return name == listening.lowercased() || hosts.contains(name)
    }

    /// Whether a page of `origin` may use the server; `authority` is the request's own `Host` (a page of the
    /// server's own origin, as a later web view of the bucket is, may).
    func allowsOrigin(_ origin: String, authority: String?) -> Bool {
        let origin = origin.lowercased()
        if origins.contains("*") || origins.contains(origin) { return true }
        guard let components = URLComponents(string: origin), let scheme = components.scheme,
            scheme == "http" || scheme == "https",
            let host = components.host
        else { return false }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1"
            || bare.hasPrefix("127.") && Self.isIPAddress(bare)
        {
            return true
        }
        // The server's own origin: same host and port as the request names.
        return Self.isOwnOrigin(origin, authority: authority)
    }

    /// What only the server's own page may do with a browser: change anything (its script sends the page token
    /// with every change) and use `/internal/*` (which tools call without any `Origin`). A request from the page's
    /// own origin without the token (a stored document that ran a script, were its sandbox ignored) or from any
    /// other page is refused; the token is written into the page, which no other origin can read.
    func administrationRefusal(_ request: Request, pageToken: String) -> HTTPFailure? {
        guard let origin = request.headers[.origin] else { return nil }
        let administration = request.uri.path.hasPrefix("/internal/")
        let fromOwnPage = Self.isOwnOrigin(origin, authority: request.head.authority)
        let changes = ![.get, .head, .options].contains(request.method)
        guard administration || (fromOwnPage && changes) else { return nil }
        if fromOwnPage, let sent = request.headers[Self.pageTokenField], Self.sameSecret(sent, pageToken) { return nil }
        return HTTPFailure(
            .forbidden, reason: "forbidden",
            administration
                ? "storesh serve's /internal/ requests are for tools (no Origin) and for its own page; the page at \(origin) is neither. Nothing was done."
                : "A change from storesh serve's own page carries the page's token; this one does not (a stored document, or a page of another origin). Nothing was done."
        )
    }

    static let pageTokenField = HTTPField.Name("X-Storesh-Page-Token")!

    /// A new secret for one server's page: 128 random bits, from the system's generator.
    static func newPageToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    /// Compares two secrets in time that does not depend on where they differ.
    static func sameSecret(_ first: String, _ second: String) -> Bool {
        let a = Array(first.utf8)
        let b = Array(second.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Whether `origin` is the server's own (the page's): the scheme and the host and port the request names.
    static func isOwnOrigin(_ origin: String, authority: String?) -> Bool {
        guard let authority else { return false }
        return origin.lowercased() == "http://" + authority.lowercased()
    }

    /// The page's live event streams served at once: fewer than the connections, so that ordinary requests are
    /// always served (rule V8); a stream past the limit is answered 503 with `Retry-After`.
    static let maximumEventStreams = 64

    /// The headers of a cross-origin answer for an allowed `origin`.
    static func crossOriginHeaders(origin: String?, preflight request: Request?) -> HTTPFields {
        var headers = HTTPFields()
        guard let origin else { return headers }
        headers[.accessControlAllowOrigin] = origin
        headers[.vary] = "Origin"
        headers[.accessControlExposeHeaders] = exposedHeaders
        if let request {
            headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
            headers[.accessControlAllowHeaders] =
                request.headers[.accessControlRequestHeaders]
                ?? "Authorization, Content-Type, X-Goog-Upload-Protocol, X-Goog-Upload-Command"
            headers[.accessControlMaxAge] = "3600"
        }
        return headers
    }

    /// A `Host` field left among the headers: HTTP/1's first Host is the request's authority, so any found here is
    /// a second one.
    static let hostField = HTTPField.Name("Host")!

    /// The host of a `Host` header (`name`, `name:port`, `[v6]:port`), lowercased; nil when it is malformed: an
    /// unclosed bracket, an empty or non-numeric port, an empty name, or characters no host name has.
    static func hostName(ofAuthority authority: String) -> String? {
        let host: Substring
        let port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            port = rest.isEmpty ? nil : rest.dropFirst()
            guard isIPAddress(String(host)), !host.contains(".") || host.contains(":") else { return nil }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            port = parts.count > 1 ? parts[1] : nil
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_".utf8)
            guard !host.isEmpty, host.utf8.allSatisfy(allowed.contains) else { return nil }
        }
        if let port {
            guard !port.isEmpty, port.count <= 5, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                Int(port)! <= 65535
            else { return nil }
        }
        return host.lowercased()
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
