import Crypto
import Foundation

/// Where a listing resumes (rule L10): opaque to users, it encodes the bucket, the listing's prefix and
/// the last entry returned, so it resumes strictly after that entry whatever was added or deleted meanwhile.
///
/// Wire form: base64url (no padding) of `version · bucket · prefix · kind · entry · check`, where strings
/// are length-prefixed UTF-8 and `check` is the first 4 bytes of the SHA-256 of what precedes it, so a
/// mistyped or truncated token is reported as invalid rather than resuming somewhere arbitrary.
public struct PageToken: Sendable, Equatable {
    public enum EntryKind: UInt8, Sendable {
        case item = 0
        case prefix = 1
    }

    public var bucket: String
    /// The listing's prefix (rule L1), e.g. `photos/` or `""` at the root.
    public var prefix: String
    public var lastEntryKind: EntryKind
    /// The last entry returned, as a full name; a prefix keeps its trailing `/`.
    public var lastEntry: String

    static let version: UInt8 = 1
    static let checkLength = 4

    public init(bucket: String, prefix: String, lastEntryKind: EntryKind, lastEntry: String) {
        self.bucket = bucket
        self.prefix = prefix
        self.lastEntryKind = lastEntryKind
        self.lastEntry = lastEntry
    }

    /// Where the next page starts: after everything under a prefix entry, or strictly after an item.
    public var resumeBound: NameBound {
        switch lastEntryKind {
        case .item: .after(lastEntry)
        case .prefix: .atOrAfter(NameBound.successor(ofPrefix: lastEntry))
        }
    }

    public var encoded: String {
        var bytes: [UInt8] = [Self.version]
        for text in [bucket, prefix] { Self.appendLengthPrefixed(text, to: &bytes) }
        bytes.append(lastEntryKind.rawValue)
        Self.appendLengthPrefixed(lastEntry, to: &bytes)
        bytes += Self.check(bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a token for a listing of `prefix` in `bucket`; anything else is invalid-argument (rule L10).
    public init(decoding token: String, bucket: String, prefix: String) throws(StorageError) {
        let malformed = StorageError.invalidArgument(
            "Invalid page token: it is not a token storesh issued, or it was cut short or mistyped (rule L10).")
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
            let kindByte = reader.byte(), let kind = EntryKind(rawValue: kindByte),
            let entry = reader.lengthPrefixedString(), reader.isAtEnd
        else { throw malformed }
        guard tokenBucket.utf8.elementsEqual(bucket.utf8) else {
            throw .invalidArgument(
                "Invalid page token: it was issued for bucket '\(tokenBucket)', not '\(bucket)' (rule L10).")
        }
        guard tokenPrefix.utf8.elementsEqual(prefix.utf8) else {
            throw .invalidArgument(
                "Invalid page token: it was issued for a listing of '\(Self.describe(prefix: tokenPrefix))', not '\(Self.describe(prefix: prefix))' (rule L10)."
            )
        }
        guard entry.utf8.starts(with: prefix.utf8), entry.utf8.count > prefix.utf8.count,
            kind == .item || entry.utf8.last == UInt8(ascii: "/")
        else { throw malformed }
        self.init(bucket: tokenBucket, prefix: tokenPrefix, lastEntryKind: kind, lastEntry: entry)
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
