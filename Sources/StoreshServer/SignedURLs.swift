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
public struct SignedURLKey: Sendable {
    let email: String
    let key: _RSA.Signing.PublicKey

    /// Reads a service account's JSON key file: `client_email` and `private_key` (PEM).
    public init(serviceAccountFile path: String, contents data: Data) throws(StorageError) {
        guard let document = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let email = document["client_email"] as? String, !email.isEmpty,
            let pem = document["private_key"] as? String
        else {
            throw .invalidArgument("\(path) is not a service account's key file (a JSON object with client_email and private_key).")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem).publicKey
        } catch {
            throw .invalidArgument("\(path): private_key is not an RSA private key in PEM.")
        }
        self.email = email
    }
}

/// A V4 signed URL (rule V7): `/BUCKET/NAME?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=…&X-Goog-Date=…&
/// X-Goog-Expires=…&X-Goog-SignedHeaders=…&X-Goog-Signature=…`, on the XML API's path, as the official clients make
/// it against `STORAGE_EMULATOR_HOST`. Always checked: the parameters' forms, the time (not expired, not more than
/// seven days, not dated ahead), and that the host header is signed. With a key given to the server, the signature
/// too, over the canonical request, which covers the method, the path, the query and the host: a URL signed for GET
/// cannot PUT, nor be used on another object or host. Refusals are the XML API's `<Error>` documents.
struct SignedURL {
    static let algorithm = "GOOG4-RSA-SHA256"
    /// The longest life the service allows a V4 signed URL.
    static let maximumLifetime = 604_800
    /// How far ahead of the server's clock a URL may be dated (clocks differ).
    static let allowedSkew: TimeInterval = 900

    let bucket: String
    let name: String

    /// Whether a request is one: its query carries a V4 signature.
    static func isSigned(query: String?) -> Bool {
        guard let query else { return false }
        return query.split(separator: "&").contains { $0.hasPrefix("X-Goog-Signature=") || $0.hasPrefix("x-goog-signature=") }
    }

    /// Checks the request; returns the object it names, or throws an `HTTPFailure` whose body is the XML API's.
    init(_ request: Request, key: SignedURLKey?, now: Date = Date()) throws {
        let rawQuery = request.uri.query ?? ""
        var pairs: [(name: String, value: String)] = []
        for piece in rawQuery.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentEncoding.decode(parts[0], plusIsSpace: false, what: "a signed URL's parameter name")
            let value = try PercentEncoding.decode(parts.count > 1 ? parts[1] : "", plusIsSpace: false, what: "the parameter '\(name)'")
            pairs.append((name, value))
        }
        func parameter(_ name: String) throws -> String {
            guard let value = pairs.first(where: { $0.name.lowercased() == name.lowercased() })?.value, !value.isEmpty else {
                throw Self.refusal(.badRequest, code: "AuthorizationQueryParametersError", "The signed URL has no \(name).")
            }
            return value
        }
        let algorithm = try parameter("X-Goog-Algorithm")
        guard algorithm == Self.algorithm else {
            throw Self.refusal(
                .badRequest, code: "AuthorizationQueryParametersError",
                "X-Goog-Algorithm is \(algorithm); storesh serve checks \(Self.algorithm) signed URLs (the official clients' V4).")
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
            throw Self.refusal(.badRequest, code: "RequestNotYetValid", "The signed URL is dated \(dateText), ahead of this server's clock.")
        }
        let expiry = signedAt.addingTimeInterval(TimeInterval(expires))
        if now >= expiry {
            throw Self.refusal(.badRequest, code: "ExpiredToken", "Invalid argument.", details: "Request has expired: \(dateText) plus \(expires) seconds.")
        }
        let signedHeaders = try parameter("X-Goog-SignedHeaders").split(separator: ";").map { $0.lowercased() }
        guard signedHeaders.contains("host") else {
            throw Self.refusal(.badRequest, code: "AuthorizationQueryParametersError", "X-Goog-SignedHeaders must include host.")
        }
        if let key {
            let signature = try parameter("X-Goog-Signature")
            let email = scope[0].removingPercentEncoding ?? String(scope[0])
            guard email == key.email, let bytes = Hexadecimal.decoded(signature) else {
                throw Self.refusal(.forbidden, code: "SignatureDoesNotMatch", "The signed URL is not signed by \(key.email), the key storesh serve was given.")
            }
            var canonical = request.method.rawValue + "\n" + request.uri.path + "\n"
            let query: [(name: String, value: String)] = pairs.filter { $0.name != "X-Goog-Signature" }.map { pair in
                // RFC 3986's encoding, as V4 canonical queries are written: everything but unreserved characters.
                (NameBytes.percentEncoded(pair.name), NameBytes.percentEncoded(pair.value))
            }
            let sorted = query.sorted { first, second in first.name == second.name ? first.value < second.value : first.name < second.name }
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
            let stringToSign = [Self.algorithm, dateText, scope[1...].joined(separator: "/"), digest].joined(separator: "\n")
            guard key.key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: bytes), for: Data(stringToSign.utf8), padding: .insecurePKCS1v1_5)
            else {
                throw Self.refusal(
                    .forbidden, code: "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature you provided (the method, path, query and host are signed).")
            }
        }
        // The XML API's path: /BUCKET/NAME (the name may hold '/').
        let path = request.uri.path.dropFirst()
        guard let slash = path.firstIndex(of: "/"), slash > path.startIndex, path.index(after: slash) < path.endIndex else {
            throw Self.refusal(.badRequest, code: "InvalidURI", "A signed URL's path is /BUCKET/OBJECT.")
        }
        bucket = try PercentEncoding.decode(path[..<slash], plusIsSpace: false, what: "the bucket name")
        name = try PercentEncoding.decode(path[path.index(after: slash)...], plusIsSpace: false, what: "the object name")
    }

    /// A refusal in the XML API's shape (`<Error><Code>…</Code><Message>…</Message></Error>`).
    static func refusal(_ status: HTTPResponse.Status, code: String, _ message: String, details: String? = nil) -> HTTPFailure {
        var failure = HTTPFailure(status, reason: code, message)
        failure.xml = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>\(MarkupText.escaped(code))</Code><Message>\(MarkupText.escaped(message))</Message>"
            + (details.map { "<Details>\(MarkupText.escaped($0))</Details>" } ?? "") + "</Error>"
        return failure
    }
}

extension StorageAPI {
    /// A request by V4 signed URL: GET or HEAD reads the object's content, PUT writes its body as the object,
    /// DELETE deletes it, as the XML API does for the URL's holder, without rules (the signer is the administrator).
    func respondSigned(to request: Request) async throws -> Answer {
        let signed = try SignedURL(request, key: signingKey)
        do {
            return try await respondSigned(to: request, signed)
        } catch let failure as HTTPFailure where failure.xml == nil {
            // The XML API answers in XML, naming the URL's own bucket and object; the headers (Retry-After) stay.
            var refusal = SignedURL.refusal(failure.status, code: failure.status == .notFound ? "NoSuchBucket" : failure.reason, failure.message)
            refusal.headers = failure.headers
            throw refusal
        } catch let error as StorageError {
            switch error.code {
            case .objectNotFound:
                throw SignedURL.refusal(.notFound, code: "NoSuchKey", "The specified key does not exist.", details: "No such object: \(signed.bucket)/\(signed.name)")
            case .bucketNotFound:
                throw SignedURL.refusal(.notFound, code: "NoSuchBucket", "The specified bucket does not exist.", details: signed.bucket)
            default:
                let failure = HTTPFailure(error, bucket: signed.bucket, object: signed.name, firebase: false)
                throw SignedURL.refusal(failure.status, code: failure.reason, failure.message)
            }
        }
    }

    private func respondSigned(to request: Request, _ signed: SignedURL) async throws -> Answer {
        // A signed URL's reads and writes are requests like any other: the rates count them (rule Q3).
        try rates.admit(request.method, .object(bucket: signed.bucket, name: signed.name))
        let bucket = try buckets.bucket(named: signed.bucket, creating: request.method == .put && createsBucketsOnEveryWrite)
        let name = try ObjectName(signed.name)
        var exchange = Exchange(
            request: request, endpoint: .object(bucket: signed.bucket, name: signed.name), bucket: bucket,
            query: QueryParameters(lenient: nil), baseURL: "http://" + (request.head.authority ?? "127.0.0.1"))
        switch request.method {
        case .get, .head:
            let (object, content) = try download(name, in: bucket)
            return try Reply.media(object, content: content, request: request.headers)
        case .put:
            var upload = UploadRequest(bucket: bucket, name: name, options: WriteOptions(), conditions: Conditions(), firebase: false)
            if let type = request.headers[.contentType] { upload.options.properties[.contentType] = type }
            let content = try await receiveObject(&exchange)
            let object = try await finishUpload(upload, content: content)
            return Reply.empty(.ok, headers: [.eTag: "\"\(object.md5Hash)\"", HTTPField.Name("X-Goog-Generation")!: String(object.generation)])
        case .delete:
            try await bucket.change { transaction -> Void in try await transaction.delete(name, precondition: .none) }
            return Reply.empty()
        default:
            throw SignedURL.refusal(.methodNotAllowed, code: "MethodNotAllowed", "A signed URL is used with GET, HEAD, PUT or DELETE.")
        }
    }
}
