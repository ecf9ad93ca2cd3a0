import Crypto
import Foundation
import StoreshCore

/// The local bucket's page tokens (rule L10): opaque to users, a token encodes the bucket, the listing's prefix and
/// the last entry returned, so a listing resumes strictly after that entry whatever was added or deleted meanwhile.
///
/// Wire form: base64url (no padding) of `version · bucket · prefix · kind · entry · check`, where strings
/// are length-prefixed UTF-8 and `check` is the first 4 bytes of the SHA-256 of what precedes it, so a
/// mistyped or truncated token is reported as invalid rather than resuming somewhere arbitrary. A listing of every
/// generation (rule B5) writes version 2, with the last item's generation (zigzag LEB128) after the entry.
package struct LocalPageTokens: PageTokenFormat {
    package init() {}

    package func token(for position: ListPosition, bucket: String) -> String {
        LocalPageToken(bucket: bucket, position: position).encoded
    }

    package func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        try LocalPageToken(decoding: token, bucket: bucket, prefix: prefix).position
    }

    package func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        let decoded = try LocalPageToken(decoding: token)
        return (decoded.bucket, decoded.position)
    }
}

/// One token of the local format.
struct LocalPageToken: Sendable, Equatable {
    var bucket: String
    var position: ListPosition

    static let version: UInt8 = 1
    static let versionWithGeneration: UInt8 = 2
    static let checkLength = 4

    init(bucket: String, position: ListPosition) {
        self.bucket = bucket
        self.position = position
    }

    var encoded: String {
        var writer = PackedWriter()
        writer.byte(position.lastGeneration == nil ? Self.version : Self.versionWithGeneration)
        writer.string(bucket)
        writer.string(position.prefix)
        writer.byte(position.lastEntryKind.rawValue)
        writer.string(position.lastEntry)
        if let generation = position.lastGeneration { writer.signed(generation) }
        let bytes = writer.bytes + Self.check(writer.bytes)
        return Base64URL.encoded(Data(bytes))
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
        guard !token.contains("+"), !token.contains("/"), !token.contains("=") else { throw malformed }
        guard let data = Base64URL.decoded(token), data.count > 1 + Self.checkLength else { throw malformed }
        let bytes = [UInt8](data)
        let body = bytes.dropLast(Self.checkLength)
        guard Array(bytes.suffix(Self.checkLength)) == Self.check(body),
            body.first == Self.version || body.first == Self.versionWithGeneration
        else {
            throw malformed
        }
        let withGeneration = body.first == Self.versionWithGeneration
        let fields = Array(body.dropFirst()).withUnsafeBytes { buffer -> (String, String, UInt8, String, Int64?)? in
            var reader = PackedReader(buffer)
            guard let fields = try? (reader.string(), reader.string(), reader.byte(), reader.string()) else {
                return nil
            }
            let generation = withGeneration ? try? reader.signed() : nil
            guard reader.isAtEnd, generation != nil || !withGeneration else { return nil }
            return (fields.0, fields.1, fields.2, fields.3, generation)
        }
        guard let (tokenBucket, tokenPrefix, kindByte, entry, generation) = fields,
            let kind = ListPosition.EntryKind(rawValue: kindByte)
        else {
            throw malformed
        }
        self.init(
            bucket: tokenBucket,
            position: ListPosition(
                prefix: tokenPrefix, lastEntryKind: kind, lastEntry: entry, lastGeneration: generation))
    }

    private static func describe(prefix: String) -> String {
        "/" + NameBytes.prefix(of: prefix, byteCount: max(0, prefix.utf8.count - 1))
    }

    private static func check(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        Array(SHA256.hash(data: Array(bytes)).prefix(checkLength))
    }
}
