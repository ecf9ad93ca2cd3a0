import Foundation
import HTTPTypes
import Hummingbird

/// Who may reach the server from a browser. `storesh serve` has no credentials of its own (rule V3: `Bearer owner`
/// is the administrator, and `/internal/*` needs nothing, as in the emulator), so a page the developer happens to
/// visit must not be able to use it:
/// - a request that names a host (`Host`) other than loopback, an IP address, the `--host` given or an
///   `--allow-host` name is refused, so a hostile DNS name rebound to 127.0.0.1 reaches nothing;
/// - a request from a page (`Origin`) is answered only for the origins an app under development uses: localhost,
///   127.0.0.1 and [::1] on any port, the server's own origin, and the `--cors` origins; any other page's request
///   is refused before it does anything, and its preflight allows nothing.
public struct OriginPolicy: Sendable {
    /// Origins allowed beside the local ones (`--cors`), as `scheme://host[:port]`; `*` allows every origin.
    public var origins: [String]
    /// Host names allowed beside loopback, IP addresses and the address listened on (`--allow-host`).
    public var hosts: [String]

    public init(origins: [String] = [], hosts: [String] = []) {
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
        if let authority = request.head.authority, let host = Self.hostName(ofAuthority: authority) {
            guard allowsHost(host, listening: listening) else {
                return HTTPFailure(
                    .forbidden, reason: "forbidden",
                    "storesh serve does not answer to the host name '\(host)' (Host: \(authority)): it answers to localhost, IP addresses and the --host it listens on, so that a web page cannot reach it through a DNS name of its own. Start it with --allow-host \(host) to answer to that name.")
            }
        }
        if let origin = request.headers[.origin], !allowsOrigin(origin, authority: request.head.authority) {
            return HTTPFailure(
                .forbidden, reason: "forbidden",
                "storesh serve refused a request from the web page at \(origin): it answers pages served from localhost, 127.0.0.1 or [::1] (any port) and the origins given with --cors. Start it with --cors \(origin) to let that page in; nothing was done.")
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
        guard let components = URLComponents(string: origin), let scheme = components.scheme, scheme == "http" || scheme == "https",
            let host = components.host
        else { return false }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" || bare.hasPrefix("127.") && Self.isIPAddress(bare) {
            return true
        }
        // The server's own origin: same host and port as the request names.
        if let authority, origin == "http://" + authority.lowercased() { return true }
        return false
    }

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
                request.headers[.accessControlRequestHeaders] ?? "Authorization, Content-Type, X-Goog-Upload-Protocol, X-Goog-Upload-Command"
            headers[.accessControlMaxAge] = "3600"
        }
        return headers
    }

    /// The host of a `Host` header (`name`, `name:port`, `[v6]:port`), lowercased; nil when it is malformed.
    static func hostName(ofAuthority authority: String) -> String? {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.index(after: authority.startIndex)..<close]).lowercased()
        }
        return String(authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]).lowercased()
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
