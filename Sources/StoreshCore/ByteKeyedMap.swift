import Foundation

/// A map whose keys are text compared as bytes, kept in the byte order of their keys: custom metadata (rule M5), an
/// update's custom keys. A key is a byte string, as a name is: the precomposed and the decomposed "é" are two keys
/// (as they are to Cloud Storage, which keeps a map's keys as they were sent), which a Swift `Dictionary` would take
/// for one, keeping whichever key it met first. Storage, output and an update's merge all want the byte order,
/// which this keeps rather than sorts each time.
///
/// For the small maps it holds (custom metadata is at most 8 KiB, rule M5) a sorted array searched by halves is as
/// fast as hashing, and walks in order for free.
public struct ByteKeyedMap<Value>: RandomAccessCollection {
    public typealias Element = (key: String, value: Value)

    /// The entries, in byte order of their keys, no two keys with the same bytes.
    @usableFromInline var entries: [Element]

    public init() { entries = [] }

    /// The pairs as a map; a later pair replaces an earlier one whose key has the same bytes. Sorted once, not
    /// inserted one by one: a client's map of many keys in any order costs n log n, not n².
    public init(_ pairs: some Sequence<(String, Value)>) {
        let sorted = pairs.enumerated().sorted { a, b in
            NameBytes.sameBytes(a.element.0, b.element.0)
                ? a.offset < b.offset : NameBytes.precedes(a.element.0, b.element.0)
        }
        entries = []
        entries.reserveCapacity(sorted.count)
        for (_, (key, value)) in sorted {
            if let last = entries.last, NameBytes.sameBytes(last.key, key) {
                entries[entries.count - 1] = (key, value)
            } else {
                entries.append((key, value))
            }
        }
    }

    /// Entries the caller knows to be in byte order of their keys, no two the same (a merge's output).
    init(orderedEntries: [Element]) {
        assert(zip(orderedEntries, orderedEntries.dropFirst()).allSatisfy { NameBytes.precedes($0.key, $1.key) })
        entries = orderedEntries
    }

    @inlinable public var startIndex: Int { entries.startIndex }
    @inlinable public var endIndex: Int { entries.endIndex }
    @inlinable public subscript(position: Int) -> Element { entries[position] }

    /// The value of the key with `key`'s bytes, if any.
    public subscript(key: String) -> Value? {
        get {
            let (position, found) = search(key)
            return found ? entries[position].value : nil
        }
        set {
            let (position, found) = search(key)
            switch (found, newValue) {
            case (true, let value?): entries[position] = (key, value)
            case (true, nil): entries.remove(at: position)
            case (false, let value?): entries.insert((key, value), at: position)
            case (false, nil): break
            }
        }
    }

    /// Removes the key with `key`'s bytes; answers the value it had.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> Value? {
        let (position, found) = search(key)
        return found ? entries.remove(at: position).value : nil
    }

    /// The keys, in byte order.
    public var keys: [String] { entries.map(\.key) }
    /// The values, in byte order of their keys.
    public var values: [Value] { entries.map(\.value) }

    /// The entries in byte order of their keys (as `Dictionary.sortedByKeyBytes` gives a dictionary's).
    public var sortedByKeyBytes: [Element] { entries }

    /// The entries `isIncluded` keeps, as a map.
    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> ByteKeyedMap {
        ByteKeyedMap(orderedEntries: try entries.filter(isIncluded))
    }

    /// The same keys with `transform`'s values.
    public func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> ByteKeyedMap<T> {
        ByteKeyedMap<T>(orderedEntries: try entries.map { ($0.key, try transform($0.value)) })
    }

    /// Where `key` is, or would be put: the first entry whose key does not precede it.
    private func search(_ key: String) -> (position: Int, found: Bool) {
        var key = key
        return key.withUTF8 { wanted in
            let wanted = UnsafeRawBufferPointer(wanted)
            var low = 0
            var high = entries.count
            while low < high {
                let middle = low + (high - low) / 2
                var candidate = entries[middle].key
                let precedes = candidate.withUTF8 { NameBytes.precedes(UnsafeRawBufferPointer($0), wanted) }
                if precedes { low = middle + 1 } else { high = middle }
            }
            guard low < entries.count else { return (low, false) }
            var candidate = entries[low].key
            return (low, candidate.withUTF8 { NameBytes.sameBytes(UnsafeRawBufferPointer($0), wanted) })
        }
    }
}

extension ByteKeyedMap: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Value)...) { self.init(elements) }
}

extension ByteKeyedMap: Sendable where Value: Sendable {}

/// A value whose equality is that of its bytes, as storesh compares text (`NameBytes.sameBytes`).
public protocol BytewiseEquatable {
    func hasSameBytes(as other: Self) -> Bool
}

extension String: BytewiseEquatable {
    public func hasSameBytes(as other: String) -> Bool { NameBytes.sameBytes(self, other) }
}

/// Two maps are equal when they have the same keys and values, as bytes.
extension ByteKeyedMap: Equatable where Value: BytewiseEquatable {
    public static func == (a: ByteKeyedMap, b: ByteKeyedMap) -> Bool {
        a.count == b.count
            && zip(a.entries, b.entries).allSatisfy {
                NameBytes.sameBytes($0.key, $1.key) && $0.value.hasSameBytes(as: $1.value)
            }
    }
}

extension ByteKeyedMap: CustomStringConvertible {
    public var description: String {
        "[" + entries.map { "\($0.key.debugDescription): \($0.value)" }.joined(separator: ", ") + "]"
    }
}

/// Custom metadata (rule M5): keys and values as bytes, in byte order of the keys.
public typealias CustomMetadata = ByteKeyedMap<String>

/// A JSON object's members as a map, each key as the decoder gives it. (Foundation's `JSONDecoder` gives an object's
/// members through a Swift dictionary: of two keys that are canonically equal, one arrives.)
extension ByteKeyedMap: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: JSONMemberKey.self)
        self.init(try container.allKeys.map { ($0.stringValue, try container.decode(Value.self, forKey: $0)) })
    }
}
