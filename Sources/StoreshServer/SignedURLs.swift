import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire
import _CryptoExtras

/// The key `storesh serve --signing-key` checks V4 signed URLs against: a service account's key file, as the
/// official clients sign with (`blob.generate_signed_url(version="v4", credentials=…)`). Its public half is all
/// that is kept.
package struct SignedURLKey: Sendable {
    let email: String
    let key: _RSA.Signing.PublicKey

    /// Reads a service account's JSON key file: `client_email` and `private_key` (PEM).
    package init(serviceAccountFile path: String, contents data: Data) throws(StorageError) {
        struct KeyFile: Decodable {
            var client_email: String
            var private_key: String
        }
        guard let document = try? JSONDecoder().decode(KeyFile.self, from: data), !document.client_email.isEmpty else {
            throw .invalidArgument(
                "\(path) is not a service account's key file (a JSON object with client_email and private_key).")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: document.private_key).publicKey
        } catch {
            throw .invalidArgument("\(path): private_key is not an RSA private key in PEM.")
        }
        self.email = document.client_email
    }

    /// Whether `signature` is this key's RSA-SHA256 (PKCS #1 v1.5) signature of `text`, as both signed URL forms use.
    func verifies(_ signature: some DataProtocol, of text: String) -> Bool {
        key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: Data(text.utf8), padding: .insecurePKCS1v1_5)
    }
}

/// A signed URL (rule V7), on the XML API's path (`/BUCKET` or `/BUCKET/NAME`), as the official clients make them
/// against `STORAGE_EMULATOR_HOST`:
/// - V4: `?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=…&X-Goog-Date=…&X-Goog-Expires=…&X-Goog-SignedHeaders=…&
///   X-Goog-Signature=…` (hexadecimal), signed over the canonical request: method, path, query, signed headers;
/// - V2: `?GoogleAccessId=…&Expires=…&Signature=…` (base64), signed over the method, `Content-MD5`, `Content-Type`, the
///   expiry, the `x-goog-` headers (a customer-supplied key and its hash excepted, as the service does) and the path, with any
///   query parameter the client chose to sign.
/// Always checked: the parameters' forms and the time (not expired; a V4 URL not more than seven days, not dated
/// ahead). With a key given to the server, the signature too: a URL signed for GET cannot PUT, nor be used on another
/// object (nor, V4, another host). Refusals are the XML API's `<Error>` documents.
struct SignedURL {
    static let algorithm = "GOOG4-RSA-SHA256"
    /// The longest life the service allows a V4 signed URL.
    static let maximumLifetime = 604_800
    /// How far ahead of the server's clock a URL may be dated (clocks differ).
    static let allowedSkew: TimeInterval = 900

    /// Whether a request is one: its query carries a V4 or a V2 signature.
    static func isSigned(query: String?) -> Bool {
        guard let query else { return false }
        return query.split(separator: "&").contains {
            $0.hasPrefix("X-Goog-Signature=") || $0.hasPrefix("x-goog-signature=") || $0.hasPrefix("Signature=")
        }
    }

    /// The query's parameters, percent-decoded, in their order.
    static func parameters(_ request: Request) throws -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for piece in (request.uri.query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentEncoding.decode(parts[0], plusIsSpace: false, what: "a signed URL's parameter name")
            let value = try PercentEncoding.decode(
                parts.count > 1 ? parts[1] : "", plusIsSpace: false, what: "the parameter '\(name)'")
            pairs.append((name, value))
        }
        return pairs
    }

    /// Checks a signed request; throws an `HTTPFailure` whose body is the XML API's.
    static func check(_ request: Request, key: SignedURLKey?, now: Date) throws {
        let pairs = try parameters(request)
        func parameter(_ name: String) throws -> String {
            guard let value = pairs.first(where: { $0.name.lowercased() == name.lowercased() })?.value, !value.isEmpty
            else {
                throw Self.refusal(
                    .badRequest, code: "AuthorizationQueryParametersError", "The signed URL has no \(name).")
            }
            return value
        }
        if pairs.contains(where: { $0.name.lowercased() == "x-goog-signature" }) {
            try checkV4(request, pairs: pairs, parameter: parameter, key: key, now: now)
        } else {
            try checkV2(request, pairs: pairs, parameter: parameter, key: key, now: now)
        }
    }

    private static func checkV4(
        _ request: Request, pairs: [(name: String, value: String)], parameter: (String) throws -> String,
        key: SignedURLKey?, now: Date
    ) throws {
        let algorithm = try parameter("X-Goog-Algorithm")
        guard algorithm == Self.algorithm else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "X-Goog-Algorithm is \(algorithm); storesh serve checks \(Self.algorithm) signed URLs (the official clients' V4)."
            )
        }
        let credential = try parameter("X-Goog-Credential")
        let scope = credential.split(separator: "/", omittingEmptySubsequences: false)
        guard scope.count == 5, scope[3] == "storage", scope[4] == "goog4_request" else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "X-Goog-Credential must be EMAIL/DATE/REGION/storage/goog4_request, not '\(credential)'.")
        }
        let dateText = try parameter("X-Goog-Date")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        guard let signedAt = formatter.date(from: dateText), dateText.hasPrefix(String(scope[1])) else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "X-Goog-Date must be YYYYMMDDTHHMMSSZ and fall on the credential's date, not '\(dateText)'.")
        }
        let expiresText = try parameter("X-Goog-Expires")
        guard let expires = Int(expiresText), (1...Self.maximumLifetime).contains(expires) else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "X-Goog-Expires must be 1 to \(Self.maximumLifetime) seconds (seven days), not '\(expiresText)'.")
        }
        if signedAt.timeIntervalSince(now) > Self.allowedSkew {
            throw Self.refusal(
                .badRequest, code: "RequestNotYetValid",
                "The signed URL is dated \(dateText), ahead of this server's clock.")
        }
        let expiry = signedAt.addingTimeInterval(TimeInterval(expires))
        if now >= expiry {
            throw Self.refusal(
                .badRequest, code: "ExpiredToken", "Invalid argument.",
                details: "Request has expired: \(dateText) plus \(expires) seconds.")
        }
        let signedHeaders = try parameter("X-Goog-SignedHeaders").split(separator: ";").map { $0.lowercased() }
        guard signedHeaders.contains("host") else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError", "X-Goog-SignedHeaders must include host.")
        }
        guard let key else { return }
        let signature = try parameter("X-Goog-Signature")
        let email = scope[0].removingPercentEncoding ?? String(scope[0])
        guard email == key.email, let bytes = Hexadecimal.decoded(signature) else {
            throw Self.refusal(
                .forbidden, code: "SignatureDoesNotMatch",
                "The signed URL is not signed by \(key.email), the key storesh serve was given.")
        }
        var canonical = request.method.rawValue + "\n" + request.uri.path + "\n"
        let query: [(name: String, value: String)] = pairs.filter { $0.name != "X-Goog-Signature" }.map { pair in
            // RFC 3986's encoding, as V4 canonical queries are written: everything but unreserved characters.
            (NameBytes.percentEncoded(pair.name), NameBytes.percentEncoded(pair.value))
        }
        let sorted = query.sorted { first, second in
            first.name == second.name ? first.value < second.value : first.name < second.name
        }
        canonical += sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&") + "\n"
        for header in signedHeaders.sorted() {
            let value: String
            if header == "host" {
                value = request.head.authority ?? ""
            } else {
                value = HTTPField.Name(header).flatMap { request.headers[$0] } ?? ""
            }
            canonical += header + ":" + value.trimmingCharacters(in: .whitespaces) + "\n"
        }
        canonical += "\n" + signedHeaders.sorted().joined(separator: ";") + "\n" + "UNSIGNED-PAYLOAD"
        let digest = Hexadecimal.encoded(SHA256.hash(data: Data(canonical.utf8)))
        let stringToSign = [Self.algorithm, dateText, scope[1...].joined(separator: "/"), digest].joined(
            separator: "\n")
        guard key.verifies(bytes, of: stringToSign) else {
            throw Self.refusal(
                .forbidden, code: "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided (the method, path, query and host are signed)."
            )
        }
    }

    /// The headers a V2 signature leaves out, as the service does: a customer-supplied key and its hash (its algorithm is
    /// signed).
    static let unsignedV2Headers: Set<String> = [
        "x-goog-encryption-key", "x-goog-encryption-key-sha256", "x-goog-copy-source-encryption-key",
        "x-goog-copy-source-encryption-key-sha256",
    ]

    /// The parameters of a V2 URL that are not signed: the signature's own, and those the clients add after signing.
    static let unsignedV2Parameters: Set<String> = [
        "googleaccessid", "expires", "signature", "response-content-type", "response-content-disposition", "generation",
    ]

    private static func checkV2(
        _ request: Request, pairs: [(name: String, value: String)], parameter: (String) throws -> String,
        key: SignedURLKey?, now: Date
    ) throws {
        let accessID = try parameter("GoogleAccessId")
        let expiresText = try parameter("Expires")
        guard let expires = Int64(expiresText), expires > 0 else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "Expires must be a time in seconds since 1970, not '\(expiresText)'.")
        }
        if Int64(now.timeIntervalSince1970) >= expires {
            throw Self.refusal(
                .badRequest, code: "ExpiredToken", "Invalid argument.", details: "Request has expired: \(expiresText).")
        }
        guard let key else { return }
        guard accessID == key.email, let signature = Data(base64Encoded: try parameter("Signature")) else {
            throw Self.refusal(
                .forbidden, code: "SignatureDoesNotMatch",
                "The signed URL is not signed by \(key.email), the key storesh serve was given.")
        }
        // The x-goog- headers, by name, each once with its values joined; a customer-supplied key is not signed.
        var extensions: [String: [String]] = [:]
        for field in request.headers {
            let name = field.name.canonicalName.lowercased()
            guard name.hasPrefix("x-goog-"), !Self.unsignedV2Headers.contains(name) else { continue }
            extensions[name, default: []].append(
                field.value.split(whereSeparator: \.isWhitespace).joined(separator: " "))
        }
        var resource = request.uri.path
        var signedQuery: [(name: String, value: String)] = []
        for pair in pairs where !Self.unsignedV2Parameters.contains(pair.name.lowercased()) {
            signedQuery.append((pair.name.lowercased(), pair.value.trimmingCharacters(in: .whitespaces)))
        }
        signedQuery.sort { first, second in
            first.name == second.name ? first.value < second.value : first.name < second.name
        }
        if !signedQuery.isEmpty {
            resource +=
                "?"
                + signedQuery.map { Self.formEncoded($0.name) + "=" + Self.formEncoded($0.value) }.joined(
                    separator: "&")
        }
        let lines =
            [
                request.method.rawValue, request.headers[.contentMD5] ?? "", request.headers[.contentType] ?? "",
                expiresText,
            ]
            + extensions.keys.sorted().map { "\($0):\(extensions[$0]!.joined(separator: ","))" } + [resource]
        guard key.verifies(signature, of: lines.joined(separator: "\n")) else {
            throw Self.refusal(
                .forbidden, code: "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided (the method, Content-MD5, Content-Type, expiry, x-goog- headers and path are signed)."
            )
        }
    }

    /// A signed query parameter as a V2 string to sign holds it: `application/x-www-form-urlencoded` (a space is `+`;
    /// letters, digits and `_.-~` as they are; every other byte `%XX`), as the clients that sign V2 write it.
    static func formEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): encoded += "+"
            default: encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    /// A refusal in the XML API's shape (`<Error><Code>…</Code><Message>…</Message></Error>`).
    static func refusal(
        _ status: HTTPResponse.Status, code: String, _ message: String, details: String? = nil
    ) -> HTTPFailure {
        var failure = HTTPFailure(status, reason: code, message)
        failure.xml =
            "<?xml version='1.0' encoding='UTF-8'?><Error><Code>\(MarkupText.escaped(code))</Code><Message>\(MarkupText.escaped(message))</Message>"
            + (details.map { "<Details>\(MarkupText.escaped($0))</Details>" } ?? "") + "</Error>"
        return failure
    }
}
