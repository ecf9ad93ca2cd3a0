import Foundation

/// The query parameters whose values grant access by themselves: a download token, an upload session, an OAuth
/// token or API key, a presigned URL's signature and credential. A client's `--trace` and a server's request log
/// show URLs with these values elided, so that either can be pasted into a bug report or projected in class.
package enum SecretParameters {
    /// Compared without case.
    package static let names: Set<String> = [
        // A download token, and the one a revocation names (still valid while the request is logged).
        "token", "delete_token",
        "upload_id", "uploadid", "access_token", "id_token", "key", "x-amz-signature", "x-amz-credential",
        "x-amz-security-token", "x-goog-signature", "x-goog-credential",
        // Cloud Storage's V2 signed URLs, and S3's query-string authentication of old.
        "signature", "googleaccessid", "awsaccesskeyid",
    ]

    /// `url` (a whole URL, or a path and query) with the value of each secret parameter replaced by `…`.
    package static func redacted(_ url: String) -> String {
        guard let mark = url.firstIndex(of: "?") else { return url }
        let pairs = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map {
            pair -> String in
            let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            // As the server reads it: `%74oken` is `token`, and `+` a blank.
            let decoded = name.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? name
            return names.contains(decoded.lowercased()) ? "\(name)=…" : String(pair)
        }
        return url[..<mark] + "?" + pairs.joined(separator: "&")
    }
}
