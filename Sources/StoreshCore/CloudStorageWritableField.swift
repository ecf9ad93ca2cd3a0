/// One of Cloud Storage's own object fields that a user changes by name (rule M9): in `meta set` and `meta unset`,
/// and in what a plan, a journal, a result or a snapshot diff says changed. `customTime` (an RFC 3339 time that only
/// moves forward), `temporaryHold` and `eventBasedHold` (`true` or `false`), `storageClass` (changed by a rewrite:
/// the object is written again, as a new generation), and `context.KEY` for one of the object's contexts.
///
/// Each has a text, as a difference carries it: the time in RFC 3339 with microseconds, `true` for a hold that is
/// on (a hold that is off is not set), the storage class's name (STANDARD where the object has no other), a
/// context's value.
public enum CloudStorageWritableField: Sendable, Equatable {
    case customTime
    case temporaryHold
    case eventBasedHold
    case storageClass
    /// The object's own retention, written `MODE until TIME` (`Unlocked until 2030-01-01T00:00:00Z`).
    case retention
    case context(String)

    /// How a context's key is written: `context.KEY`, as `meta get` shows it.
    public static let contextPrefix = "context."
    /// The names help and completion offer (a context is `context.KEY`).
    public static let names = ["customTime", "temporaryHold", "eventBasedHold", "storageClass", "retention"]

    /// The field `key` names; nil when it names none (`context.` alone names none).
    public init?(key: String) {
        switch key {
        case "customTime": self = .customTime
        case "temporaryHold": self = .temporaryHold
        case "eventBasedHold": self = .eventBasedHold
        case "storageClass": self = .storageClass
        case "retention": self = .retention
        default:
            guard key.hasPrefix(Self.contextPrefix), key.utf8.count > Self.contextPrefix.utf8.count else { return nil }
            self = .context(String(key.dropFirst(Self.contextPrefix.count)))
        }
    }

    public var key: String {
        switch self {
        case .customTime: "customTime"
        case .temporaryHold: "temporaryHold"
        case .eventBasedHold: "eventBasedHold"
        case .storageClass: "storageClass"
        case .retention: "retention"
        case .context(let key): Self.contextPrefix + key
        }
    }

    /// Keys compare as their bytes (rule P7).
    public static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.customTime, .customTime), (.temporaryHold, .temporaryHold), (.eventBasedHold, .eventBasedHold),
            (.storageClass, .storageClass),
            (.retention, .retention):
            true
        case (.context(let x), .context(let y)): NameBytes.sameBytes(x, y)
        default: false
        }
    }
}

extension CloudStorageFields {
    /// The field's text; nil when it is not set (a hold that is off). Every object has a storage class.
    public func text(of field: CloudStorageWritableField) -> String? {
        switch field {
        case .customTime: customTime?.rfc3339Microseconds
        case .temporaryHold: temporaryHold ? "true" : nil
        case .eventBasedHold: eventBasedHold ? "true" : nil
        case .storageClass: effectiveStorageClass
        case .retention: retention?.text
        case .context(let key): contexts[key]?.value
        }
    }

    /// The object's storage class by name: STANDARD where it has no other.
    public var effectiveStorageClass: String { storageClass ?? Self.defaultStorageClass }

    /// Every writable field that is set, in this order: the custom time, the holds, a storage class other than
    /// STANDARD, the contexts by key bytes.
    public var writableFields: [CloudStorageWritableField] {
        var fields: [CloudStorageWritableField] = []
        if customTime != nil { fields.append(.customTime) }
        if temporaryHold { fields.append(.temporaryHold) }
        if eventBasedHold { fields.append(.eventBasedHold) }
        if storageClass != nil { fields.append(.storageClass) }
        if retention != nil { fields.append(.retention) }
        fields += contexts.sortedByKeyBytes.map { .context($0.key) }
        return fields
    }

    /// Refuses a context the service would (rule M9): a key of 1 to 256 bytes without control characters, a value
    /// of at most 256 bytes.
    public static func validateContext(key: String, value: String?) throws(StorageError) {
        guard !key.isEmpty, key.utf8.count <= maximumContextBytes,
            !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw .invalidArgument(
                "A context key is 1 to \(maximumContextBytes) bytes, without control characters (rule M9).")
        }
        if let value, value.utf8.count > maximumContextBytes {
            throw .invalidArgument("The value of context \(key) is longer than \(maximumContextBytes) bytes (rule M9).")
        }
    }
}

extension CloudStorageFieldsUpdate {
    /// Adds `field=text` as a user writes it; a malformed value is invalid-argument, naming what it must be.
    public mutating func set(_ field: CloudStorageWritableField, to text: String) throws(StorageError) {
        switch field {
        case .customTime:
            guard let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument(
                    "customTime must be an RFC 3339 time such as 2026-01-31T12:00:00Z, not '\(text)' (rule M9).")
            }
            customTime = time
        case .temporaryHold, .eventBasedHold:
            guard text == "true" || text == "false" else {
                throw .invalidArgument("\(field.key) is true or false, not '\(text)' (rule M9).")
            }
            if field == .temporaryHold { temporaryHold = text == "true" } else { eventBasedHold = text == "true" }
        case .storageClass:
            // Any service's class: the bucket refuses one its service does not have (`StorageClasses.check`).
            guard let name = StorageClasses.named(text) else {
                throw .invalidArgument(
                    "storageClass is one of \(StorageClasses.allNamesDescribed), not '\(text)' (rule M9).")
            }
            storageClass = name
        case .retention:
            guard let retention = ObjectRetention(text: text) else {
                throw .invalidArgument(
                    "retention is written MODE until TIME, the mode Unlocked or Locked and the time RFC 3339 (retention=\"Unlocked until 2030-01-01T00:00:00Z\"), not '\(text)' (rule M9)."
                )
            }
            self.retention = .some(retention)
            // Asked for by name: shortening an Unlocked retention is what the user wrote (the plan shows it).
            overridesUnlockedRetention = true
        case .context(let key):
            try CloudStorageFields.validateContext(key: key, value: text)
            contexts[key] = .some(text)
        }
    }

    /// Adds the removal of `field`: a hold is released, a context removed. A custom time cannot be removed.
    public mutating func unset(_ field: CloudStorageWritableField) throws(StorageError) {
        switch field {
        case .customTime:
            throw .invalidArgument("customTime cannot be removed: once set, it only moves forward (rule M9).")
        case .temporaryHold: temporaryHold = false
        case .eventBasedHold: eventBasedHold = false
        case .storageClass:
            throw .invalidArgument(
                "Every object has a storage class: set another (storageClass=STANDARD) instead of unsetting it (rule M9)."
            )
        case .retention:
            // Removing an Unlocked retention is what the user asked for by name; a Locked one is refused when applied.
            retention = .some(nil)
            overridesUnlockedRetention = true
        case .context(let key):
            try CloudStorageFields.validateContext(key: key, value: nil)
            contexts[key] = .some(nil)
        }
    }

    /// The change that makes `before`'s writable fields `after`'s: each field that differs (the custom time only
    /// when `after` has one; applying the update refuses one that moves back).
    public init(from before: CloudStorageFields, to after: CloudStorageFields) {
        self.init()
        if let time = after.customTime, time != before.customTime { customTime = time }
        if before.temporaryHold != after.temporaryHold { temporaryHold = after.temporaryHold }
        if before.eventBasedHold != after.eventBasedHold { eventBasedHold = after.eventBasedHold }
        if before.effectiveStorageClass != after.effectiveStorageClass { storageClass = after.effectiveStorageClass }
        if before.retention != after.retention {
            // A state decided or planned from a change that was allowed to shorten or remove it (an undo included).
            retention = .some(after.retention)
            overridesUnlockedRetention = true
        }
        for field in before.writableFields + after.writableFields {
            guard case .context(let key) = field else { continue }
            let new = after.contexts[key]?.value
            if !NameBytes.sameBytes(before.contexts[key]?.value, new) { contexts[key] = .some(new) }
        }
    }
}

/// What a hold or a retention keeps from happening to an object (rule M9).
public enum HeldChange: String, Sendable {
    case deleted
    case overwritten
    /// Written again by a change of storage class.
    case rewritten
}

extension ObjectMetadata {
    /// Why the object cannot be deleted or overwritten at `now`, as the service refuses it (403 on its APIs): a hold,
    /// its own retention, or its bucket's retention policy (`retentionExpirationTime`, where the object was read with
    /// it). Nil when nothing keeps it. Every bucket that keeps these, and every plan made for one, says it in these
    /// words.
    public func protection(against change: HeldChange, now: Timestamp) -> StorageError? {
        let name = MessageText.name(fullPath)
        var refusal: StorageError
        if cloudStorage.isHeld {
            let hold = cloudStorage.temporaryHold ? "a temporary hold" : "an event-based hold"
            refusal = StorageError(
                .unauthorized,
                "Object \(name) is under \(hold) and cannot be \(change.rawValue) until the hold is removed.")
            refusal.keptBy = .hold
            return refusal
        }
        if let retention = cloudStorage.retention, now < retention.retainUntilTime {
            refusal = StorageError(
                .unauthorized,
                "Object \(name) is retained until \(retention.retainUntilTime.rfc3339) (\(retention.mode.rawValue)) and cannot be \(change.rawValue) before then."
            )
        } else if let expiration = cloudStorage.retentionExpirationTime, now < expiration {
            refusal = StorageError(
                .unauthorized,
                "Object \(name) is kept by its bucket's retention policy until \(expiration.rfc3339) and cannot be \(change.rawValue) before then."
            )
        } else {
            return nil
        }
        refusal.keptBy = .retention
        return refusal
    }

    /// Throws `protection(against:now:)`, if any.
    public func refuseIfProtected(_ change: HeldChange, now: Timestamp) throws(StorageError) {
        if let refusal = protection(against: change, now: now) { throw refusal }
    }
}
