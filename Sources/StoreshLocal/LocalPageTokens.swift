import Crypto
import Foundation
import StoreshCore

/// The local bucket's page tokens (rule L10): opaque to users, a token encodes the bucket, the listing's prefix and
/// the last entry returned, so a listing resumes strictly after that entry whatever was added or deleted meanwhile.
///
/// Wire form: base64url (no padding) of `version · bucket · prefix · kind · entry · check`, where strings
/// are length-prefixed UTF-8 and `check` is the first 4 bytes of the SHA-256 of what precedes it, so a
/// mistyped or truncated token is reported as invalid rather than resuming somewhere arbitrary.
public struct LocalPageTokens: PageTokenFormat {
    public init() {}

    public func token(for position: ListPosition, bucket: String) -> String {
        LocalPageToken(bucket: bucket, position: position).encoded
    }

    public func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        try LocalPageToken(decoding: token, bucket: bucket, prefix: prefix).position
    }

    public func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        let decoded = try LocalPageToken(decoding: token)
        return (decoded.bucket, decoded.position)
    }
}

/// One token of the local format.
struct LocalPageToken: Sendable, Equatable {
    var bucket: String
    var position: ListPosition

    static let version: UInt8 = 1
    static let checkLength = 4

    init(bucket: String, position: ListPosition) {
        self.bucket = bucket
        self.position = position
    }

    var encoded: String {
        var bytes: [UInt8] = [Self.version]
        for text in [bucket, position.prefix] { Self.appendLengthPrefixed(text, to: &bytes) }
        bytes.append(position.lastEntryKind.rawValue)
        Self.appendLengthPrefixed(position.lastEntry, to: &bytes)
        bytes += Self.check(bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a token for a listing of `prefix` in `bucket`; anything else is invalid-argument (rule L10).
    init(decoding token: String, bucket: String, prefix: String) throws(StorageError) {
        let decoded = try Self(decoding: token)
        guard decoded.bucket.utf8.elementsEqual(bucket.utf8) else {
            throw .invalidArgument(
                "Invalid page token: it was issued for bucket '\(decoded.bucket)', not '\(bucket)' (rule L10).")
        }
        guard decoded.position.prefix.utf8.elementsEqual(prefix.utf8) else {
            throw .invalidArgument(
                "Invalid page token: it was issued for a listing of '\(Self.describe(prefix: decoded.position.prefix))', not '\(Self.describe(prefix: prefix))' (rule L10)."
            )
        }
        self = decoded
    }

    /// Decodes a token whatever listing it belongs to (`page token`); a token storesh did not make is
    /// invalid-argument.
    init(decoding token: String) throws(StorageError) {
        let malformed = StorageError.malformedPageToken
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !token.contains("+"), !token.contains("/"), !token.contains("=") else { throw malformed }
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), data.count > 1 + Self.checkLength else { throw malformed }
        let bytes = [UInt8](data)
        let body = bytes.dropLast(Self.checkLength)
        guard Array(bytes.suffix(Self.checkLength)) == Self.check(body), body.first == Self.version else {
            throw malformed
        }
        var reader = ByteReader(bytes: Array(body.dropFirst()))
        guard let tokenBucket = reader.lengthPrefixedString(), let tokenPrefix = reader.lengthPrefixedString(),
            let kindByte = reader.byte(), let kind = ListPosition.EntryKind(rawValue: kindByte),
            let entry = reader.lengthPrefixedString(), reader.isAtEnd
        else { throw malformed }
        self.init(bucket: tokenBucket, position: ListPosition(prefix: tokenPrefix, lastEntryKind: kind, lastEntry: entry))
    }

    private static func describe(prefix: String) -> String {
        "/" + NameBytes.prefix(of: prefix, byteCount: max(0, prefix.utf8.count - 1))
    }

    private static func appendLengthPrefixed(_ text: String, to bytes: inout [UInt8]) {
        var length = UInt64(text.utf8.count)
        repeat {  // LEB128 varint
            let low = UInt8(length & 0x7F)
            length >>= 7
            bytes.append(length == 0 ? low : low | 0x80)
        } while length != 0
        bytes += text.utf8
    }

    private static func check(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        Array(SHA256.hash(data: Array(bytes)).prefix(checkLength))
    }

    private struct ByteReader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func lengthPrefixedString() -> String? {
            var length: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard let next = byte(), shift < 63 else { return nil }
                length |= UInt64(next & 0x7F) << shift
                if next & 0x80 == 0 { break }
                shift += 7
            }
            guard length <= UInt64(bytes.count - offset) else { return nil }
            let slice = bytes[offset..<offset + Int(length)]
            offset += Int(length)
            return String(validating: slice, as: UTF8.self)
        }
    }
}
