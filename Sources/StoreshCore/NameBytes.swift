import Foundation

/// Cutting names at `/` by bytes.
///
/// Object names are byte strings. Swift's `String` slices and splits by grapheme cluster, and a `/` followed
/// by a combining mark is one cluster, so every cut at `/` goes through the UTF-8 view here.
public enum NameBytes {
    static let slash = UInt8(ascii: "/")

    /// The segments between `/`s, dropping empty ones when `omittingEmpty`.
    static func segments(of name: some StringProtocol, omittingEmpty: Bool) -> [Substring] {
        String(name).utf8.split(separator: slash, omittingEmptySubsequences: omittingEmpty).map { Substring($0) }
    }

    /// The text after the last `/`, or the whole name.
    /// Segments joined by `/`. Written out: the generic `joined(separator:)` of substrings looks up its
    /// witnesses at run time, which a cold run paid on its first path (issue 23).
    static func path(of segments: [Substring]) -> String {
        var path = ""
        for index in segments.indices {
            if index > segments.startIndex { path += "/" }
            path += segments[index]
        }
        return path
    }

    static func lastSegment(of name: String) -> String {
        guard let slash = name.utf8.lastIndex(of: slash) else { return name }
        return String(Substring(name.utf8[name.utf8.index(after: slash)...]))
    }

    /// The text before the last `/`, or nil when there is none.
    static func beforeLastSlash(of name: String) -> String? {
        guard let slash = name.utf8.lastIndex(of: slash) else { return nil }
        return String(Substring(name.utf8[..<slash]))
    }

    /// The folder a name prefix starts in: `users/u00` → `users`, `a/` → `a`, `x` → the root.
    public static func folder(ofPrefix prefix: String) -> String {
        beforeLastSlash(of: prefix) ?? ""
    }

    /// Whether `first` comes before `second` in the byte order of their UTF-8 (rule L4), compared over their
    /// contiguous bytes: sorting a million objects' keys goes through here.
    public static func precedes(_ first: String, _ second: String) -> Bool {
        var first = first
        var second = second
        return first.withUTF8 { a in
            second.withUTF8 { b in precedes(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
        }
    }

    /// Whether the bytes `first` come before `second` (rule L4's order).
    public static func precedes(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        let common = min(first.count, second.count)
        let order = common == 0 ? 0 : memcmp(first.baseAddress!, second.baseAddress!, common)
        return order != 0 ? order < 0 : first.count < second.count
    }

    /// Whether `name`'s UTF-8 starts with `prefix`'s, compared over their contiguous bytes: a pattern's walk asks
    /// it of every name it meets.
    public static func starts(_ name: String, with prefix: String) -> Bool {
        var name = name
        var prefix = prefix
        return name.withUTF8 { n in
            prefix.withUTF8 { p in starts(UnsafeRawBufferPointer(n), with: UnsafeRawBufferPointer(p)) }
        }
    }

    /// Whether a name's bytes start with `prefix`'s UTF-8.
    public static func starts(_ bytes: UnsafeRawBufferPointer, with prefix: String) -> Bool {
        var prefix = prefix
        return prefix.withUTF8 { starts(bytes, with: UnsafeRawBufferPointer($0)) }
    }

    /// Whether `bytes` start with `prefix`.
    public static func starts(_ bytes: UnsafeRawBufferPointer, with prefix: UnsafeRawBufferPointer) -> Bool {
        prefix.count <= bytes.count
            && (prefix.isEmpty || memcmp(bytes.baseAddress!, prefix.baseAddress!, prefix.count) == 0)
    }

    /// Whether two strings hold the same bytes (unlike `==`, which equates canonically equivalent spellings).
    /// (A bulk edit compares each object's differences with the last object's: lengths first, then one `memcmp`.)
    public static func sameBytes(_ first: String, _ second: String) -> Bool {
        guard first.utf8.count == second.utf8.count else { return false }
        var first = first
        var second = second
        return first.withUTF8 { a in
            second.withUTF8 { b in sameBytes(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
        }
    }

    /// Whether two runs of bytes are the same: lengths, then one `memcmp` (`elementsEqual` goes a byte at a time).
    public static func sameBytes(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        first.count == second.count
            && (first.isEmpty || memcmp(first.baseAddress!, second.baseAddress!, first.count) == 0)
    }

    /// Feeds `text`'s bytes to `hasher` (its length first, so that texts in a row cannot run into each other): the
    /// hash that goes with `sameBytes`.
    public static func hash(_ text: String, into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
    }

    /// Whether two optional strings are both absent, or hold the same bytes.
    public static func sameBytes(_ first: String?, _ second: String?) -> Bool {
        guard let first, let second else { return first == nil && second == nil }
        return sameBytes(first, second)
    }

    /// Whether a string (nil: none) holds the bytes `second` (nil: none).
    public static func sameBytes(_ first: String?, _ second: UnsafeRawBufferPointer?) -> Bool {
        guard var first, let second else { return first == nil && second == nil }
        return first.utf8.count == second.count && first.withUTF8 { sameBytes(UnsafeRawBufferPointer($0), second) }
    }

    /// The first `length` bytes of `name`, where `length` ends just after a `/` or at a scalar boundary.
    public static func prefix(of name: String, byteCount length: Int) -> String {
        String(Substring(name.utf8.prefix(length)))
    }
}

/// A name compared as bytes: equality, hashing and order of its UTF-8, the order of listings (rule L4).
///
/// Swift's `String ==` would equate canonically equivalent spellings (precomposed and decomposed "é")
/// that are different objects in a bucket.
public protocol ByteOrderedName: Hashable, Comparable {
    var utf8Text: String { get }
}

extension ByteOrderedName {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        NameBytes.sameBytes(lhs.utf8Text, rhs.utf8Text)
    }

    public func hash(into hasher: inout Hasher) { NameBytes.hash(utf8Text, into: &hasher) }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        NameBytes.precedes(lhs.utf8Text, rhs.utf8Text)
    }
}

extension NameBytes {
    /// `text` with every byte but the unreserved ones (RFC 3986) escaped as `%XX`: an object name as one URL path
    /// segment (`/` → `%2F`, rule G1), or a query value. `keepingSlashes` leaves `/` as it is: an S3 key as a
    /// URL path (AWS's UriEncode of a path).
    public static func percentEncoded(_ text: String, keepingSlashes: Bool = false) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(byte)
            case UInt8(ascii: "/") where keepingSlashes:
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
