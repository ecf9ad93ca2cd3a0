import Foundation
import StoreshCore
import StoreshWire

/// A bucket's settings as the shell shows and names them (rule B4): one name per setting, the value in words. `bucket
/// show` lists them, and `bucket set` and `bucket unset` name them and say each change as old → new.
struct BucketSettingsView {
    var rows: [(key: String, value: String?)]

    init(_ settings: BucketSettings) {
        func onOff(_ flag: Bool?) -> String { flag == true ? "on" : "off" }
        rows = [
            ("location", "\(settings.location) (\(settings.locationType))"),
            ("storageClass", settings.storageClass),
            ("versioning", onOff(settings.versioning)),
            (
                "softDelete",
                (settings.softDeleteSeconds ?? 0) > 0
                    ? MessageText.duration(seconds: settings.softDeleteSeconds ?? 0) : "off"
            ),
            (
                "retentionPeriod",
                settings.retentionPeriod.map {
                    MessageText.duration(seconds: $0) + (settings.retentionLocked == true ? " (locked)" : "")
                }
            ),
            ("objectRetention", onOff(settings.objectRetentionEnabled)),
            ("defaultEventBasedHold", onOff(settings.defaultEventBasedHold)),
            ("uniformBucketLevelAccess", onOff(settings.uniformBucketLevelAccess)),
            ("publicAccessPrevention", settings.publicAccessPrevention),
        ]
        rows += settings.labels.sortedByKeyBytes.map { ("label.\($0.key)", $0.value) }
    }

    /// What differs from `self` to `after`, setting by setting, in the order `bucket show` lists them.
    func differences(to after: BucketSettingsView) -> [PropertyDifference] {
        var keys = rows.map(\.key)
        for row in after.rows where !keys.contains(row.key) { keys.append(row.key) }
        return keys.compactMap { key in
            let old = rows.first { $0.key == key }?.value ?? nil
            let new = after.rows.first { $0.key == key }?.value ?? nil
            return NameBytes.sameBytes(old, new) ? nil : PropertyDifference(key: key, old: old, new: new)
        }
    }
}

/// The settings `bucket set` and `bucket unset` name, and how each becomes a member of the JSON API's bucket
/// resource: the change is made as `buckets.patch` makes it (`BucketResource.apply`), so that it is checked as the
/// service checks it.
enum BucketSettingName {
    static let settable = [
        "versioning", "softDelete", "retentionPeriod", "storageClass", "defaultEventBasedHold", "objectRetention",
        "label.KEY",
    ]
    static let unsettable = ["versioning", "softDelete", "retentionPeriod", "defaultEventBasedHold", "label.KEY"]

    /// The members of a patch that sets `key` to `value` (or, with nil, unsets it).
    static func patch(_ key: String, _ value: String?) throws(StorageError) -> [(String, JSONValue)] {
        func flag(_ text: String) throws(StorageError) -> Bool { try BucketSettingName.flag(text, of: key) }
        switch key {
        case "versioning":
            return [("versioning", .object([("enabled", .bool(try value.map(flag) ?? false))]))]
        case "softDelete":
            let seconds =
                try value.map { text throws(StorageError) in
                    ["off", "false", "no"].contains(text.lowercased()) ? 0 : try duration(text, of: key)
                } ?? 0
            return [("softDeletePolicy", .object([("retentionDurationSeconds", .string(String(seconds)))]))]
        case "retentionPeriod":
            guard let value else { return [("retentionPolicy", .null)] }
            return [("retentionPolicy", .object([("retentionPeriod", .string(String(try duration(value, of: key))))]))]
        case "storageClass":
            guard let value else {
                throw .invalidArgument("storageClass cannot be unset: a bucket always has one (STANDARD by default).")
            }
            return [("storageClass", .string(value))]
        case "defaultEventBasedHold":
            return [("defaultEventBasedHold", .bool(try value.map(flag) ?? false))]
        case _ where key.hasPrefix("label.") && key.count > "label.".count:
            let label = String(key.dropFirst("label.".count))
            return [("labels", .object([(label, value.map { .string($0) } ?? .null)]))]
        default:
            let known = value == nil ? unsettable : settable
            let near = Suggestion.nearest(to: key, among: known).map { "; did you mean \($0)?" } ?? ""
            throw .invalidArgument(
                "'\(key)' is not a bucket setting storesh \(value == nil ? "unsets" : "sets")\(near) (\(known.joined(separator: ", ")))."
            )
        }
        // objectRetention is not a patch: the service takes it when the bucket is made (`set`).
    }

    /// On or off, as people write it (`on`, `true`, `yes`; `off`, `false`, `no`).
    static func flag(_ text: String, of key: String) throws(StorageError) -> Bool {
        switch text.lowercased() {
        case "on", "true", "yes": return true
        case "off", "false", "no": return false
        default: throw .invalidArgument("\(key) is on or off, not '\(text)'.")
        }
    }

    /// A duration as people write one: `7d`, `36h`, `90m`, `45s`, or a number of seconds.
    static func duration(_ text: String, of key: String) throws(StorageError) -> Int64 {
        let units: [Character: Int64] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let seconds = units[last] {
            digits = text.dropLast()
            unit = seconds
        }
        guard let number = Int64(digits), number >= 0 else {
            throw .invalidArgument("\(key) is a duration such as 7d, 36h, 90m or 45s, not '\(text)'.")
        }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: unit)
        guard !overflow else { throw .invalidArgument("\(key) '\(text)' is longer than any duration a bucket takes.") }
        return seconds
    }
}

extension Session {
    /// The bucket file's settings store, or the refusal of a bucket whose settings storesh does not keep (rule B3 is
    /// checked before a script runs; this is the same refusal for a command run alone).
    func requireSettingsStore(_ here: SourceLocation) throws -> any BucketSettingsStore {
        guard let store = target.settingsStore else {
            throw Diagnostic.running(
                .invalidArgument(
                    "\(bucket.url) keeps its settings with its service: gcloud storage buckets describe and update change them."
                ), at: here)
        }
        return store
    }

    /// The bucket's settings: those stored, else a new bucket's (a bucket file keeps none until they are changed).
    func currentBucketSettings(_ store: any BucketSettingsStore) throws -> BucketSettings {
        try store.storedSettings() ?? BucketSettings(madeAt: clock.now())
    }
}

/// What `explain` says of `bucket show`, `set` and `unset`: the service's request for the same.
private func bucketExplanation(_ purpose: String, method: String, bucket: String, body: String?) -> ExplainedRequest {
    ExplainedRequest(
        purpose: purpose,
        cloudStorageREST:
            "\(method) \(CloudStorageWire.bucketPath(bucket))\(method == "PATCH" ? "?ifMetagenerationMatch=M" : "")"
            + (body.map { "\n\($0)" } ?? ""),
        note:
            "A bucket file keeps its settings itself; on Cloud Storage, gcloud storage buckets \(method == "GET" ? "describe" : "update") sends this. The Firebase SDKs have no call for a bucket's settings."
    )
}

/// `bucket show`: the bucket's settings (rule B4).
package struct BucketShowCommand: LanguageCommand, Equatable {
    package init() {}

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package static let declaration = CommandDeclaration(
        "bucket show", group: .metadata, usage: "bucket show",
        summary: "the bucket's settings: versioning, soft delete, retention, default storage class, holds, labels",
        details: [
            "What decides how the bucket keeps objects: versioning (noncurrent generations, rule B5), soft delete (how",
            "long deleted objects stay restorable, B6), a retention policy and object retention (M9), the storage class",
            "and event-based hold new objects get, and labels. bucket set and bucket unset change them.",
        ],
        example: "bucket show", requires: .bucketSettings)

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSettingsStore(here)
        session.deliver(.bucketSettings(bucket: session.bucket.url, try session.currentBucketSettings(store)))
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        [bucketExplanation("read the bucket's settings", method: "GET", bucket: session.target.name, body: nil)]
    }
}

/// `bucket set KEY=VALUE…` and `bucket unset KEY…`: the bucket's settings changed as `buckets.patch` changes them,
/// in the script's transaction (a dry run changes nothing).
package protocol BucketSettingsCommand: LanguageCommand {
    /// Each setting named, with its new value (nil: unset), and the word that named it.
    var changes: [(word: Word, key: String, value: String?)] { get }
}

extension BucketSettingsCommand {
    package var header: String { "\(name) \(changes.map(\.word.text).joined(separator: " "))" }

    /// The same command with the same words.
    package func isEqual(to other: any LanguageCommand) -> Bool {
        guard let other = other as? Self else { return false }
        return other.changes.map(\.word) == changes.map(\.word)
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSettingsStore(here)
        let before = try session.currentBucketSettings(store)
        let now = session.clock.nextChangeTime()
        var after = before
        for change in changes {
            do throws(StorageError) {
                if change.key == "objectRetention" {
                    // Chosen when a bucket is made, on the service; here it may be turned on, and never off.
                    if try BucketSettingName.flag(change.value ?? "off", of: change.key) {
                        after.objectRetentionEnabled = true
                    } else if after.objectRetentionEnabled == true {
                        throw StorageError.invalidArgument(
                            "objectRetention cannot be turned off once on, as on Cloud Storage.")
                    }
                    continue
                }
                try BucketResource.apply(
                    try BucketSettingName.patch(change.key, change.value), to: &after, replacing: nil, creating: false,
                    now: now)
            } catch {
                throw Diagnostic.running(error, at: change.word.location)
            }
        }
        let differences = BucketSettingsView(before).differences(to: BucketSettingsView(after))
        if !differences.isEmpty {
            after.metageneration += 1
            after.updated = now
            try store.storeSettings(after)
        }
        session.deliver(.bucketSettingsChanged(bucket: session.bucket.url, differences, dryRun: session.options.dryRun))
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        var members: [(String, JSONValue)] = []
        for change in changes {
            if change.key == "objectRetention" { continue }
            members += (try? BucketSettingName.patch(change.key, change.value)) ?? []
        }
        let body = members.isEmpty ? nil : JSONValue.object(members).serialized
        return [
            bucketExplanation("change the bucket's settings", method: "PATCH", bucket: session.target.name, body: body)
        ]
    }
}

/// `bucket set KEY=VALUE…`.
package struct BucketSetCommand: BucketSettingsCommand {
    package var changes: [(word: Word, key: String, value: String?)]

    package static let declaration = CommandDeclaration(
        "bucket set", group: .metadata, usage: "bucket set KEY=VALUE…",
        summary:
            "change the bucket's settings: versioning=on, softDelete=7d, retentionPeriod=1d, storageClass=NEARLINE…",
        details: [
            "Keys: versioning (on or off), softDelete (7d to 90d, or off), retentionPeriod (1s to 100 years, as 30d,",
            "12h, 90m or seconds), storageClass (the class new objects get), defaultEventBasedHold (on or off),",
            "objectRetention=on (objects may then carry a retention of their own; it stays on), label.KEY=VALUE.",
            "Each is checked as Cloud Storage checks it (a locked retention policy is only lengthened), and the",
            "change moves the bucket's metageneration. On a bucket file; a real bucket's are gcloud's to change.",
        ],
        example: "bucket set versioning=on softDelete=7d",
        changesBucket: true, requires: .bucketSettings)

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        changes = []
        while let word = arguments.next() {
            try Parser.refuseStrayOption(word, for: "bucket set")
            guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else {
                throw Diagnostic.syntax(
                    "`bucket set` takes KEY=VALUE, e.g. bucket set versioning=on; '\(word.text)' has no =",
                    at: word.location)
            }
            let key = String(word.text[..<equals])
            let value = String(word.text[word.text.index(after: equals)...])
            do throws(StorageError) {
                if key == "objectRetention" {
                    _ = try BucketSettingName.flag(value, of: key)
                } else {
                    _ = try BucketSettingName.patch(key, value)
                }
            } catch {
                throw Diagnostic.beforeRunning(error, at: word.location)
            }
            changes.append((word, key, value))
        }
        guard !changes.isEmpty else {
            throw Diagnostic.syntax(
                "`bucket set` needs at least one KEY=VALUE, e.g. bucket set versioning=on", at: arguments.afterName)
        }
    }
}

/// `bucket unset KEY…`.
package struct BucketUnsetCommand: BucketSettingsCommand {
    package var changes: [(word: Word, key: String, value: String?)]

    package static let declaration = CommandDeclaration(
        "bucket unset", group: .metadata, usage: "bucket unset KEY…",
        summary: "remove bucket settings: retentionPeriod, softDelete, versioning, defaultEventBasedHold, label.KEY",
        details: [
            "retentionPeriod removes the retention policy (refused once it is locked); softDelete, versioning and",
            "defaultEventBasedHold turn them off; label.KEY removes a label.",
        ],
        example: "bucket unset retentionPeriod label.team",
        changesBucket: true, requires: .bucketSettings)

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        changes = []
        while let word = arguments.next() {
            try Parser.refuseStrayOption(word, for: "bucket unset")
            do { _ = try BucketSettingName.patch(word.text, nil) } catch {
                throw Diagnostic.beforeRunning(error, at: word.location)
            }
            changes.append((word, word.text, nil))
        }
        guard !changes.isEmpty else {
            throw Diagnostic.syntax(
                "`bucket unset` needs at least one KEY, e.g. bucket unset retentionPeriod", at: arguments.afterName)
        }
    }
}
