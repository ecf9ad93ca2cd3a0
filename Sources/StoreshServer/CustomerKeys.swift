import Crypto
import Foundation
import HTTPTypes
import StoreshCore

/// A customer-supplied encryption key as a request gives it (rule M9): `x-goog-encryption-algorithm: AES256`, the key
/// (32 bytes, base64) and its SHA-256 (base64), which must agree; `x-goog-copy-source-encryption-…` for a copy's
/// source. storesh keeps the key's hash with the object and asks for the key on every read of its content, as the
/// service does; the bucket file holds the content as it came (the key encrypts nothing there).
struct CustomerKey: Equatable {
    let sha256: String

    /// The key the headers give (nil when they give none); a malformed or inconsistent one is refused.
    init?(_ headers: HTTPFields, copySource: Bool = false) throws {
        let prefix = copySource ? "x-goog-copy-source-encryption-" : "x-goog-encryption-"
        func header(_ name: String) -> String? { headers[HTTPField.Name(prefix + name)!] }
        guard let keyText = header("key") else {
            if header("key-sha256") != nil || header("algorithm") != nil {
                throw HTTPFailure.badRequest(
                    "\(prefix)key-sha256 and \(prefix)algorithm come with \(prefix)key, which is missing.")
            }
            return nil
        }
        guard header("algorithm")?.uppercased() == "AES256" else {
            throw HTTPFailure.badRequest(
                "\(prefix)algorithm must be AES256, the one algorithm of customer-supplied keys.")
        }
        guard let key = Data(base64Encoded: keyText), key.count == 32 else {
            throw HTTPFailure.badRequest("\(prefix)key must be the base64 of a 256-bit key.")
        }
        let hash = Data(SHA256.hash(data: key)).base64EncodedString()
        guard let given = header("key-sha256"), Data(base64Encoded: given) == Data(base64Encoded: hash) else {
            throw HTTPFailure.badRequest("\(prefix)key-sha256 is missing, or is not the SHA-256 of \(prefix)key.")
        }
        sha256 = hash
    }

    /// Checks a read of `object`'s content with `key` (nil: none given), as the service answers one that does not fit.
    static func check(_ key: CustomerKey?, reading object: ObjectMetadata) throws {
        switch (object.cloudStorage.customerKeySHA256, key) {
        case (nil, nil): return
        case (nil, _?):
            throw HTTPFailure.badRequest("The target object is not encrypted by a customer-supplied encryption key.")
        case (_?, nil):
            throw HTTPFailure.badRequest(
                "The target object is encrypted by a customer-supplied encryption key: the request must give it (x-goog-encryption-key)."
            )
        case (let expected?, let given?):
            guard expected == given.sha256 else {
                throw HTTPFailure.badRequest("The provided encryption key is incorrect.")
            }
        }
    }
}
