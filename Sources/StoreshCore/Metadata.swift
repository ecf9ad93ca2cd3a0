/// The metadata properties of an object and who may write them (rule M1).
public enum MetadataProperty: String, CaseIterable, Sendable {
    case bucket, generation, metageneration, fullPath, name, size, timeCreated, updated, md5Hash
    case cacheControl, contentDisposition, contentEncoding, contentLanguage, contentType, customMetadata

    public enum Access: Sendable {
        case readOnly
        /// md5Hash: given only with an upload, and checked against the content.
        case atUploadOnly
        case writable
    }

    public var access: Access {
        switch self {
        case .bucket, .generation, .metageneration, .fullPath, .name, .size, .timeCreated, .updated: .readOnly
        case .md5Hash: .atUploadOnly
        case .cacheControl, .contentDisposition, .contentEncoding, .contentLanguage, .contentType,
            .customMetadata:
            .writable
        }
    }

    /// The writable string-valued properties (all writable ones except customMetadata).
    public static let writableStrings: [MetadataProperty] = [
        .cacheControl, .contentDisposition, .contentEncoding, .contentLanguage, .contentType,
    ]
}

/// One writable string property of an object; the subset of `MetadataProperty` an update may name.
public enum WritableProperty: String, CaseIterable, Sendable, Hashable {
    case cacheControl, contentDisposition, contentEncoding, contentLanguage, contentType

    public var property: MetadataProperty { MetadataProperty(rawValue: rawValue)! }

    /// Hashed by its case, not by its raw value's text (which a `RawRepresentable` hashes by default): an update's
    /// properties are looked up for every object of a bulk edit.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .cacheControl: hasher.combine(0)
        case .contentDisposition: hasher.combine(1)
        case .contentEncoding: hasher.combine(2)
        case .contentLanguage: hasher.combine(3)
        case .contentType: hasher.combine(4)
        }
    }
}

/// The metadata of one object (rule M1).
public struct ObjectMetadata: Sendable, Equatable {
    public var bucket: String
    public var fullPath: String
    public var generation: Int64
    public var metageneration: Int64
    public var size: Int64
    public var timeCreated: Timestamp
    public var updated: Timestamp
    public var md5Hash: String
    public var cacheControl: String?
    public var contentDisposition: String?
    public var contentEncoding: String?
    public var contentLanguage: String?
    public var contentType: String?
    /// Never holds an empty map's worth of meaning: an empty map is "absent" (rule M5). Keys are bytes.
    public var customMetadata: CustomMetadata
    /// An S3 object's ETag, quoted as the service gives it: what its changes are guarded by (rule S3). Nil where
    /// objects have generations (a local bucket, Cloud Storage).
    public var entityTag: String?
    /// An S3 object's version id, in a versioned bucket (rule S2).
    public var versionID: String?
    /// The content's CRC-32C as Cloud Storage gives it (the base64 of its 4 bytes, most significant first), which
    /// the official clients check a download against. Read-only, like md5Hash, and not part of storesh's own
    /// metadata document (`meta get`); nil where the store gives none (S3).
    public var crc32c: String?
    /// When a noncurrent generation stopped being live (overwritten or deleted while the bucket's versioning was on,
    /// rule B5): Cloud Storage's `timeDeleted`. Nil for a live object.
    public var timeDeleted: Timestamp?
    /// Cloud Storage's own fields (rule M9): custom time, holds, storage class, contexts, component count.
    public var cloudStorage = CloudStorageFields()

    public init(
        bucket: String, fullPath: String, generation: Int64, metageneration: Int64, size: Int64,
        timeCreated: Timestamp, updated: Timestamp, md5Hash: String, cacheControl: String? = nil,
        contentDisposition: String? = nil, contentEncoding: String? = nil, contentLanguage: String? = nil,
        contentType: String? = nil, customMetadata: CustomMetadata = [:], entityTag: String? = nil,
        versionID: String? = nil,
        crc32c: String? = nil, timeDeleted: Timestamp? = nil
    ) {
        self.bucket = bucket
        self.fullPath = fullPath
        self.generation = generation
        self.metageneration = metageneration
        self.size = size
        self.timeCreated = timeCreated
        self.updated = updated
        self.md5Hash = md5Hash
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.contentLanguage = contentLanguage
        self.contentType = contentType
        self.customMetadata = customMetadata
        self.entityTag = entityTag
        self.versionID = versionID
        self.crc32c = crc32c
        self.timeDeleted = timeDeleted
    }

    /// Two descriptions of one object version are equal whether or not one of them carries the CRC-32C: a bucket
    /// reads it only where it answers with metadata (not in a bulk edit's scan), and md5Hash, compared here,
    /// already tells contents apart. Every other property counts, its text compared as bytes: a name or a value in
    /// NFC is not the same as in NFD, though Swift's `String ==` says so, and an update from one to the other is a
    /// change, not "unchanged".
    public static func == (a: ObjectMetadata, b: ObjectMetadata) -> Bool {
        a.generation == b.generation && a.metageneration == b.metageneration && a.size == b.size
            && a.timeCreated == b.timeCreated && a.updated == b.updated
            && NameBytes.sameBytes(a.bucket, b.bucket) && NameBytes.sameBytes(a.fullPath, b.fullPath)
            && NameBytes.sameBytes(a.md5Hash, b.md5Hash)
            && WritableProperty.allCases.allSatisfy { NameBytes.sameBytes(a[$0], b[$0]) }
            && NameBytes.sameBytes(a.entityTag, b.entityTag) && NameBytes.sameBytes(a.versionID, b.versionID)
            && a.timeDeleted == b.timeDeleted && a.cloudStorage == b.cloudStorage
            && a.customMetadata == b.customMetadata
    }

    /// False for an S3 object, which has no generation or metageneration (rule S2): both are then 0, and not shown.
    public var hasGenerations: Bool { generation != 0 }

    /// The last segment of the name (rule P3).
    public var name: String { NameBytes.lastSegment(of: fullPath) }

    /// The custom metadata key where Firebase keeps an object's download tokens, comma-separated (rule G7): kept on
    /// every update, and hidden from `meta get` unless `--raw`.
    public static let downloadTokensKey = "firebaseStorageDownloadTokens"

    /// The metadata without its download tokens, as `meta get` shows it (rule G7).
    public var withoutDownloadTokens: ObjectMetadata {
        var shown = self
        shown.customMetadata[Self.downloadTokensKey] = nil
        return shown
    }

    public subscript(property: WritableProperty) -> String? {
        get {
            switch property {
            case .cacheControl: cacheControl
            case .contentDisposition: contentDisposition
            case .contentEncoding: contentEncoding
            case .contentLanguage: contentLanguage
            case .contentType: contentType
            }
        }
        set {
            switch property {
            case .cacheControl: cacheControl = newValue
            case .contentDisposition: contentDisposition = newValue
            case .contentEncoding: contentEncoding = newValue
            case .contentLanguage: contentLanguage = newValue
            case .contentType: contentType = newValue
            }
        }
    }

    /// The metadata of newly written content (rule M3): a new generation, metageneration 1,
    /// timeCreated = updated = `now`, the content's size, MD5 and CRC-32C. contentType, when not given,
    /// is guessed from the name's extension.
    public static func newObject(
        bucket: String, name: ObjectName, content: some Collection<UInt8>, generation: Int64, now: Timestamp,
        properties: [WritableProperty: String] = [:], customMetadata: CustomMetadata = [:],
        guessingContentType: Bool = true
    ) -> ObjectMetadata {
        newObject(
            bucket: bucket, name: name, size: Int64(content.count), md5Hash: ContentHash.md5Base64(content),
            crc32c: CRC32C.base64(of: content), generation: generation, now: now, properties: properties,
            customMetadata: customMetadata, guessingContentType: guessingContentType)
    }

    /// A new object whose content is known by its size and checksums (content that is streamed, never whole in
    /// memory).
    public static func newObject(
        bucket: String, name: ObjectName, size: Int64, md5Hash: String, crc32c: String? = nil, generation: Int64,
        now: Timestamp, properties: [WritableProperty: String] = [:], customMetadata: CustomMetadata = [:],
        guessingContentType: Bool = true
    ) -> ObjectMetadata {
        var metadata = ObjectMetadata(
            bucket: bucket, fullPath: name.rawValue, generation: generation, metageneration: 1,
            size: size, timeCreated: now, updated: now, md5Hash: md5Hash, customMetadata: customMetadata, crc32c: crc32c
        )
        for (property, value) in properties { metadata[property] = value }
        if metadata.contentType == nil && guessingContentType {
            metadata.contentType = ContentType.guess(forName: name.rawValue)
        }
        return metadata
    }

    /// The result of an update (rules M4–M6, M9): the new metadata, and whether anything changed.
    /// A change increments metageneration and sets `updated` to `now`; no change leaves everything as it was.
    public func applying(
        _ update: MetadataUpdate, now: Timestamp
    ) throws(StorageError) -> (
        metadata: ObjectMetadata, changed: Bool
    ) {
        var merged = MergedMetadata(self)
        do throws(MetadataMergeFailure) {
            _ = try update.merge(into: &merged)
        } catch {
            throw error.storageError
        }
        var next = merged.finish()
        next.cloudStorage = try update.cloudStorage.applied(to: cloudStorage, now: now)
        return try stamped(next, now: now)
    }

    /// `self` with the writable metadata of `other` (rule M1's writable properties and the custom map, as they
    /// are), as a change at `now`: how a bucket stores a state decided or planned elsewhere (`applyMetadata`)
    /// without merging an update again.
    public func replacingWritableMetadata(
        with other: ObjectMetadata, now: Timestamp
    ) throws(StorageError) -> (
        metadata: ObjectMetadata, changed: Bool
    ) {
        var next = self
        for property in WritableProperty.allCases { next[property] = other[property] }
        next.customMetadata = other.customMetadata
        try CustomMetadataLimits.validate(next.customMetadata)
        // A state without the custom time this object has (an undo, a restore) cannot be made: it is never removed.
        if let time = cloudStorage.customTime, other.cloudStorage.customTime == nil {
            throw .invalidArgument(
                "customTime cannot be removed: once set, it only moves forward (it is \(time.rfc3339Microseconds); rule M9). Nothing was changed."
            )
        }
        next.cloudStorage = try CloudStorageFieldsUpdate(from: cloudStorage, to: other.cloudStorage).applied(
            to: cloudStorage, now: now)
        return try stamped(next, now: now)
    }

    /// `next`, a change of `self`'s writable metadata, stamped as a change at `now` (rule M6; one that changes nothing
    /// is no change, and keeps `self`).
    ///
    /// A change of storage class is a rewrite (rule M9): the object is written again, content and metadata, as a new
    /// generation made at `now` (metageneration 1). The generation here is larger than the object's; a bucket that
    /// gives its own replaces it.
    private func stamped(
        _ next: ObjectMetadata, now: Timestamp
    ) throws(StorageError) -> (metadata: ObjectMetadata, changed: Bool) {
        guard next != self else { return (self, false) }
        var next = next
        if rewrites(to: next) {
            let (following, overflow) = generation.addingReportingOverflow(1)
            guard !overflow else {
                throw .invalidArgument(
                    "Object \(MessageText.name(fullPath)) has the largest generation there is; it cannot be rewritten.")
            }
            next.generation = max(now.microseconds, following)
            next.metageneration = 1
            next.timeCreated = now
        } else {
            next.metageneration = try Self.metageneration(after: metageneration)
        }
        next.updated = now
        return (next, true)
    }

    /// Whether going from `self` to `other` is a rewrite, not an update: a change of storage class (rule M9).
    public func rewrites(to other: ObjectMetadata) -> Bool {
        cloudStorage.effectiveStorageClass != other.cloudStorage.effectiveStorageClass
    }
}

/// How one property changes in an update (rule M4). A property not named in the update is unchanged.
public enum PropertyChange: Sendable, Equatable, BytewiseEquatable {
    case set(String)
    case unset

    public func hasSameBytes(as other: PropertyChange) -> Bool {
        switch (self, other) {
        case (.set(let a), .set(let b)): NameBytes.sameBytes(a, b)
        case (.unset, .unset): true
        default: false
        }
    }
}

/// A partial metadata update (rules M4, M5): names only what changes.
public struct MetadataUpdate: Sendable, Equatable {
    public var properties: [WritableProperty: PropertyChange]
    /// Per-key changes of customMetadata, applied after `clearsCustomMetadata`; keys are bytes.
    public var customMetadata: ByteKeyedMap<PropertyChange>
    /// Unsetting customMetadata as a whole clears the map (rule M5).
    public var clearsCustomMetadata: Bool
    /// Changes of Cloud Storage's own fields (rule M9).
    public var cloudStorage = CloudStorageFieldsUpdate()

    public init(
        properties: [WritableProperty: PropertyChange] = [:], customMetadata: ByteKeyedMap<PropertyChange> = [:],
        clearsCustomMetadata: Bool = false
    ) {
        self.properties = properties
        self.customMetadata = customMetadata
        self.clearsCustomMetadata = clearsCustomMetadata
    }

    public var isEmpty: Bool {
        properties.isEmpty && customMetadata.isEmpty && !clearsCustomMetadata && cloudStorage.isEmpty
    }

    /// The update that makes `before`'s writable metadata `after`'s: each property and custom key that differs,
    /// set or unset (never a clearing of the whole map, so keys that did not change are not touched).
    public init(from before: ObjectMetadata, to after: ObjectMetadata) {
        self.init()
        for difference in before.differences(to: after) {
            let change: PropertyChange = difference.new.map { .set($0) } ?? .unset
            if difference.key.hasPrefix("custom.") {
                customMetadata[String(difference.key.dropFirst("custom.".count))] = change
            } else if let property = WritableProperty(rawValue: difference.key) {
                properties[property] = change
            }
        }
        cloudStorage = CloudStorageFieldsUpdate(from: before.cloudStorage, to: after.cloudStorage)
    }

    /// Adds `key=value` as a user writes it: a writable property name, or `custom.NAME`
    /// (or `customMetadata.NAME`). Read-only and unknown names are invalid-argument (rule M7).
    public mutating func set(_ key: String, to value: String) throws(StorageError) {
        switch try MetadataKey(parsing: key) {
        case .property(let property): properties[property] = .set(value)
        case .custom(let name): customMetadata[name] = .set(value)
        case .cloudStorage(let field): try cloudStorage.set(field, to: value)
        case .allCustomMetadata:
            throw .invalidArgument(
                "customMetadata is a map: set one key with custom.NAME=VALUE, or unset it as a whole.")
        }
    }

    /// Adds the removal of `key` (rule M4), or of all of customMetadata for `custom`/`customMetadata` (rule M5).
    public mutating func unset(_ key: String) throws(StorageError) {
        switch try MetadataKey(parsing: key) {
        case .property(let property): properties[property] = .unset
        case .custom(let name): customMetadata[name] = .unset
        case .cloudStorage(let field): try cloudStorage.unset(field)
        case .allCustomMetadata:
            clearsCustomMetadata = true
            customMetadata = customMetadata.filter { if case .set = $0.value { true } else { false } }
        }
    }
}

/// A metadata key as users write it in updates: `contentType`, `custom.NAME`, `custom` for the whole map, or one
/// of Cloud Storage's own fields (`customTime`, `temporaryHold`, `eventBasedHold`, `context.KEY`; rule M9).
public enum MetadataKey: Sendable, Equatable {
    case property(WritableProperty)
    case custom(String)
    case allCustomMetadata
    case cloudStorage(CloudStorageWritableField)

    public static let customPrefixes = ["custom.", "customMetadata."]

    /// Every key a user can name in an update, for help and completion (custom keys and contexts excepted).
    public static var writableNames: [String] {
        WritableProperty.allCases.map(\.rawValue) + ["custom"] + CloudStorageWritableField.names
    }

    public init(parsing key: String) throws(StorageError) {
        if key == "custom" || key == "customMetadata" {
            self = .allCustomMetadata
            return
        }
        for prefix in Self.customPrefixes where key.hasPrefix(prefix) {
            let name = String(key.dropFirst(prefix.count))
            if name.isEmpty {
                throw .invalidArgument("Custom metadata keys must not be empty: write \(prefix)NAME (rule M5).")
            }
            self = .custom(name)
            return
        }
        if let property = WritableProperty(rawValue: key) {
            self = .property(property)
            return
        }
        if let field = CloudStorageWritableField(key: key) {
            self = .cloudStorage(field)
            return
        }
        if let property = MetadataProperty(rawValue: key) {
            let why =
                property.access == .atUploadOnly
                ? "it is computed from the content and can only be given, and checked, with an upload (put --md5)"
                : "it is read-only"
            throw .invalidArgument("Property '\(key)' cannot be changed: \(why) (rule M7).")
        }
        var message = "Unknown metadata property '\(key)'"
        let candidates = MetadataProperty.allCases.map(\.rawValue) + ["custom"] + CloudStorageWritableField.names
        if let suggestion = Suggestion.nearest(to: key, among: candidates) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message +=
                "; writable properties are \(Self.writableNames.joined(separator: ", ")), custom.NAME and context.KEY."
        }
        throw .invalidArgument(message + " (rule M7)")
    }
}

/// The size limit of customMetadata (rule M5).
public enum CustomMetadataLimits {
    /// Keys and values together, in bytes of UTF-8.
    public static let maximumBytes = 8 * 1024

    public static func validate(_ custom: CustomMetadata) throws(StorageError) {
        var total = 0
        var notASCII = false
        for (key, value) in custom {
            if key.isEmpty { throw emptyKeyError }
            total += key.utf8.count + value.utf8.count
            notASCII = notASCII || key.utf8.contains { $0 >= 0x80 }
        }
        if total > maximumBytes { throw tooLargeError(bytes: total) }
        if notASCII, let (first, second) = equivalentKeys(in: custom.keys) {
            throw equivalentKeysError(first, second)
        }
    }

    /// Two of `keys` that are one text in two spellings (canonically equivalent, different bytes), if any. A key is
    /// its bytes, but a map is carried in JSON by plans, journals, archives and the APIs, whose readers here take
    /// two such keys for one: a map holding both could not be kept, reviewed or put back whole.
    public static func equivalentKeys(in keys: [String]) -> (String, String)? {
        // A Swift `String` is equal, and hashed alike, by canonical equivalence.
        var seen: [String: String] = [:]
        for key in keys {
            if let other = seen[key], !NameBytes.sameBytes(other, key) { return (other, key) }
            seen[key] = key
        }
        return nil
    }

    static func equivalentKeysError(_ first: String, _ second: String) -> StorageError {
        .invalidArgument(
            "Custom metadata keys '\(MessageText.name(first))' and '\(MessageText.name(second))' are one text in two spellings; a map keeps one of them, not both. Unset one in the same update to rename it (rule M5)."
        )
    }

    static let emptyKeyError = StorageError.invalidArgument("Custom metadata keys must not be empty (rule M5).")

    static func tooLargeError(bytes: Int) -> StorageError {
        .invalidArgument(
            "Custom metadata would take \(bytes) bytes; keys and values together are limited to \(maximumBytes) bytes (rule M5)."
        )
    }
}

/// One writable property that differs between two states of an object: the plan of a dry run and the
/// changes of a snapshot diff (`custom.NAME` for keys of customMetadata; nil is "not set").
///
/// Equal and hashed by bytes, as the values are stored: a change from a precomposed "café" is not the change from
/// a decomposed one (Swift's `String ==` would count them as one in a summary, and report one's bytes for both).
public struct PropertyDifference: Sendable, Hashable {
    public var key: String
    public var old: String?
    public var new: String?

    public init(key: String, old: String?, new: String?) {
        self.key = key
        self.old = old
        self.new = new
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        NameBytes.sameBytes(lhs.key, rhs.key) && NameBytes.sameBytes(lhs.old, rhs.old)
            && NameBytes.sameBytes(lhs.new, rhs.new)
    }

    public func hash(into hasher: inout Hasher) {
        for text in [key, old, new] {
            guard let text else {
                hasher.combine(-1)
                continue
            }
            NameBytes.hash(text, into: &hasher)
        }
    }
}

extension ObjectMetadata {
    /// The writable properties that differ from `self` to `other`, in M1 order, then custom keys in byte order, then
    /// Cloud Storage's own writable fields by key bytes.
    public func differences(to other: ObjectMetadata) -> [PropertyDifference] {
        var differences: [PropertyDifference] = []
        for property in WritableProperty.allCases where !NameBytes.sameBytes(self[property], other[property]) {
            differences.append(PropertyDifference(key: property.rawValue, old: self[property], new: other[property]))
        }
        // Both maps are in byte order of their keys: walked side by side.
        var (mine, theirs) = (customMetadata.startIndex, other.customMetadata.startIndex)
        while true {
            let a = mine < customMetadata.endIndex ? customMetadata[mine] : nil
            let b = theirs < other.customMetadata.endIndex ? other.customMetadata[theirs] : nil
            switch (a, b) {
            case (let a?, let b?) where NameBytes.sameBytes(a.key, b.key):
                if !NameBytes.sameBytes(a.value, b.value) {
                    differences.append(PropertyDifference(key: "custom." + a.key, old: a.value, new: b.value))
                }
                mine += 1
                theirs += 1
            case (let a?, let b) where b.map { NameBytes.precedes(a.key, $0.key) } ?? true:
                differences.append(PropertyDifference(key: "custom." + a.key, old: a.value, new: nil))
                mine += 1
            case (_, let b?):
                differences.append(PropertyDifference(key: "custom." + b.key, old: nil, new: b.value))
                theirs += 1
            case (_, nil):
                break
            }
            if a == nil && b == nil { break }
        }
        // Cloud Storage's own writable fields (rule M9), after: an object written through Firebase has none, and
        // what a plan or a diff said of it before they were kept is said the same way.
        var fields: [CloudStorageWritableField] = []
        for field in cloudStorage.writableFields + other.cloudStorage.writableFields where !fields.contains(field) {
            fields.append(field)
        }
        for field in fields.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            let (old, new) = (cloudStorage.text(of: field), other.cloudStorage.text(of: field))
            if !NameBytes.sameBytes(old, new) {
                differences.append(PropertyDifference(key: field.key, old: old, new: new))
            }
        }
        return differences
    }
}
