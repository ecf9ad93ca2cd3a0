import Crypto
import Foundation
import StoreshCore

/// AWS credentials (rule S4): never printed, logged or journaled; `description` says where they came from.
package struct AWSCredentials: Sendable {
    package var accessKeyID: String
    package var secretAccessKey: String
    /// Temporary credentials' token (`x-amz-security-token`).
    package var sessionToken: String?
    /// Where they were found, for `whoami` and messages: "$AWS_ACCESS_KEY_ID", "profile dev in ~/.aws/credentials".
    package var source: String

    package init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, source: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.source = source
    }
}

/// AWS Signature Version 4, written from its specification ("Create a signed AWS API request") and checked in tests
/// against AWS's published test vectors and against botocore's signer on the same requests.
///
/// The canonical request is built from the request exactly as it is sent: the path as percent-encoded on the
/// wire (S3 does not normalise paths, so neither does the signer), the query sorted by encoded name then value,
/// and every header given, by lower-cased name.
package struct SigV4Signer: Sendable {
    package var credentials: AWSCredentials
    package var region: String
    package var service: String

    package init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The SHA-256 of an empty body, hex.
    package static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    package static func payloadHash(_ body: Data?) -> String {
        guard let body, !body.isEmpty else { return emptyPayloadHash }
        return Hexadecimal.encoded(SHA256.hash(data: body))
    }

    /// What signing one request made: the headers to add, and the intermediate texts tests compare with the
    /// published vectors.
    package struct Signature: Sendable {
        package var canonicalRequest: String
        package var stringToSign: String
        package var authorization: String
        /// `x-amz-date`, `x-amz-content-sha256` (when the service is S3), `x-amz-security-token`, `Authorization`.
        package var headers: [(String, String)]
    }

    /// Signs a request. `path` and `query` are as sent (already percent-encoded); `headers` must include `host`;
    /// `payloadHash` is the body's SHA-256 in hex. `includeContentHash` adds `x-amz-content-sha256` (S3 requires
    /// it; the generic test vectors do not have it).
    package func sign(
        method: String, path: String, query: String, headers: [(String, String)], payloadHash: String, date: Date,
        includeContentHash: Bool = true
    ) -> Signature {
        let stamp = Self.timestamp(date)
        let day = String(stamp.prefix(8))
        var added: [(String, String)] = [("x-amz-date", stamp)]
        if includeContentHash { added.append(("x-amz-content-sha256", payloadHash)) }
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }

        // Canonical headers: lower-cased names, values trimmed with inner runs of spaces made one, sorted by name;
        // a name given twice has its values joined by commas.
        var byName: [String: [String]] = [:]
        for (name, value) in headers + added {
            byName[name.lowercased(), default: []].append(Self.trimmed(value))
        }
        let names = byName.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let canonicalHeaders = names.map { "\($0):\(byName[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")

        let canonicalRequest = [
            method, path.isEmpty ? "/" : path, Self.canonicalQuery(query), canonicalHeaders, signedHeaders, payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", stamp, scope, Hexadecimal.encoded(SHA256.hash(data: Data(canonicalRequest.utf8))),
        ].joined(separator: "\n")

        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Hexadecimal.encoded(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, authorization: authorization,
            headers: added + [("Authorization", authorization)])
    }

    /// The query sorted by name, then value (both as encoded); a parameter without `=` has an empty value.
    static func canonicalQuery(_ query: String) -> String {
        guard !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: true).map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        return pairs.sorted { left, right in
            left.0 == right.0
                ? left.1.utf8.lexicographicallyPrecedes(right.1.utf8)
                : left.0.utf8.lexicographicallyPrecedes(right.0.utf8)
        }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// A header value as signed: outer spaces trimmed, inner runs of spaces made one.
    static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return String(format: "%04d", parts.year ?? 0) + two(parts.month) + two(parts.day) + "T" + two(parts.hour)
            + two(parts.minute) + two(parts.second) + "Z"
    }
}
