import Foundation
import StoreshCore

/// The Cloud Storage JSON API's bucket resource, both ways (rule B4): the document answered for a bucket's settings,
/// and the fields of a bucket a client sends (`buckets.insert`, `patch`, `update`) applied to them. A field storesh
/// keeps is stored and answered; a read-only one is ignored, as the service ignores it; a setting storesh cannot
/// honour is refused with the reason, never kept and ignored; an unknown field is refused as the service refuses it.
public enum BucketResource {
    /// The document of `settings` for bucket `name`.
    public static func document(_ settings: BucketSettings, name: String, baseURL: String) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("kind", .string("storage#bucket")),
            ("id", .string(name)),
            ("selfLink", .string("\(baseURL)/storage/v1/b/\(name)")),
            ("projectNumber", .string("0")),
            ("name", .string(name)),
            ("timeCreated", .string(settings.timeCreated.rfc3339)),
            ("updated", .string(settings.updated.rfc3339)),
            ("metageneration", .string(String(settings.metageneration))),
            ("location", .string(settings.location)),
            ("locationType", .string(settings.locationType)),
            ("storageClass", .string(settings.storageClass)),
            ("rpo", .string(settings.rpo)),
            ("etag", .string(entityTag(metageneration: settings.metageneration))),
            (
                "iamConfiguration",
                .object([
                    ("bucketPolicyOnly", .object([("enabled", .bool(settings.uniformBucketLevelAccess))])),
                    ("uniformBucketLevelAccess", .object([("enabled", .bool(settings.uniformBucketLevelAccess))])),
                    ("publicAccessPrevention", .string(settings.publicAccessPrevention)),
                ])
            ),
            ("softDeletePolicy", .object(
                [("retentionDurationSeconds", .string(String(settings.softDeleteSeconds ?? 0)))]
                    + (settings.softDeleteEffectiveTime.map { [("effectiveTime", .string($0.rfc3339))] } ?? []))),
        ]
        if let versioning = settings.versioning { members.append(("versioning", .object([("enabled", .bool(versioning))]))) }
        if let hold = settings.defaultEventBasedHold { members.append(("defaultEventBasedHold", .bool(hold))) }
        if !settings.labels.isEmpty {
            let sorted = settings.labels.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            members.append(("labels", .object(sorted.map { ($0.key, .string($0.value)) })))
        }
        for field in BucketSettings.keptFields + ["hierarchicalNamespace"] {
            if let value = settings.kept[field] { members.append((field, value)) }
        }
        return .object(members)
    }

    /// `storageLayout` of a bucket: where it is, and that it has no hierarchical namespace.
    public static func storageLayout(_ settings: BucketSettings, name: String) -> JSONValue {
        .object([
            ("kind", .string("storage#storageLayout")),
            ("bucket", .string(name)),
            ("location", .string(settings.location)),
            ("locationType", .string(settings.locationType)),
            ("hierarchicalNamespace", .object([("enabled", .bool(false))])),
        ])
    }

    /// The entity tag of a bucket's resource at `metageneration`, in the service's form (a protocol buffer's varint,
    /// base64: `CAE=` at 1).
    public static func entityTag(metageneration: Int64) -> String {
        var bytes: [UInt8] = [0x08]
        var value = UInt64(bitPattern: metageneration)
        repeat {
            bytes.append(UInt8(value & 0x7F) | (value > 0x7F ? 0x80 : 0))
            value >>= 7
        } while value > 0
        return Data(bytes).base64EncodedString()
    }

    /// A request body that is a bucket resource: a JSON object.
    public static func body(_ data: Data) throws(StorageError) -> [(String, JSONValue)] {
        // A patch with nothing to change comes without a body (the Python client's, under a precondition).
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw .invalidArgument("The bucket resource is not valid JSON (whole numbers only).")
        }
        guard case .object(let members) = value else { throw .invalidArgument("The bucket resource must be a JSON object.") }
        return members
    }

    /// The fields the service sets itself: ignored when a client sends them back.
    static let readOnly: Set<String> = [
        "kind", "id", "selfLink", "projectNumber", "name", "timeCreated", "updated", "metageneration", "etag", "owner",
        "locationType", "satisfiesPZS", "satisfiesPZI", "generation", "hardDeleteTime", "softDeleteTime",
    ]

    /// Applies the fields of a bucket a client sent to `settings`: a patch leaves what it does not name (a null
    /// clears, a label whose value is null goes); `replacing` (an update, a new bucket) starts from `defaults`.
    /// `now` is when the change lands (a soft delete policy's effective time).
    public static func apply(
        _ fields: [(String, JSONValue)], to settings: inout BucketSettings, replacing defaults: BucketSettings?, creating: Bool,
        now: Timestamp? = nil
    ) throws(StorageError) {
        if let defaults {
            let (kept, created, made, location) = (settings.metageneration, settings.timeCreated, settings.madeByServer, settings.location)
            settings = defaults
            (settings.metageneration, settings.timeCreated, settings.madeByServer) = (kept, created, made)
            if !creating { settings.location = location }
        }
        for (field, value) in fields {
            if readOnly.contains(field) { continue }
            switch field {
            case "location":
                guard case .string(let location) = value, !location.isEmpty else { throw invalid(field, "a location such as US or EUROPE-WEST1") }
                let upper = location.uppercased()
                guard creating || upper == settings.location else {
                    throw .invalidArgument("A bucket's location cannot be changed (\(settings.location), not \(upper)).")
                }
                settings.location = upper
                settings.locationType = upper.contains("-") ? "region" : ["US", "EU", "ASIA"].contains(upper) ? "multi-region" : "dual-region"
            case "storageClass":
                guard case .string(let storageClass) = value, BucketSettings.storageClasses.contains(storageClass.uppercased()) else {
                    throw invalid(field, "one of \(BucketSettings.storageClasses.sorted().joined(separator: ", "))")
                }
                settings.storageClass = storageClass.uppercased()
            case "rpo":
                guard case .string(let rpo) = value, ["DEFAULT", "ASYNC_TURBO"].contains(rpo) else { throw invalid(field, "DEFAULT or ASYNC_TURBO") }
                settings.rpo = rpo
            case "labels":
                try applyLabels(value, to: &settings, merging: defaults == nil)
            case _ where BucketSettings.keptFields.contains(field):
                // `cors` is an array of rules, the others objects; null clears.
                let fits: Bool
                switch value {
                case .null: fits = true
                case .array: fits = field == "cors"
                case .object: fits = field != "cors"
                default: fits = false
                }
                guard fits else { throw invalid(field, field == "cors" ? "an array of CORS rules" : "an object") }
                if field == "billing", case .object(let billing) = value, billing.contains(where: { $0.0 == "requesterPays" && $0.1 == .bool(true) }) {
                    throw unsupported("billing.requesterPays", "storesh serve bills no one")
                }
                settings.kept[field] = value == .null ? nil : value
            case "iamConfiguration":
                try applyAccess(value, to: &settings)
            case "versioning":
                switch value {
                case .null: settings.versioning = nil
                case .object(let members):
                    for (key, setting) in members {
                        guard key == "enabled" else {
                            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key)\" in versioning: Cannot find field.")
                        }
                        switch setting {
                        case .bool(let on): settings.versioning = on
                        case .null: settings.versioning = nil
                        default: throw invalid("versioning.enabled", "true or false")
                        }
                    }
                default: throw invalid("versioning", "an object such as {\"enabled\": true}")
                }
            case "retentionPolicy", "objectRetention":
                if value != .null, !(field == "objectRetention" && value == .object([("mode", .string("Disabled"))])) {
                    throw unsupported(field, "storesh serve keeps no retention periods")
                }
            case "softDeletePolicy":
                try applySoftDelete(value, to: &settings, now: now ?? settings.updated)
            case "hierarchicalNamespace":
                if enabled(value) { throw unsupported("hierarchicalNamespace.enabled", "storesh serve's buckets have no hierarchical namespace") }
                // Asked to be off: said so when read back, as the service says it.
                settings.kept[field] = value == .null ? nil : .object([("enabled", .bool(false))])
            case "autoclass":
                if enabled(value) { throw unsupported("autoclass.enabled", "storesh serve moves no object between storage classes by itself") }
            case "defaultEventBasedHold":
                switch value {
                case .bool(let hold): settings.defaultEventBasedHold = hold
                case .null: settings.defaultEventBasedHold = nil
                default: throw invalid(field, "true or false")
                }
            case "encryption":
                // A KMS key, or an enforcement of how objects are encrypted: none can be honoured here.
                if case .object(let encryption) = value, let (key, _) = encryption.first(where: { $0.1 != .null }) {
                    throw unsupported("encryption.\(key)", "storesh serve has no key management service and encrypts nothing")
                }
            case "acl", "defaultObjectAcl":
                if case .array(let entries) = value, !entries.isEmpty { throw unsupported(field, "storesh serve keeps no access control lists") }
            default:
                throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(field)\" in the bucket resource: Cannot find field.")
            }
        }
    }

    /// The service's range: 0 (none), or 7 to 90 days.
    public static let softDeleteRange: ClosedRange<Int64> = 604_800...7_776_000

    private static func applySoftDelete(_ value: JSONValue, to settings: inout BucketSettings, now: Timestamp) throws(StorageError) {
        guard case .object(let policy) = value else {
            if value == .null {
                settings.softDeleteSeconds = nil
                return
            }
            throw invalid("softDeletePolicy", "an object with retentionDurationSeconds")
        }
        for (key, setting) in policy {
            switch key {
            case "retentionDurationSeconds":
                let seconds: Int64?
                switch setting {
                case .string(let text): seconds = Int64(text)
                case .integer(let number): seconds = number
                default: seconds = nil
                }
                guard let seconds, seconds == 0 || softDeleteRange.contains(seconds) else {
                    throw invalid("softDeletePolicy.retentionDurationSeconds", "0, or 604800 to 7776000 (7 to 90 days)")
                }
                if seconds != (settings.softDeleteSeconds ?? 0) { settings.softDeleteEffectiveTime = now }
                settings.softDeleteSeconds = seconds == 0 ? nil : seconds  // none, as a new bucket's
            case "effectiveTime": continue  // the service's to set
            default:
                throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key)\" in softDeletePolicy: Cannot find field.")
            }
        }
    }

    private static func enabled(_ value: JSONValue) -> Bool {
        guard case .object(let members) = value else { return false }
        return members.contains { $0.0 == "enabled" && $0.1 == .bool(true) }
    }

    private static func applyLabels(_ value: JSONValue, to settings: inout BucketSettings, merging: Bool) throws(StorageError) {
        if case .null = value {
            settings.labels = [:]
            return
        }
        guard case .object(let labels) = value else { throw invalid("labels", "an object of keys and values") }
        if !merging { settings.labels = [:] }
        for (key, label) in labels {
            switch label {
            case .null: settings.labels[key] = nil
            case .string(let text):
                guard !key.isEmpty, key.utf8.count <= 63, text.utf8.count <= 63 else {
                    throw .invalidArgument("A label's key (not empty) and value are at most 63 bytes: '\(key)' is not.")
                }
                settings.labels[key] = text
            default: throw invalid("labels.\(key)", "a string, or null to remove it")
            }
        }
        guard settings.labels.count <= 64 else { throw .invalidArgument("A bucket has at most 64 labels, not \(settings.labels.count).") }
    }

    private static func applyAccess(_ value: JSONValue, to settings: inout BucketSettings) throws(StorageError) {
        guard case .object(let members) = value else { throw invalid("iamConfiguration", "an object") }
        for (key, setting) in members {
            switch key {
            case "uniformBucketLevelAccess", "bucketPolicyOnly":
                guard case .object(let access) = setting else { throw invalid("iamConfiguration.\(key)", "an object") }
                if let enabled = access.first(where: { $0.0 == "enabled" })?.1 {
                    guard case .bool(let flag) = enabled else { throw invalid("iamConfiguration.\(key).enabled", "true or false") }
                    settings.uniformBucketLevelAccess = flag
                }
            case "publicAccessPrevention":
                guard case .string(let prevention) = setting, ["inherited", "enforced", "unspecified"].contains(prevention) else {
                    throw invalid("iamConfiguration.publicAccessPrevention", "inherited or enforced")
                }
                settings.publicAccessPrevention = prevention == "unspecified" ? "inherited" : prevention
            default:
                throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key)\" in iamConfiguration: Cannot find field.")
            }
        }
    }

    private static func invalid(_ field: String, _ expected: String) -> StorageError {
        .invalidArgument("Invalid value for the bucket's \(field): it must be \(expected).")
    }

    private static func unsupported(_ field: String, _ why: String) -> StorageError {
        .invalidArgument("The bucket setting \(field) is not supported: \(why). Nothing was changed.")
    }
}
