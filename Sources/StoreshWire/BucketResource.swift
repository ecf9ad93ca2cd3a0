import Foundation
import StoreshCore

/// The Cloud Storage JSON API's bucket resource, both ways (rule B4): the document answered for a bucket's settings,
/// and the fields of a bucket a client sends (`buckets.insert`, `patch`, `update`) applied to them. A field storesh
/// keeps is stored and answered; a read-only one is ignored, as the service ignores it; a setting storesh cannot
/// honour is refused with the reason, never kept and ignored; an unknown field is refused as the service refuses it.
package enum BucketResource {
    /// The document of `settings` for bucket `name`; with `full` (`projection=full`), its access control lists too
    /// (none while uniform access is on, as on the service).
    package static func document(
        _ settings: BucketSettings, name: String, baseURL: String, full: Bool = false
    ) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("kind", .string("storage#bucket")),
            ("id", .string(name)),
            ("selfLink", .string("\(baseURL)/storage/v1/b/\(name)")),
            ("projectNumber", .string("0")),
            ("name", .string(name)),
            ("timeCreated", .string(settings.timeCreated.rfc3339)),
            ("updated", .string(settings.updated.rfc3339)),
            ("metageneration", .string(String(settings.metageneration))),
            ("generation", .string(String(settings.generation))),
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
            (
                "softDeletePolicy",
                .object(
                    [("retentionDurationSeconds", .string(String(settings.softDeleteSeconds ?? 0)))]
                        + (settings.softDeleteEffectiveTime.map { [("effectiveTime", .string($0.rfc3339))] } ?? []))
            ),
        ]
        if let deleted = settings.softDeleteTime, let end = settings.hardDeleteTime {
            members += [("softDeleteTime", .string(deleted.rfc3339)), ("hardDeleteTime", .string(end.rfc3339))]
        }
        if let period = settings.retentionPeriod {
            members.append(
                (
                    "retentionPolicy",
                    .object(
                        [("retentionPeriod", .string(String(period)))]
                            + (settings.retentionEffectiveTime.map { [("effectiveTime", .string($0.rfc3339))] } ?? [])
                            + [("isLocked", .bool(settings.retentionLocked == true))])
                ))
        }
        if settings.objectRetentionEnabled == true {
            members.append(("objectRetention", .object([("mode", .string("Enabled"))])))
        }
        if let versioning = settings.versioning {
            members.append(("versioning", .object([("enabled", .bool(versioning))])))
        }
        if let hold = settings.defaultEventBasedHold { members.append(("defaultEventBasedHold", .bool(hold))) }
        if let enforcement = settings.encryptionEnforcement {
            let configs = BucketSettings.EncryptionType.allCases.compactMap { type -> (String, JSONValue)? in
                guard let config = enforcement[type] else { return nil }
                return (
                    type.rawValue,
                    .object(
                        [("restrictionMode", .string(config.fullyRestricted ? "FullyRestricted" : "NotRestricted"))]
                            + (config.effectiveTime.map { [("effectiveTime", .string($0.rfc3339))] } ?? []))
                )
            }
            members.append(("encryption", .object(configs)))
        }
        if !settings.labels.isEmpty {
            let sorted = settings.labels.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            members.append(("labels", .object(sorted.map { ($0.key, .string($0.value)) })))
        }
        for field in BucketSettings.keptFields + [
            "hierarchicalNamespace", "ipFilter", "autoclass", "customPlacementConfig",
        ] {
            if let value = settings.kept[field] { members.append((field, value)) }
        }
        if full && !settings.uniformBucketLevelAccess {
            members.append(
                ("acl", accessControls(settings.acl ?? defaultACL(name, objects: false), bucket: name, objects: false)))
            members.append(
                (
                    "defaultObjectAcl",
                    accessControls(
                        settings.defaultObjectAcl ?? defaultACL(name, objects: true), bucket: name, objects: true)
                ))
        }
        return .object(members)
    }

    /// An access control list's entries as the service answers them: each with its kind (and its bucket).
    package static func accessControls(_ list: JSONValue, bucket: String, objects: Bool) -> JSONValue {
        guard case .array(let entries) = list else { return .array([]) }
        return .array(
            entries.map { entry in
                guard case .object(let members) = entry else { return entry }
                var answered = members.filter { $0.0 != "kind" && $0.0 != "bucket" }
                answered.insert(
                    ("kind", .string(objects ? "storage#objectAccessControl" : "storage#bucketAccessControl")), at: 0)
                if !objects { answered.append(("bucket", .string(bucket))) }
                return .object(answered)
            })
    }

    /// A new bucket's IAM policy, as the service gives one: the legacy roles of the project's teams.
    package static func defaultIAMPolicy(_ name: String) -> JSONValue {
        .object([
            ("kind", .string("storage#policy")), ("resourceId", .string("projects/_/buckets/\(name)")),
            ("version", .integer(1)),
            ("etag", .string("CAE=")),
            (
                "bindings",
                .array([
                    .object([
                        ("role", .string("roles/storage.legacyBucketOwner")),
                        ("members", .array([.string("projectEditor:0"), .string("projectOwner:0")])),
                    ]),
                    .object([
                        ("role", .string("roles/storage.legacyBucketReader")),
                        ("members", .array([.string("projectViewer:0")])),
                    ]),
                ])
            ),
        ])
    }

    /// An IAM policy a client sets (`setIamPolicy`): its bindings, each a role, members and perhaps a condition. A
    /// condition needs uniform access (412) and a policy of version 3 (400), as on the service. Answered as it will be
    /// stored: with the bucket's resource id and a new etag.
    package static func iamPolicy(
        _ body: JSONValue, name: String, settings: BucketSettings, etag: String
    ) throws(StorageError) -> JSONValue {
        guard case .object(let members) = body,
            case .array(let bindings)? = members.first(where: { $0.0 == "bindings" })?.1
        else {
            throw .invalidArgument("An IAM policy is an object with bindings.")
        }
        var version: Int64 = 1
        switch members.first(where: { $0.0 == "version" })?.1 {
        case .integer(let number)?: version = number
        case .string(let text)?: version = Int64(text) ?? 0
        case nil, .null?: break
        default: version = 0
        }
        guard [1, 2, 3].contains(version) else { throw .invalidArgument("An IAM policy's version is 1, 2 or 3.") }
        var kept: [JSONValue] = []
        for binding in bindings {
            guard case .object(let fields) = binding,
                case .string(let role)? = fields.first(where: { $0.0 == "role" })?.1, role.hasPrefix("roles/"),
                case .array(let people)? = fields.first(where: { $0.0 == "members" })?.1,
                people.allSatisfy({ if case .string = $0 { true } else { false } })
            else {
                throw .invalidArgument("Each binding of an IAM policy has a role (roles/…) and members (strings).")
            }
            if let condition = fields.first(where: { $0.0 == "condition" })?.1, condition != .null {
                guard settings.uniformBucketLevelAccess else {
                    throw StorageError(
                        .preconditionFailed,
                        "IAM conditions need uniform bucket-level access: enable uniform bucket-level access on gs://\(name) first."
                    )
                }
                guard version >= 3 else {
                    throw .invalidArgument(
                        "A policy with conditions must be of version at least 3 (this one is \(version)).")
                }
            }
            kept.append(binding)
        }
        return .object([
            ("kind", .string("storage#policy")), ("resourceId", .string("projects/_/buckets/\(name)")),
            ("version", .integer(version)),
            ("etag", .string(etag)), ("bindings", .array(kept)),
        ])
    }

    /// `storageLayout` of a bucket: where it is, and that it has no hierarchical namespace.
    package static func storageLayout(_ settings: BucketSettings, name: String) -> JSONValue {
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
    package static func entityTag(metageneration: Int64) -> String {
        var bytes: [UInt8] = [0x08]
        var value = UInt64(bitPattern: metageneration)
        repeat {
            bytes.append(UInt8(value & 0x7F) | (value > 0x7F ? 0x80 : 0))
            value >>= 7
        } while value > 0
        return Data(bytes).base64EncodedString()
    }

    /// A request body that is a bucket resource: a JSON object.
    package static func body(_ data: Data) throws(StorageError) -> [(String, JSONValue)] {
        // A patch with nothing to change comes without a body (the Python client's, under a precondition).
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw .invalidArgument("The bucket resource is not valid JSON (whole numbers only).")
        }
        guard case .object(let members) = value else {
            throw .invalidArgument("The bucket resource must be a JSON object.")
        }
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
    package static func apply(
        _ fields: [(String, JSONValue)], to settings: inout BucketSettings, replacing defaults: BucketSettings?,
        creating: Bool,
        now: Timestamp? = nil
    ) throws(StorageError) {
        if let defaults {
            let current = settings
            settings = defaults
            (settings.metageneration, settings.timeCreated, settings.madeByServer) = (
                current.metageneration, current.timeCreated, current.madeByServer
            )
            // Where the bucket is cannot change: an update keeps its location, its type and its custom dual region.
            if !creating {
                (settings.location, settings.locationType) = (current.location, current.locationType)
                settings.kept["customPlacementConfig"] = current.kept["customPlacementConfig"]
            }
            // A locked retention policy outlives an update that does not name it: it is never removed (rule M9).
            if current.retentionLocked == true {
                (settings.retentionPeriod, settings.retentionEffectiveTime, settings.retentionLocked) =
                    (current.retentionPeriod, current.retentionEffectiveTime, current.retentionLocked)
            }
        }
        for (field, value) in fields {
            if readOnly.contains(field) { continue }
            switch field {
            case "location":
                guard case .string(let location) = value, !location.isEmpty else {
                    throw invalid(field, "a location such as US or EUROPE-WEST1")
                }
                let upper = location.uppercased()
                guard creating || upper == settings.location else {
                    throw .invalidArgument(
                        "A bucket's location cannot be changed (\(settings.location), not \(upper)).")
                }
                settings.location = upper
                settings.locationType =
                    settings.kept["customPlacementConfig"] != nil
                        || !(upper.contains("-") || ["US", "EU", "ASIA"].contains(upper))
                    ? "dual-region" : upper.contains("-") ? "region" : "multi-region"
            case "storageClass":
                guard case .string(let storageClass) = value,
                    StorageClasses.cloudStorage.contains(storageClass.uppercased())
                else {
                    throw invalid(field, "one of \(StorageClasses.cloudStorage.names.joined(separator: ", "))")
                }
                settings.storageClass = storageClass.uppercased()
            case "rpo":
                guard case .string(let rpo) = value, ["DEFAULT", "ASYNC_TURBO"].contains(rpo) else {
                    throw invalid(field, "DEFAULT or ASYNC_TURBO")
                }
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
                // `billing.requesterPays` is kept and answered: every request on serve is the bucket's project owner's,
                // which the service serves without a `userProject` to bill.
                settings.kept[field] = value == .null ? nil : value
            case "iamConfiguration":
                try applyAccess(value, to: &settings)
            case "versioning":
                switch value {
                case .null: settings.versioning = nil
                case .object(let members):
                    for (key, setting) in members {
                        guard key == "enabled" else {
                            throw .invalidArgument(
                                "Invalid JSON payload received. Unknown name \"\(key)\" in versioning: Cannot find field."
                            )
                        }
                        switch setting {
                        case .bool(let on): settings.versioning = on
                        case .null: settings.versioning = nil
                        default: throw invalid("versioning.enabled", "true or false")
                        }
                    }
                default: throw invalid("versioning", "an object such as {\"enabled\": true}")
                }
            case "retentionPolicy":
                try applyRetentionPolicy(value, to: &settings, now: now ?? settings.updated)
            case "objectRetention":
                // Chosen when the bucket is made (`enableObjectRetention`), and answered; sent back, it is read-only.
                guard case .object(let members) = value,
                    case .string(let mode)? = members.first(where: { $0.0 == "mode" })?.1,
                    ["Enabled", "Disabled"].contains(mode)
                else {
                    if value == .null { continue }
                    throw invalid(field, "an object with mode Enabled or Disabled")
                }
                if creating { settings.objectRetentionEnabled = mode == "Enabled" ? true : nil }
            case "softDeletePolicy":
                try applySoftDelete(value, to: &settings, now: now ?? settings.updated)
            case "hierarchicalNamespace":
                if enabled(value) {
                    throw unsupported(
                        "hierarchicalNamespace.enabled", "storesh serve's buckets have no hierarchical namespace")
                }
                // Asked to be off: said so when read back, as the service says it.
                settings.kept[field] = value == .null ? nil : .object([("enabled", .bool(false))])
            case "customPlacementConfig":
                // A custom dual region: the two regions of the location's data, chosen when the bucket is made and
                // answered as given (a bucket file is where it is, as any location).
                guard case .object(let members) = value,
                    case .array(let regions)? = members.last(where: { $0.0 == "dataLocations" })?.1,
                    regions.count == 2, regions.allSatisfy({ ($0.string ?? "").contains("-") })
                else {
                    if value == .null && !creating { continue }
                    throw invalid(
                        "customPlacementConfig.dataLocations", "two regions, such as [\"US-EAST1\", \"US-WEST1\"]")
                }
                let config = JSONValue.object([
                    ("dataLocations", .array(regions.map { .string(($0.string ?? "").uppercased()) }))
                ])
                guard creating || config == settings.kept[field] else {
                    throw .invalidArgument("A bucket's custom dual region (customPlacementConfig) cannot be changed.")
                }
                settings.kept[field] = config
                settings.locationType = "dual-region"
            case "ipFilter":
                // Kept and answered while it filters nothing (`mode` Disabled): storesh serve does not filter requests
                // by address or network, so an enabled filter would be a promise it does not keep.
                switch value {
                case .null: settings.kept[field] = nil
                case .object(let members):
                    switch members.last(where: { $0.0 == "mode" })?.1 {
                    case .string("Disabled")?: settings.kept[field] = value
                    case .string("Enabled")?:
                        throw unsupported(
                            "ipFilter.mode", "storesh serve does not filter requests by address or network")
                    default: throw invalid("ipFilter.mode", "Enabled or Disabled")
                    }
                default: throw invalid(field, "an object with a mode")
                }
            case "autoclass":
                try applyAutoclass(value, to: &settings, now: now ?? settings.updated)
            case "defaultEventBasedHold":
                switch value {
                case .bool(let hold): settings.defaultEventBasedHold = hold
                case .null: settings.defaultEventBasedHold = nil
                default: throw invalid(field, "true or false")
                }
            case "encryption":
                try applyEncryption(value, to: &settings, now: now ?? settings.updated)
            case "acl", "defaultObjectAcl":
                let list = try accessControlList(value, field: field, settings: settings)
                if field == "acl" { settings.acl = list } else { settings.defaultObjectAcl = list }
            default:
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(field)\" in the bucket resource: Cannot find field."
                )
            }
        }
    }

    // MARK: Access control (rule B7)

    /// A new bucket's ACL, as the service gives one: the project's owners and editors own it, its viewers read it.
    package static func defaultACL(_ name: String, objects: Bool) -> JSONValue {
        let entries: [(String, String)] = [
            ("project-owners-0", "OWNER"), ("project-editors-0", "OWNER"), ("project-viewers-0", "READER"),
        ]
        return .array(
            entries.map { entity, role in
                var members: [(String, JSONValue)] = [
                    ("kind", .string(objects ? "storage#objectAccessControl" : "storage#bucketAccessControl")),
                    ("entity", .string(entity)), ("role", .string(role)),
                    (
                        "projectTeam",
                        .object([
                            ("projectNumber", .string("0")),
                            ("team", .string(String(entity.dropFirst("project-".count).prefix { $0 != "-" }))),
                        ])
                    ),
                ]
                if !objects { members.append(("bucket", .string(name))) }
                return .object(members)
            })
    }

    /// The names `predefinedAcl` takes on an object (`objects.insert`, `patch`; `destinationPredefinedAcl` on a copy,
    /// rewrite or compose).
    package static let predefinedObjectACLs = [
        "authenticatedRead", "bucketOwnerFullControl", "bucketOwnerRead", "private", "projectPrivate", "publicRead",
    ]

    /// The object ACL a predefined name stands for, as the service builds it (rule B7): the object's owner (`owner`,
    /// an entity such as `user-EMAIL`) with OWNER, and whom the name adds; checked as any ACL a client sends (refused
    /// while uniform access is on, a package one while package access prevention is enforced).
    package static func predefinedObjectACL(
        _ name: String, owner: String, parameter: String, settings: BucketSettings
    ) throws(StorageError) -> JSONValue {
        var entries: [(String, String)] = [(owner, "OWNER")]
        switch name {
        case "private": break
        case "projectPrivate":
            entries += [("project-owners-0", "OWNER"), ("project-editors-0", "OWNER"), ("project-viewers-0", "READER")]
        case "publicRead": entries.append(("allUsers", "READER"))
        case "authenticatedRead": entries.append(("allAuthenticatedUsers", "READER"))
        case "bucketOwnerRead": entries.append(("project-owners-0", "READER"))
        case "bucketOwnerFullControl": entries.append(("project-owners-0", "OWNER"))
        default:
            throw .invalidArgument(
                "Invalid value for the query parameter '\(parameter)': '\(name)'; it is one of \(predefinedObjectACLs.joined(separator: ", "))."
            )
        }
        return try checkedACL(entries, field: parameter, settings: settings)
    }

    /// An ACL of `entries` (entity, role), each entity once (a project's owners who own the object are not named
    /// twice), checked as any ACL a client sends.
    private static func checkedACL(
        _ entries: [(String, String)], field: String, settings: BucketSettings
    ) throws(StorageError) -> JSONValue {
        var seen = Set<String>()
        let list = JSONValue.array(
            entries.filter { seen.insert($0.0).inserted }.map { entity, role in
                .object([("entity", .string(entity)), ("role", .string(role))])
            })
        return try accessControlList(list, field: field, settings: settings) ?? list
    }

    /// A bucket's ACL for `predefinedAcl` on `buckets.insert`, `patch` or `update` (rule B7), as the service builds it:
    /// the project's owners with OWNER, and whom the name adds.
    package static func predefinedBucketACL(_ name: String, settings: BucketSettings) throws(StorageError) -> JSONValue
    {
        var entries: [(String, String)] = [("project-owners-0", "OWNER")]
        switch name {
        case "private": break
        case "projectPrivate": entries += [("project-editors-0", "OWNER"), ("project-viewers-0", "READER")]
        case "authenticatedRead": entries.append(("allAuthenticatedUsers", "READER"))
        case "publicRead": entries.append(("allUsers", "READER"))
        case "publicReadWrite": entries.append(("allUsers", "WRITER"))
        default:
            throw .invalidArgument(
                "Invalid value for the query parameter 'predefinedAcl': '\(name)'; it is one of authenticatedRead, private, projectPrivate, publicRead, publicReadWrite."
            )
        }
        return try checkedACL(entries, field: "predefinedAcl", settings: settings)
    }

    /// Lays a request's `predefinedAcl` and `predefinedDefaultObjectAcl` over a bucket's settings (after its body's).
    package static func applyPredefinedACLs(
        bucketACL: String?, defaultObjectACL: String?, to settings: inout BucketSettings
    ) throws(StorageError) {
        if let bucketACL { settings.acl = try predefinedBucketACL(bucketACL, settings: settings) }
        if let defaultObjectACL {
            settings.defaultObjectAcl = try predefinedObjectACL(
                defaultObjectACL, owner: "project-owners-0", parameter: "predefinedDefaultObjectAcl", settings: settings
            )
        }
    }

    /// An access control list a client sends: entries with an `entity` and a `role` (OWNER, WRITER or READER; an
    /// object's READER or OWNER); null for a new bucket's. Refused while uniform access is on, as on the service, and
    /// a package entity while package access prevention is enforced.
    package static func accessControlList(
        _ value: JSONValue, field: String, settings: BucketSettings
    ) throws(StorageError) -> JSONValue? {
        if value == .null { return nil }
        if settings.uniformBucketLevelAccess {
            throw .invalidArgument("Cannot set \(field) for a bucket that has uniform bucket-level access enabled.")
        }
        guard case .array(let entries) = value else {
            throw invalid(field, "an array of entries with an entity and a role")
        }
        var kept: [JSONValue] = []
        for entry in entries {
            guard case .object(let members) = entry,
                case .string(let entity)? = members.first(where: { $0.0 == "entity" })?.1,
                case .string(let role)? = members.first(where: { $0.0 == "role" })?.1, !entity.isEmpty,
                ["OWNER", "WRITER", "READER"].contains(role)
            else {
                throw invalid(field, "an array of entries, each with an entity and a role (OWNER, WRITER or READER)")
            }
            if settings.publicAccessPrevention == "enforced", entity == "allUsers" || entity == "allAuthenticatedUsers"
            {
                throw StorageError(
                    .preconditionFailed,
                    "Public access prevention is enforced on this bucket: \(entity) cannot be granted access.")
            }
            kept.append(.object([("entity", .string(entity)), ("role", .string(role))]))
        }
        return .array(kept)
    }

    /// A retention policy a client sets (rule M9): a period of 1 second to 100 years, or null (none). A locked
    /// policy can only be lengthened: removing or shortening it is refused (403), as on the service.
    private static func applyRetentionPolicy(
        _ value: JSONValue, to settings: inout BucketSettings, now: Timestamp
    ) throws(StorageError) {
        let locked = settings.retentionLocked == true
        guard case .object(let policy) = value else {
            guard value == .null else { throw invalid("retentionPolicy", "an object with retentionPeriod, or null") }
            if locked, settings.retentionPeriod != nil {
                throw StorageError(.unauthorized, "The bucket's retention policy is locked: it cannot be removed.")
            }
            (settings.retentionPeriod, settings.retentionEffectiveTime, settings.retentionLocked) = (nil, nil, nil)
            return
        }
        for (key, setting) in policy {
            switch key {
            case "retentionPeriod":
                let seconds: Int64?
                switch setting {
                case .string(let text): seconds = Int64(text)
                case .integer(let number): seconds = number
                case .null:
                    if locked {
                        throw StorageError(
                            .unauthorized, "The bucket's retention policy is locked: it cannot be removed.")
                    }
                    (settings.retentionPeriod, settings.retentionEffectiveTime, settings.retentionLocked) = (
                        nil, nil, nil
                    )
                    continue
                default: seconds = nil
                }
                guard let seconds, seconds > 0, seconds <= BucketSettings.longestRetentionPeriod else {
                    throw invalid(
                        "retentionPolicy.retentionPeriod",
                        "a number of seconds from 1 to \(BucketSettings.longestRetentionPeriod) (100 years)")
                }
                if locked, let current = settings.retentionPeriod, seconds < current {
                    throw StorageError(
                        .unauthorized,
                        "The bucket's retention policy is locked at \(current) seconds: it can be lengthened, not shortened to \(seconds)."
                    )
                }
                if seconds != settings.retentionPeriod { settings.retentionEffectiveTime = now }
                settings.retentionPeriod = seconds
            case "effectiveTime", "isLocked": continue  // the service's to set (a lock is its own request)
            default:
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in retentionPolicy: Cannot find field.")
            }
        }
    }

    /// The service's range: 0 (none), or 7 to 90 days.
    package static let softDeleteRange: ClosedRange<Int64> = 604_800...7_776_000

    private static func applySoftDelete(
        _ value: JSONValue, to settings: inout BucketSettings, now: Timestamp
    ) throws(StorageError) {
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
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in softDeletePolicy: Cannot find field.")
            }
        }
    }

    /// Autoclass (`enabled`, `terminalStorageClass` NEARLINE or ARCHIVE), kept and answered with the times the
    /// service sets (`toggleTime` when it is turned on or off, `terminalStorageClassUpdateTime` when the terminal
    /// class changes). storesh serve moves no object between classes: the service moves one only after 30 days
    /// without access, which no test waits for (as lifecycle rules, kept and not acted on).
    private static func applyAutoclass(
        _ value: JSONValue, to settings: inout BucketSettings, now: Timestamp
    ) throws(StorageError) {
        let current = settings.kept["autoclass"]
        guard case .object(let members) = value else {
            guard value == .null else { throw invalid("autoclass", "an object such as {\"enabled\": true}") }
            settings.kept["autoclass"] = nil
            return
        }
        var enabled = current?[member: "enabled"]?.bool ?? false
        var terminal = current?[member: "terminalStorageClass"]?.string
        for (key, setting) in members {
            switch (key, setting) {
            case ("enabled", .bool(let on)): enabled = on
            case ("enabled", _): throw invalid("autoclass.enabled", "true or false")
            case ("terminalStorageClass", .string(let storageClass))
            where ["NEARLINE", "ARCHIVE"].contains(storageClass.uppercased()):
                terminal = storageClass.uppercased()
            case ("terminalStorageClass", .null): terminal = nil
            case ("terminalStorageClass", _): throw invalid("autoclass.terminalStorageClass", "NEARLINE or ARCHIVE")
            case ("toggleTime", _), ("terminalStorageClassUpdateTime", _): continue  // the service's to set
            default:
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in autoclass: Cannot find field.")
            }
        }
        let wasEnabled = current?[member: "enabled"]?.bool ?? false
        if enabled, terminal == nil { terminal = "NEARLINE" }
        if !enabled { terminal = nil }
        let toggled = enabled != wasEnabled
        guard enabled || current != nil else { return }  // off, and never on: nothing to answer
        var answered: [(String, JSONValue)] = [("enabled", .bool(enabled))]
        let toggleTime = toggled ? .string(now.rfc3339) : current?[member: "toggleTime"]
        if let toggleTime { answered.append(("toggleTime", toggleTime)) }
        if let terminal {
            answered.append(("terminalStorageClass", .string(terminal)))
            let changed = terminal != current?[member: "terminalStorageClass"]?.string
            if let time = changed ? .string(now.rfc3339) : current?[member: "terminalStorageClassUpdateTime"] {
                answered.append(("terminalStorageClassUpdateTime", time))
            }
        }
        settings.kept["autoclass"] = .object(answered)
    }

    /// The bucket's `encryption`: a default KMS key cannot be honoured (storesh serve has no key management service);
    /// each type's enforcement (`…EncryptionEnforcementConfig: {restrictionMode}`) is kept, merged member by member as
    /// a patch merges (null removes one), its `effectiveTime` the time it became `FullyRestricted`.
    private static func applyEncryption(
        _ value: JSONValue, to settings: inout BucketSettings, now: Timestamp
    ) throws(StorageError) {
        guard case .object(let members) = value else {
            guard value == .null else { throw invalid("encryption", "an object") }
            settings.encryptionEnforcement = nil
            return
        }
        var enforcement = settings.encryptionEnforcement ?? [:]
        for (key, member) in members {
            if key == "defaultKmsKeyName" {
                guard member == .null else {
                    throw unsupported(
                        "encryption.defaultKmsKeyName",
                        "storesh serve has no key management service and encrypts nothing")
                }
                continue
            }
            guard let type = BucketSettings.EncryptionType(rawValue: key) else {
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in encryption: Cannot find field.")
            }
            guard case .object(let config) = member else {
                guard member == .null else { throw invalid("encryption.\(key)", "an object with restrictionMode") }
                enforcement[type] = nil
                continue
            }
            var restricted: Bool?
            for (name, setting) in config {
                switch (name, setting) {
                case ("restrictionMode", .string("FullyRestricted")): restricted = true
                case ("restrictionMode", .string("NotRestricted")): restricted = false
                case ("restrictionMode", _):
                    throw invalid("encryption.\(key).restrictionMode", "FullyRestricted or NotRestricted")
                case ("effectiveTime", _): continue  // the service's to set
                default:
                    throw .invalidArgument(
                        "Invalid JSON payload received. Unknown name \"\(name)\" in encryption.\(key): Cannot find field."
                    )
                }
            }
            guard let restricted else {
                throw invalid("encryption.\(key).restrictionMode", "FullyRestricted or NotRestricted")
            }
            let since = enforcement[type]?.fullyRestricted == true ? enforcement[type]?.effectiveTime : now
            enforcement[type] = BucketSettings.EncryptionEnforcement(
                fullyRestricted: restricted, effectiveTime: restricted ? since : nil)
        }
        settings.encryptionEnforcement = enforcement.isEmpty ? nil : enforcement
    }

    private static func enabled(_ value: JSONValue) -> Bool {
        guard case .object(let members) = value else { return false }
        return members.contains { $0.0 == "enabled" && $0.1 == .bool(true) }
    }

    private static func applyLabels(
        _ value: JSONValue, to settings: inout BucketSettings, merging: Bool
    ) throws(StorageError) {
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
        guard settings.labels.count <= 64 else {
            throw .invalidArgument("A bucket has at most 64 labels, not \(settings.labels.count).")
        }
    }

    private static func applyAccess(_ value: JSONValue, to settings: inout BucketSettings) throws(StorageError) {
        guard case .object(let members) = value else { throw invalid("iamConfiguration", "an object") }
        for (key, setting) in members {
            switch key {
            case "uniformBucketLevelAccess", "bucketPolicyOnly":
                guard case .object(let access) = setting else { throw invalid("iamConfiguration.\(key)", "an object") }
                if let enabled = access.first(where: { $0.0 == "enabled" })?.1 {
                    guard case .bool(let flag) = enabled else {
                        throw invalid("iamConfiguration.\(key).enabled", "true or false")
                    }
                    settings.uniformBucketLevelAccess = flag
                }
            case "publicAccessPrevention":
                guard case .string(let prevention) = setting,
                    ["inherited", "enforced", "unspecified"].contains(prevention)
                else {
                    throw invalid("iamConfiguration.publicAccessPrevention", "inherited or enforced")
                }
                settings.publicAccessPrevention = prevention == "unspecified" ? "inherited" : prevention
            default:
                throw .invalidArgument(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in iamConfiguration: Cannot find field.")
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
