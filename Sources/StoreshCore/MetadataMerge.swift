import Foundation

/// Text as its UTF-8 bytes: a Swift string, or bytes read from storage. What an update's merge compares and copies.
public protocol TextBytes {
    func withTextBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
}

extension String: TextBytes {
    @inlinable
    public func withTextBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var text = self
        return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

extension UnsafeRawBufferPointer: TextBytes {
    @inlinable
    public func withTextBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(self)
    }
}

/// What an update is merged into (rules M4, M5): an object's writable metadata as the merge reads it, and where it
/// says what the result is. An object's metadata in memory is one (`ObjectMetadata.applying`); a stored row's
/// bytes are another (a local bucket's uniform update rewrites rows from their columns without making an object's
/// metadata). Both are merged by `MetadataUpdate.merge(into:)`, so that the rules are written once.
public protocol MetadataMergeTarget {
    associatedtype Text: TextBytes

    /// The value `property` has before the update; nil when it is not set.
    func value(of property: WritableProperty) -> Text?

    /// The next entry of the custom map before the update, in byte order of the keys; nil after the last.
    mutating func nextCustomEntry() throws(MetadataMergeFailure) -> (key: Text, value: Text)?

    /// Makes `nextCustomEntry` start again from the first entry (the rare second look of rule M5's spelling check).
    mutating func rewindCustomEntries()

    /// A property the update names takes a new value (nil: it is unset). Called only when the value's bytes change,
    /// in rule M1's order.
    mutating func change(_ property: WritableProperty, from old: Text?, to new: String?)

    /// The next entry of the custom map the update leaves, or one it removes, in byte order of the keys.
    mutating func custom(_ entry: MergedCustomEntry<Text>)
}

/// One custom key as an update's merge leaves it (rule M5).
public enum MergedCustomEntry<Text> {
    /// A stored entry the update does not change (not named, or set to the value it has).
    case kept(key: Text, value: Text)
    /// The update's key at `index` (of its custom keys in byte order) set to `value`, new or different from `old`.
    case set(index: Int, key: String, value: String, old: Text?)
    /// A stored entry removed: unset by the update's key at `index`, or, with no index, by clearing the map.
    case removed(index: Int?, key: Text, old: Text)
}

/// Why an update's merge could not make a custom map rule M5 allows.
public enum MetadataMergeFailure: Error, Sendable, Equatable {
    /// A key that is empty, in the update or in the stored map.
    case emptyKey
    /// Keys and values together take more than `CustomMetadataLimits.maximumBytes`.
    case tooLarge(bytes: Int)
    /// The stored map could not be read, or its keys are not in byte order (stored bytes only).
    case unreadable
    /// Two keys of the map it would leave are one text in two spellings (precomposed and decomposed `é`).
    case equivalentKeys(String, String)

    /// The refusal a user reads (rule M5).
    public var storageError: StorageError {
        switch self {
        case .emptyKey: CustomMetadataLimits.emptyKeyError
        case .tooLarge(let bytes): CustomMetadataLimits.tooLargeError(bytes: bytes)
        case .unreadable: .internalError("A stored customMetadata value is damaged.")
        case .equivalentKeys(let first, let second): CustomMetadataLimits.equivalentKeysError(first, second)
        }
    }
}

extension MetadataUpdate {
    /// Rules M4 and M5 (`MetadataMerge`) applied to `target`; answers whether anything changed.
    @inlinable
    public func merge<Target: MetadataMergeTarget>(into target: inout Target) throws(MetadataMergeFailure) -> Bool {
        try MetadataMerge(self).merge(into: &target)
    }
}

/// An update ready to be merged (rules M4, M5), once for all the objects it is merged into: its properties in rule
/// M1's order, its custom keys in byte order with their UTF-8.
public struct MetadataMerge: Sendable {
    /// The properties the update names, in rule M1's order, each with its new value (nil: unset).
    public let properties: [(property: WritableProperty, value: String?)]
    /// The custom keys it names, in byte order: each key, its UTF-8, and its new value (nil: unset).
    @usableFromInline let keys: [(key: String, utf8: [UInt8], value: String?)]
    /// Whether it clears the custom map first.
    @usableFromInline let clears: Bool
    /// Whether it sets a key, and whether one it sets is not ASCII: another key of the map might be the same text
    /// spelled differently (rule M5).
    @usableFromInline let setsKeys: Bool
    @usableFromInline let setsNonASCIIKeys: Bool

    @inlinable
    public init(_ update: MetadataUpdate) {
        properties = WritableProperty.allCases.compactMap { property in
            update.properties[property].map { change in
                (property, { if case .set(let value) = change { value } else { nil } }())
            }
        }
        keys = update.customMetadata.map { key, change in
            (key, Array(key.utf8), { if case .set(let value) = change { value } else { nil } }())
        }
        clears = update.clearsCustomMetadata
        setsKeys = keys.contains { $0.value != nil }
        setsNonASCIIKeys = keys.contains { $0.value != nil && $0.utf8.contains { $0 >= 0x80 } }
    }

    /// Rules M4 and M5, the one implementation of both: each property the update names takes its value or is unset
    /// (M4); the custom map is merged key by key in byte order of the keys, cleared first when the update clears it,
    /// and the map it leaves checked against M5's limits, changed or not (M5). What results is told to `target`;
    /// answers whether anything changed. Cloud Storage's own fields (M9) and the stamp of a change (M6) are not
    /// merged here.
    ///
    /// Inlinable, so that each target's merge is compiled for it (a row's runs a million times in a bulk edit).
    @inlinable
    public func merge<Target: MetadataMergeTarget>(into target: inout Target) throws(MetadataMergeFailure) -> Bool {
        var changed = false
        for (property, new) in properties {
            let old = target.value(of: property)
            let same: Bool =
                if let new, let old { old.withTextBytes { NameBytes.sameBytes(new, $0) } } else {
                    new == nil && old == nil
                }
            if !same {
                target.change(property, from: old, to: new)
                changed = true
            }
        }
        var total = 0
        var next = 0
        // Whether a stored key is not ASCII, when the update sets keys: the map then gets the spelling check.
        var storedNonASCII = false
        /// The update's key `index`, where the stored map has no such key.
        func add(_ index: Int) throws(MetadataMergeFailure) {
            guard !keys[index].utf8.isEmpty else { throw .emptyKey }
            guard let value = keys[index].value else { return }
            total += keys[index].utf8.count + value.utf8.count
            target.custom(.set(index: index, key: keys[index].key, value: value, old: nil))
            changed = true
        }
        /// A stored key the map keeps.
        func keeps(_ key: Target.Text) {
            guard setsKeys, !storedNonASCII else { return }
            storedNonASCII = key.withTextBytes { $0.contains { $0 >= 0x80 } }
        }
        var previous: Target.Text?
        while let (key, value) = try target.nextCustomEntry() {
            let keyCount = key.withTextBytes(\.count)
            guard keyCount > 0 else { throw .emptyKey }
            if let previous {
                guard previous.withTextBytes({ before in key.withTextBytes { NameBytes.precedes(before, $0) } }) else {
                    throw .unreadable
                }
            }
            previous = key
            while next < keys.count, Self.precedes(keys[next].utf8, key) {
                try add(next)
                next += 1
            }
            if next < keys.count, Self.same(keys[next].utf8, key) {
                let index = next
                next += 1
                guard let new = keys[index].value else {
                    target.custom(.removed(index: index, key: key, old: value))
                    changed = true
                    continue
                }
                total += keyCount + new.utf8.count
                keeps(key)
                if value.withTextBytes({ NameBytes.sameBytes(new, $0) }) {
                    target.custom(.kept(key: key, value: value))
                } else {
                    target.custom(.set(index: index, key: keys[index].key, value: new, old: value))
                    changed = true
                }
            } else if clears {
                target.custom(.removed(index: nil, key: key, old: value))
                changed = true
            } else {
                total += keyCount + value.withTextBytes(\.count)
                keeps(key)
                target.custom(.kept(key: key, value: value))
            }
        }
        while next < keys.count {
            try add(next)
            next += 1
        }
        guard total <= CustomMetadataLimits.maximumBytes else { throw .tooLarge(bytes: total) }
        if setsKeys && (setsNonASCIIKeys || storedNonASCII) {
            try checkSpellings(of: &target)
        }
        return changed
    }

    /// Rule M5's spelling check, when the update sets keys and the map it leaves has one that is not ASCII: no two of
    /// its keys may be one text in two spellings. A second look at the stored entries, which most merges never take.
    @inlinable
    func checkSpellings<Target: MetadataMergeTarget>(of target: inout Target) throws(MetadataMergeFailure) {
        var left = keys.filter { $0.value != nil }.map(\.key)
        target.rewindCustomEntries()
        while let (key, _) = try target.nextCustomEntry() {
            // A key the update names is set (and in `left` already) or unset; one the update clears is gone.
            guard !clears, !keys.contains(where: { Self.same($0.utf8, key) }) else { continue }
            left.append(key.withTextBytes { String(decoding: $0, as: UTF8.self) })
        }
        if let (first, second) = CustomMetadataLimits.equivalentKeys(in: left) {
            throw .equivalentKeys(first, second)
        }
    }

    @inlinable
    static func precedes(_ utf8: [UInt8], _ bytes: some TextBytes) -> Bool {
        utf8.withUnsafeBytes { key in bytes.withTextBytes { NameBytes.precedes(key, $0) } }
    }

    @inlinable
    static func same(_ utf8: [UInt8], _ bytes: some TextBytes) -> Bool {
        utf8.withUnsafeBytes { key in bytes.withTextBytes { NameBytes.sameBytes(key, $0) } }
    }
}

extension ObjectMetadata {
    /// Rule M6: the metageneration of an object after an update that changes something.
    public static func metageneration(after metageneration: Int64) throws(StorageError) -> Int64 {
        let (next, overflow) = metageneration.addingReportingOverflow(1)
        guard !overflow else {
            throw .invalidArgument("The object has the largest metageneration there is; it cannot be updated.")
        }
        return next
    }
}

/// An object's metadata as an update's merge target: the merge's result is `next`.
struct MergedMetadata: MetadataMergeTarget {
    private let before: ObjectMetadata
    private var position = 0
    private var entries: [(key: String, value: String)] = []
    private(set) var next: ObjectMetadata

    init(_ metadata: ObjectMetadata) {
        before = metadata
        next = metadata
        entries.reserveCapacity(metadata.customMetadata.count)
    }

    func value(of property: WritableProperty) -> String? { before[property] }

    mutating func nextCustomEntry() -> (key: String, value: String)? {
        guard position < before.customMetadata.count else {
            return nil
        }
        defer { position += 1 }
        return before.customMetadata[position]
    }

    mutating func rewindCustomEntries() { position = 0 }

    mutating func change(_ property: WritableProperty, from old: String?, to new: String?) { next[property] = new }

    mutating func custom(_ entry: MergedCustomEntry<String>) {
        switch entry {
        case .kept(let key, let value), .set(_, let key, let value, _): entries.append((key, value))
        case .removed: break
        }
    }

    /// `next`, with the merged custom map.
    mutating func finish() -> ObjectMetadata {
        next.customMetadata = CustomMetadata(orderedEntries: entries)
        return next
    }
}
