import Foundation

/// What Cloud Storage keeps of an object besides rule M1's properties and its custom metadata (rule M9): a custom
/// time that only moves forward, the temporary and event-based holds (an object under either is neither deleted nor
/// overwritten), its storage class (changed by a rewrite), its contexts (keys and values, each with when it was made
/// and last changed), a composite's component count, and the hash of the customer-supplied key it was written with. Empty for an object that has none, as every object written
/// through Firebase's SDKs is.
public struct CloudStorageFields: Sendable, Equatable {
    public var customTime: Timestamp?
    public var temporaryHold = false
    public var eventBasedHold = false
    /// Nil for the service's default, STANDARD (and for every object written before storesh kept classes).
    public var storageClass: String?
    /// When the class was set; nil with it.
    public var timeStorageClassUpdated: Timestamp?

    public static let defaultStorageClass = "STANDARD"

    /// The service's limits of contexts: 50 keys, each key and value at most 256 bytes, 25 KiB in all.
    public static let maximumContexts = 50
    public static let maximumContextBytes = 256
    public static let maximumContextsBytes = 25 << 10
    public var contexts: [String: ObjectContext] = [:]
    /// How many objects a composite was made of.
    public var componentCount: Int64?
    /// When a soft-deleted generation was deleted, and when it goes for good (rule B6); nil for any other.
    public var softDeleteTime: Timestamp?
    public var hardDeleteTime: Timestamp?
    /// The object's own access control list (rule B7), as JSON text; nil for its bucket's default object ACL.
    public var acl: String?
    /// The SHA-256 (base64) of the customer-supplied key the object was written with: every read of its content must
    /// give that key. The key itself is never kept.
    public var customerKeySHA256: String?
    /// The object's own retention: it is neither deleted nor overwritten before its time; nil when it has none.
    public var retention: ObjectRetention?
    /// When the bucket's retention policy lets the object go (its creation plus the policy's period), as the service
    /// answers it: computed where the object is read, never kept with it (not packed, not compared); nil without a
    /// policy.
    public var retentionExpirationTime: Timestamp?

    public init() {}

    public var isEmpty: Bool { packed.isEmpty }
    /// Whether a hold keeps the object from being deleted or overwritten.
    public var isHeld: Bool { temporaryHold || eventBasedHold }

    /// Fields compare as their bytes: a context's key or value in NFC is not the one in NFD (rule P7).
    public static func == (a: CloudStorageFields, b: CloudStorageFields) -> Bool { a.packed == b.packed }

    /// The fields in the bucket file's column: nothing when empty; else a version byte, a byte of flags, the values
    /// present, and the contexts in key byte order.
    public var packed: [UInt8] {
        var flags: UInt64 = 0
        if temporaryHold { flags |= 1 }
        if eventBasedHold { flags |= 2 }
        if customTime != nil { flags |= 4 }
        if storageClass != nil { flags |= 8 }
        if timeStorageClassUpdated != nil { flags |= 16 }
        if componentCount != nil { flags |= 32 }
        if customerKeySHA256 != nil { flags |= 64 }
        if softDeleteTime != nil || hardDeleteTime != nil { flags |= 128 }
        if acl != nil { flags |= 256 }
        if retention != nil { flags |= 512 }
        if flags == 0 && contexts.isEmpty { return [] }
        var writer = PackedWriter()
        writer.byte(1)
        writer.unsigned(flags)
        if let customTime { writer.signed(customTime.microseconds) }
        if let storageClass { writer.string(storageClass) }
        if let timeStorageClassUpdated { writer.signed(timeStorageClassUpdated.microseconds) }
        if let componentCount { writer.signed(componentCount) }
        if let customerKeySHA256 { writer.string(customerKeySHA256) }
        if flags & 128 != 0 {
            writer.signed(softDeleteTime?.microseconds ?? 0)
            writer.signed(hardDeleteTime?.microseconds ?? 0)
        }
        if let acl { writer.string(acl) }
        if let retention {
            writer.string(retention.mode.rawValue)
            writer.signed(retention.retainUntilTime.microseconds)
        }
        writer.unsigned(UInt64(contexts.count))
        for (key, context) in contexts.sortedByKeyBytes {
            writer.string(key)
            writer.string(context.value)
            writer.signed(context.createTime.microseconds)
            writer.signed(context.updateTime.microseconds)
        }
        return writer.bytes
    }

    /// The fields a column holds; nil for bytes no storesh wrote.
    public init?(packed bytes: some Collection<UInt8>) {
        self.init()
        if bytes.isEmpty { return }
        let decoded: CloudStorageFields? = Array(bytes).withUnsafeBytes { buffer in
            var reader = PackedReader(buffer)
            var fields = CloudStorageFields()
            do {
                guard try reader.byte() == 1 else { return nil }
                let flags = try reader.unsigned()
                fields.temporaryHold = flags & 1 != 0
                fields.eventBasedHold = flags & 2 != 0
                if flags & 4 != 0 { fields.customTime = Timestamp(microseconds: try reader.signed()) }
                if flags & 8 != 0 { fields.storageClass = try reader.string() }
                if flags & 16 != 0 { fields.timeStorageClassUpdated = Timestamp(microseconds: try reader.signed()) }
                if flags & 32 != 0 { fields.componentCount = try reader.signed() }
                if flags & 64 != 0 { fields.customerKeySHA256 = try reader.string() }
                if flags & 128 != 0 {
                    fields.softDeleteTime = Timestamp(microseconds: try reader.signed())
                    fields.hardDeleteTime = Timestamp(microseconds: try reader.signed())
                }
                if flags & 256 != 0 { fields.acl = try reader.string() }
                if flags & 512 != 0 {
                    guard let mode = ObjectRetention.Mode(rawValue: try reader.string()) else { return nil }
                    fields.retention = ObjectRetention(
                        mode: mode, retainUntilTime: Timestamp(microseconds: try reader.signed()))
                }
                let count = try reader.unsigned()
                // Bounded by the bytes: each context takes at least four.
                guard count <= UInt64(buffer.count) else { return nil }
                for _ in 0..<count {
                    let key = try reader.string()
                    let value = try reader.string()
                    fields.contexts[key] = ObjectContext(
                        value: value, createTime: Timestamp(microseconds: try reader.signed()),
                        updateTime: Timestamp(microseconds: try reader.signed()))
                }
                return reader.isAtEnd ? fields : nil
            } catch {
                return nil
            }
        }
        guard let decoded else { return nil }
        self = decoded
    }
}

extension CloudStorageFields {
    /// The fields as storesh's own documents write them (the metadata document, archives): the storage class and when
    /// it was set where the object has a class of its own (not the default), then `jsonMembers`.
    public var documentMembers: [(String, JSONValue)] {
        var members: [(String, JSONValue)] = []
        if let storageClass {
            members.append(("storageClass", .string(storageClass)))
            if let timeStorageClassUpdated {
                members.append(("timeStorageClassUpdated", .string(timeStorageClassUpdated.rfc3339Microseconds)))
            }
        }
        return members + jsonMembers
    }

    /// The fields as members of an object resource, each where it has a value, in the JSON API's shapes (storesh's
    /// own metadata document uses them too): `customTime`, `temporaryHold`, `eventBasedHold`, `componentCount`,
    /// `contexts: {custom: {KEY: {value, createTime, updateTime}}}`, `customerEncryption`. The storage class is the
    /// caller's to write (a resource always names one; storesh's documents only a class that is not the default:
    /// `documentMembers`).
    public var jsonMembers: [(String, JSONValue)] {
        var members: [(String, JSONValue)] = []
        if let customTime { members.append(("customTime", .string(customTime.rfc3339Microseconds))) }
        if temporaryHold { members.append(("temporaryHold", .bool(true))) }
        if eventBasedHold { members.append(("eventBasedHold", .bool(true))) }
        if let componentCount { members.append(("componentCount", .integer(componentCount))) }
        if !contexts.isEmpty {
            let custom = contexts.sortedByKeyBytes.map { key, context -> (String, JSONValue) in
                (
                    key,
                    .object([
                        ("value", .string(context.value)),
                        ("createTime", .string(context.createTime.rfc3339Microseconds)),
                        ("updateTime", .string(context.updateTime.rfc3339Microseconds)),
                    ])
                )
            }
            members.append(("contexts", .object([("custom", .object(custom))])))
        }
        if let acl, let list = try? JSONDecoder().decode(JSONValue.self, from: Data(acl.utf8)) {
            members.append(("acl", list))
        }
        if let retention { members.append(("retention", retention.jsonValue)) }
        if let retentionExpirationTime {
            members.append(("retentionExpirationTime", .string(retentionExpirationTime.rfc3339)))
        }
        if let softDeleteTime { members.append(("softDeleteTime", .string(softDeleteTime.rfc3339))) }
        if let hardDeleteTime { members.append(("hardDeleteTime", .string(hardDeleteTime.rfc3339))) }
        if let customerKeySHA256 {
            members.append(
                (
                    "customerEncryption",
                    .object([("encryptionAlgorithm", .string("AES256")), ("keySha256", .string(customerKeySHA256))])
                ))
        }
        return members
    }
}

/// An object's own retention (rule M9): until `retainUntilTime` the object is neither deleted nor overwritten. An
/// Unlocked retention may be shortened or removed by a request that says it overrides it; a Locked one only
/// lengthened.
public struct ObjectRetention: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case unlocked = "Unlocked"
        case locked = "Locked"
    }

    public var mode: Mode
    public var retainUntilTime: Timestamp

    public init(mode: Mode, retainUntilTime: Timestamp) {
        self.mode = mode
        self.retainUntilTime = retainUntilTime
    }

    /// As the JSON API's object resource writes it: `{"mode": …, "retainUntilTime": …}`.
    public var jsonValue: JSONValue {
        .object([("mode", .string(mode.rawValue)), ("retainUntilTime", .string(retainUntilTime.rfc3339Microseconds))])
    }

    /// As the shell writes it: `Unlocked until 2030-01-01T00:00:00Z` (the time to the microsecond when it has one).
    public var text: String { "\(mode.rawValue) until \(retainUntilTime.rfc3339Microseconds)" }

    /// `MODE until TIME`, the mode in any case; nil when `text` is not that.
    public init?(text: String) {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 3, words[1].lowercased() == "until",
            let mode = Mode.allCases.first(where: { $0.rawValue.lowercased() == words[0].lowercased() }),
            let time = Timestamp(rfc3339: String(words[2]))
        else { return nil }
        self.init(mode: mode, retainUntilTime: time)
    }
}

/// One of an object's contexts: its value, and when the key was made and last changed.
public struct ObjectContext: Sendable, Equatable {
    public var value: String
    public var createTime: Timestamp
    public var updateTime: Timestamp

    public init(value: String, createTime: Timestamp, updateTime: Timestamp) {
        self.value = value
        self.createTime = createTime
        self.updateTime = updateTime
    }
}

/// A change of an object's Cloud Storage fields (rule M9), as a PATCH or PUT of the JSON API gives it: what it does
/// not name is unchanged.
public struct CloudStorageFieldsUpdate: Sendable, Equatable {
    /// A custom time only moves forward: it can be neither removed nor set earlier (as on the service).
    public var customTime: Timestamp?
    public var temporaryHold: Bool?
    public var eventBasedHold: Bool?
    /// A new storage class (its name, STANDARD included): a change of class is a rewrite (rule M9).
    public var storageClass: String?
    /// Per-key changes of the contexts (nil removes the key), applied after `clearsContexts`.
    public var contexts: [String: String?] = [:]
    public var clearsContexts = false
    /// A new access control list (JSON text), or `.some(nil)` for the bucket's default object ACL again.
    public var acl: String??
    /// A new retention, or `.some(nil)` to remove it.
    public var retention: ObjectRetention??
    /// Whether the change may shorten or remove an Unlocked retention (`overrideUnlockedRetention`).
    public var overridesUnlockedRetention = false

    public init() {}

    public var isEmpty: Bool {
        customTime == nil && temporaryHold == nil && eventBasedHold == nil && storageClass == nil && contexts.isEmpty
            && !clearsContexts
            && acl == nil && retention == nil
    }

    /// The fields after the change at `now`; refused when it would move the custom time back.
    public func applied(to fields: CloudStorageFields, now: Timestamp) throws(StorageError) -> CloudStorageFields {
        var next = fields
        if let customTime {
            if let current = fields.customTime, customTime < current {
                throw .invalidArgument(
                    "customTime can only move forward: it is \(current.rfc3339), and \(customTime.rfc3339) is earlier. Nothing was changed."
                )
            }
            next.customTime = customTime
        }
        if let temporaryHold { next.temporaryHold = temporaryHold }
        if let retention {
            try Self.checkRetention(from: fields.retention, to: retention, overriding: overridesUnlockedRetention)
            next.retention = retention
        }
        if let acl { next.acl = acl }
        if let eventBasedHold { next.eventBasedHold = eventBasedHold }
        if let storageClass, storageClass != fields.effectiveStorageClass {
            // STANDARD is kept as no class; the time is the rewrite's, which is also the new generation's creation.
            next.storageClass = storageClass == CloudStorageFields.defaultStorageClass ? nil : storageClass
            next.timeStorageClassUpdated = next.storageClass == nil ? nil : now
        }
        if clearsContexts { next.contexts = [:] }
        for (key, value) in contexts.sortedByKeyBytes {
            guard let value else {
                next.contexts[key] = nil
                continue
            }
            if let existing = next.contexts[key] {
                if !NameBytes.sameBytes(existing.value, value) {
                    next.contexts[key] = ObjectContext(value: value, createTime: existing.createTime, updateTime: now)
                }
            } else {
                next.contexts[key] = ObjectContext(value: value, createTime: now, updateTime: now)
            }
        }
        let bytes = next.contexts.reduce(0) { $0 + $1.key.utf8.count + $1.value.value.utf8.count }
        guard next.contexts.count <= CloudStorageFields.maximumContexts,
            bytes <= CloudStorageFields.maximumContextsBytes
        else {
            throw .invalidArgument(
                "An object has at most \(CloudStorageFields.maximumContexts) contexts of \(CloudStorageFields.maximumContextsBytes) bytes in all; this change would leave \(next.contexts.count) of \(bytes) bytes. Nothing was changed."
            )
        }
        return next
    }

    /// Whether a retention may become `new` (rule M9): a Locked one only lengthened and kept Locked; an Unlocked one
    /// shortened, removed or unlocked only by a request that overrides it.
    static func checkRetention(
        from old: ObjectRetention?, to new: ObjectRetention?, overriding: Bool
    ) throws(StorageError) {
        guard let old, old != new else { return }
        let lengthens = new.map { $0.retainUntilTime >= old.retainUntilTime } ?? false
        switch old.mode {
        case .locked:
            guard let new, new.mode == .locked, lengthens else {
                throw StorageError(
                    .unauthorized,
                    "The object's retention is Locked until \(old.retainUntilTime.rfc3339): it can only be lengthened, never shortened, unlocked or removed (rule M9). Nothing was changed."
                )
            }
        case .unlocked:
            if !lengthens && !overriding {
                throw StorageError(
                    .unauthorized,
                    "The object's retention lasts until \(old.retainUntilTime.rfc3339): shortening or removing it needs overrideUnlockedRetention (rule M9). Nothing was changed."
                )
            }
        }
    }
}
