import Foundation
import StoreshCore

/// What a command produced, as a value: commands make these, and a renderer prints them for people or as
/// the contract's JSON documents (one per result, on one line).
package enum CommandResult: Sendable {
    /// A dry run's header before each changing command (people only).
    case planHeader(line: Int, command: String)
    /// A remark about the run for people (`dry run: nothing was saved`); JSON has none.
    case note(String)
    case path(String)
    case listing(ListingResult)
    case metadata(ObjectMetadata)
    case written(ObjectMetadata, dryRun: Bool)
    /// `restore`: the live object a soft-deleted generation became (rule B6).
    case restored(ObjectMetadata, generation: ObjectGeneration, dryRun: Bool)
    /// `mv`: the object a move made, from the name it had, and whether it replaced an object there.
    /// `inOneStep`: false where the bucket copies, then deletes (S3).
    case moved(from: String, to: ObjectMetadata, replaced: Bool, inOneStep: Bool, dryRun: Bool)
    case saved(object: String, file: String, size: Int64, dryRun: Bool)
    case content(object: String, Data)
    case echo(String)
    case help(String)
    case rules(source: String, origin: String)
    case rulesLoaded(file: String, dryRun: Bool)
    /// `rules reset`: the open rules of a new bucket again.
    case rulesReset(dryRun: Bool)
    case decision(allowed: Bool?, explanation: String)
    case signedIn(uid: String)
    case signedOut
    case identity(Identity?)
    /// A real bucket's `whoami`: which API its requests go to and whose credentials they carry.
    case access(String)
    case snapshotSaved(SnapshotInfo, dryRun: Bool)
    case snapshots([SnapshotInfo])
    case snapshotRemoved(SnapshotInfo, dryRun: Bool)
    case explanation(Explanation)
    /// `page token`: what a token holds.
    case pageToken(token: String, bucket: String, position: ListPosition, scheme: String)
    /// `bucket show`: the bucket's settings (rule B4).
    case bucketSettings(bucket: String, BucketSettings)
    /// `bucket set`, `bucket unset`: each setting changed, old → new (none: they already were so).
    case bucketSettingsChanged(bucket: String, [PropertyDifference], dryRun: Bool)
    /// `run --echo`: the command about to run, after the prompt the shell would show.
    case command(String, prompt: String)
}

/// One page of `ls` or `page next`, with what the renderers need beyond the page.
package struct ListingResult: Sendable {
    package var page: ListPage
    package var reference: StoragePath
    package var bucket: String
    /// `gs`, `s3`: how the bucket's URLs start.
    package var scheme: String
    package var long: Bool
    /// With `-l`: each item's metadata.
    package var metadata: [ObjectMetadata]
    /// For an empty listing: whether the listed reference is an object (rule L5), worth a hint.
    package var referenceIsObject: Bool
    /// For an empty listing: a folder beside it with a near name (a typo's likely meaning).
    package var suggestion: String? = nil
    /// `ls -a`, `ls --soft-deleted`: the items are generations, each with its metadata (rules B5, B6).
    package var generations = false
    /// `ls --soft-deleted`: the generations are the soft-deleted ones.
    package var softDeleted = false
    /// For an empty listing: a name stored under the reference that no listing shows (rule L3).
    package var hiddenName: String? = nil
}

/// Prints results.
package protocol ResultRenderer {
    func render(_ result: CommandResult, to output: SessionOutput)
}

/// Results for people: aligned columns, sizes and dates for reading, plans old → new.
package struct HumanRenderer: ResultRenderer {
    /// Folders in colour (a terminal without NO_COLOR).
    package var color: Bool
    /// Pages are a screenful at the prompt: their footer says what to type, not the token.
    package var screenfulPages: Bool
    /// The terminal's width in cells, when output goes to one: sentences are wrapped to it at blanks between words.
    package var width: Int?

    package init(color: Bool, screenfulPages: Bool, width: Int? = nil) {
        self.color = color
        self.screenfulPages = screenfulPages
        self.width = width
    }

    package func render(_ result: CommandResult, to output: SessionOutput) {
        let lines = lines(for: result, output: output)
        let data = Self.dataLines(of: result)
        for (index, line) in lines.enumerated() {
            output.result(line, wrappedTo: index < data ? nil : width)
        }
    }

    /// How many of a result's first lines are data, never wrapped at a terminal's width: names (a listing's
    /// entries, a path), whose blanks are part of them. Every other line people read (sentences, help, explain,
    /// tables of values, rules) wraps between words, its continued lines under its text.
    static func dataLines(of result: CommandResult) -> Int {
        switch result {
        case .listing(let listing):
            listing.page.prefixes.count + (listing.long ? listing.metadata.count : listing.page.items.count)
        case .path: 1
        default: 0
        }
    }

    private func lines(for result: CommandResult, output: SessionOutput) -> [String] {
        switch result {
        case .planHeader(let line, let command): return ["# line \(line): \(command)"]
        case .note(let text): return [text]
        case .path(let url): return [MessageText.oneLine(url)]
        case .listing(let listing): return Self.listing(listing, color: color, screenfulPages: screenfulPages)
        case .metadata(let metadata): return Self.describe(metadata)
        case .written(let metadata, let dryRun):
            let type = metadata.contentType.flatMap { $0.isEmpty ? nil : $0 } ?? "no content type"
            return [
                "\(dryRun ? "would write" : "wrote") \(MessageText.name(metadata.fullPath)) (\(MessageText.byteCount(metadata.size)), \(type))"
            ]
        case .restored(let metadata, let generation, let dryRun):
            return [
                "\(dryRun ? "would restore" : "restored") \(MessageText.name(metadata.fullPath))#\(generation) as the live object (\(MessageText.byteCount(metadata.size)))"
            ]
        case .moved(let source, let metadata, let replaced, let inOneStep, let dryRun):
            let how = inOneStep ? "" : dryRun ? "; a copy, then a delete" : "; copied, then deleted"
            return [
                "\(dryRun ? "would move" : "moved") \(MessageText.name(source)) to \(MessageText.name(metadata.fullPath)) (\(MessageText.byteCount(metadata.size))\(replaced ? ", replacing the object there" : "")\(how))"
            ]
        case .saved(let object, let file, let size, let dryRun):
            return [
                "\(dryRun ? "would save" : "saved") \(MessageText.name(object)) (\(MessageText.byteCount(size))) to \(file)"
            ]
        case .content(_, let data):
            output.resultBytes(data)
            return []
        case .echo(let text), .help(let text), .access(let text): return [text]
        case .explanation(let explanation): return Self.explain(explanation)
        case .command(let text, let prompt): return ["\(MessageText.oneLine(prompt))> \(text)"]
        case .pageToken(let token, let bucket, let position, let scheme):
            let folder = NameBytes.prefix(of: position.prefix, byteCount: max(0, position.prefix.utf8.count - 1))
            let kind = position.lastEntryKind == .prefix ? "a prefix" : "an item"
            return Formatting.columns(
                [
                    ["token", token],
                    ["bucket", bucket],
                    ["listing", "\(scheme)://\(bucket)/\(folder) (prefix \"\(position.prefix)\")"],
                    ["last entry", "\(position.lastEntry) (\(kind))"],
                ].map { $0.map(MessageText.oneLine) }) + [
                    "The next page starts after the last entry; the token holds its name, not its generation."
                ]
        case .rules(let source, let origin):
            return [MessageText.rulesDescription(origin).map { "# \($0)" } ?? "# rules from \(origin)", source]
        case .rulesLoaded(let file, let dryRun): return ["\(dryRun ? "would load" : "loaded") the rules of \(file)"]
        case .rulesReset(let dryRun): return ["\(dryRun ? "would put" : "put") back the open rules of a new bucket"]
        case .decision(_, let explanation): return [explanation]
        case .signedIn(let uid): return ["signed in as \(MessageText.oneLine(uid))"]
        case .signedOut: return ["signed out: request.auth is null"]
        case .identity(let identity):
            guard let identity else { return ["not signed in: request.auth is null"] }
            let claims = identity.claims.sortedByKeyBytes.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            return [
                "signed in as \(MessageText.oneLine(identity.uid))" + (claims.isEmpty ? "" : " (claims: \(claims))")
            ]
        case .snapshotSaved(let info, let dryRun):
            return [
                "\(dryRun ? "would save" : "saved") snapshot \(info.name) (\(MessageText.counted(info.objectCount, "object")))"
            ]
        case .snapshots(let all):
            guard !all.isEmpty else { return ["(no snapshots; snapshot save NAME takes one)"] }
            let rows = all.map {
                [$0.name, Formatting.shortDate($0.created), MessageText.counted($0.objectCount, "object")]
            }
            return Formatting.columns(rows, rightAligned: [2])
        case .snapshotRemoved(let info, let dryRun):
            return ["\(dryRun ? "would remove" : "removed") snapshot \(info.name)"]
        case .bucketSettings(_, let settings):
            return Formatting.columns(
                BucketSettingsView(settings).rows.map {
                    [MessageText.oneLine($0.key), MessageText.oneLine($0.value ?? "(none)")]
                })
        case .bucketSettingsChanged(let bucket, let differences, let dryRun):
            guard !differences.isEmpty else { return ["the settings of \(bucket) already are so: nothing changed"] }
            return Self.plan(name: "\(bucket) settings", differences)
                + [
                    "\(dryRun ? "would update" : "updated") the settings of \(bucket) (\(MessageText.counted(differences.count, "setting")))"
                ]
        }
    }

    static func listing(_ listing: ListingResult, color: Bool, screenfulPages: Bool) -> [String] {
        let page = listing.page
        // Names relative to the listed reference, as a shell shows them; prefixes end in /.
        let strip = listing.reference.listingPrefix.utf8.count
        func relative(_ fullPath: String) -> String {
            MessageText.name(String(Substring(fullPath.utf8.dropFirst(strip))))
        }
        // Folders in bold blue when colour is on, so they stand apart from objects at a glance.
        func folder(_ text: String) -> String { color ? "\u{1B}[1;34m\(text)\u{1B}[0m" : text }
        var lines: [String]
        if listing.generations {
            // Each generation as NAME#GENERATION, with what it is: live, noncurrent since, or soft-deleted until.
            var rows = page.prefixes.map { (listing.long ? ["-"] : []) + [folder(relative($0) + "/")] }
            // Short enough for 80 columns with a short name: the time that matters for each (when a soft-deleted one
            // goes for good, when a noncurrent one stopped being live); `meta get`-like detail is --json's.
            rows += listing.metadata.map { generation in
                let state: String
                if let hard = generation.cloudStorage.hardDeleteTime {
                    state = "soft-deleted, kept until \(Formatting.shortDate(hard))"
                } else if let deleted = generation.timeDeleted {
                    state = "noncurrent since \(Formatting.shortDate(deleted))"
                } else {
                    state = "live"
                }
                let name = relative(generation.fullPath) + "#\(generation.generationID)"
                return (listing.long ? [MessageText.byteCount(generation.size)] : []) + [name, state]
            }
            lines = Formatting.columns(rows, rightAligned: listing.long ? [0] : [])
        } else if listing.long {
            var rows = page.prefixes.map { ["-", "-", "-", folder(relative($0) + "/")] }
            rows += listing.metadata.map {
                [
                    MessageText.byteCount($0.size), Formatting.shortDate($0.updated), $0.contentType ?? "-",
                    relative($0.fullPath),
                ]
            }
            lines = Formatting.columns(rows, rightAligned: [0])
        } else {
            lines = page.prefixes.map { folder(relative($0) + "/") } + page.items.map(relative)
        }
        if page.prefixes.isEmpty && page.items.isEmpty && listing.generations {
            let url = MessageText.oneLine(listing.reference.url(bucket: listing.bucket, scheme: listing.scheme))
            lines.append(
                listing.softDeleted ? "(no soft-deleted generation under \(url))" : "(no generation under \(url))")
        } else if page.prefixes.isEmpty && page.items.isEmpty {
            var note =
                "(nothing under \(MessageText.oneLine(listing.reference.url(bucket: listing.bucket, scheme: listing.scheme))))"
            if listing.referenceIsObject { note += " — it is an object: meta get shows it (rule L5)" }
            if let suggestion = listing.suggestion { note += " — did you mean \(MessageText.oneLine(suggestion))?" }
            if let hidden = listing.hiddenName { note += " — " + MessageText.hiddenName(hidden) }
            lines.append(note)
        }
        if let token = page.nextPageToken {
            if screenfulPages {
                // At the prompt `page next` is what to type; the token is there for a class to look at
                // (`page token` decodes it), dimmed on a terminal.
                // "token" and the token are joined by a no-break space: wrapped, they go to the next line together,
                // never leaving "page next token" to be read as one command.
                lines.append(
                    "… more: page next   " + (color ? "\u{1B}[2mtoken\u{A0}\(token)\u{1B}[0m" : "token\u{A0}\(token)"))
            } else {
                lines.append("… more entries: `page next` shows them (token \(token))")
            }
        }
        return lines
    }

    /// Object changes as a plan: added and removed paths, and each changed object's properties old → new.
    static func changes(_ changes: [ObjectChange]) -> [String] {
        changes.flatMap { change -> [String] in
            switch change.kind {
            case .added:
                let type = change.metadata.contentType.flatMap { $0.isEmpty ? nil : $0 } ?? "no content type"
                return [
                    "\(MessageText.name(change.name)) (added: \(MessageText.byteCount(change.metadata.size)), \(type))"
                ]
            case .removed:
                return ["\(MessageText.name(change.name)) (removed)"]
            case .changed:
                return plan(name: change.name, change.differences)
            }
        }
    }

    /// One changed object in a plan: its name, then each property old → new.
    static func plan(name: String, _ differences: [PropertyDifference]) -> [String] {
        let rows = differences.map { ["  " + $0.key, Formatting.planValue($0.old), "→", Formatting.planValue($0.new)] }
        return [MessageText.name(name)] + Formatting.columns(rows)
    }

    /// One object's changes on one line: `name  key old → new; key old → new`.
    static func planLine(name: String, _ differences: [PropertyDifference]) -> String {
        MessageText.name(name) + "  "
            + differences.map { "\($0.key) \(Formatting.planValue($0.old)) → \(Formatting.planValue($0.new))" }.joined(
                separator: "; ")
    }

    /// "1 added, 2 removed, 3 changed".
    /// How many changes of each kind.
    static func counts(of changes: [ObjectChange]) -> [ObjectChange.Kind: Int] {
        changes.reduce(into: [:]) { counts, change in counts[change.kind, default: 0] += 1 }
    }

    /// `1 added, 0 removed, 2 changed`.
    static func tally(_ counts: [ObjectChange.Kind: Int]) -> String {
        ObjectChange.Kind.allCases.map { "\(MessageText.grouped(counts[$0] ?? 0)) \($0.rawValue)" }.joined(
            separator: ", ")
    }

    /// The last line of `snapshot diff FROM [TO]`, from how many objects differ by kind.
    static func snapshotDiffSummary(from: String, to: String?, counts: [ObjectChange.Kind: Int]) -> String {
        let toText = to.map { "snapshot \($0)" } ?? "now"
        let count = counts.values.reduce(0, +)
        return count == 0
            ? "no differences from snapshot \(from) to \(toText)"
            : "\(MessageText.counted(count, "object")) differ from snapshot \(from) to \(toText): \(tally(counts))"
    }

    /// The last line of `snapshot restore NAME`, from how many objects it changed by kind.
    static func snapshotRestoreSummary(_ name: String, counts: [ObjectChange.Kind: Int], dryRun: Bool) -> String {
        counts.values.reduce(0, +) == 0
            ? "the bucket is already as in snapshot \(name); nothing to restore"
            : "\(dryRun ? "would restore" : "restored") snapshot \(name): \(tally(counts))"
    }

    /// `explain` for people: each request, numbered, in the SDK, the two REST APIs and the rules.
    static func explain(_ explanation: Explanation) -> [String] {
        var lines = ["explain: \(MessageText.oneLine(explanation.command))"]
        for (index, request) in explanation.requests.enumerated() {
            let number = explanation.requests.count > 1 ? "\(index + 1). " : ""
            lines.append("\(number)\(request.purpose)")
            func block(_ title: String, _ text: String?) {
                guard let text else { return }
                lines.append("   \(title):")
                lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { "     \($0)" }
            }
            block("Swift (Firebase SDK for Apple platforms)", request.swift)
            block(
                "Firebase Storage REST API (v0), the SDKs' API (as storesh sends it when signed in)",
                request.firebaseREST)
            block("Cloud Storage JSON API", request.cloudStorageREST)
            if let method = request.rulesMethod { lines.append("   Security rules: allow \(method)") }
            if let note = request.note { lines.append("   Note: \(note)") }
        }
        return lines
    }

    /// `meta get` for people: one aligned line per property, custom keys as custom.NAME.
    static func describe(_ metadata: ObjectMetadata) -> [String] {
        var rows: [[String]] = [
            ["bucket", metadata.bucket],
            // Marked (not NFC) when decomposed: two names that look alike are two objects (rule P7).
            ["fullPath", MessageText.name(metadata.fullPath)],
            ["name", MessageText.name(metadata.name)],
            ["size", "\(metadata.size) (\(MessageText.byteCount(metadata.size)))"],
        ]
        for property in WritableProperty.allCases {
            if let value = metadata[property] { rows.append([property.rawValue, value]) }
        }
        for (key, value) in metadata.customMetadata.sortedByKeyBytes { rows.append(["custom." + key, value]) }
        rows += [["timeCreated", metadata.timeCreated.rfc3339], ["updated", metadata.updated.rfc3339]]
        if metadata.hasGenerations {
            rows += [
                ["generation", String(metadata.generation)], ["metageneration", String(metadata.metageneration)],
            ]
        }
        if let entityTag = metadata.entityTag { rows.append(["etag", entityTag]) }
        if let versionID = metadata.versionID { rows.append(["versionId", versionID]) }
        if !metadata.md5Hash.isEmpty { rows.append(["md5Hash", metadata.md5Hash]) }
        // Cloud Storage's own fields (rule M9) and a kept generation's times (B5, B6), where there are any.
        let fields = metadata.cloudStorage
        if let storageClass = fields.storageClass { rows.append(["storageClass", storageClass]) }
        if let customTime = fields.customTime { rows.append(["customTime", customTime.rfc3339Microseconds]) }
        if fields.temporaryHold { rows.append(["temporaryHold", "true (it can be neither deleted nor overwritten)"]) }
        if fields.eventBasedHold {
            rows.append(["eventBasedHold", "true (it can be neither deleted nor overwritten)"])
        }
        for (key, context) in fields.contexts.sortedByKeyBytes { rows.append(["context." + key, context.value]) }
        if let retention = fields.retention {
            rows.append([
                "retention",
                "\(retention.mode.rawValue) until \(retention.retainUntilTime.rfc3339) (not deleted or overwritten before)",
            ])
        }
        if let expiration = fields.retentionExpirationTime {
            rows.append(["retentionExpirationTime", expiration.rfc3339 + " (the bucket's retention policy)"])
        }
        if let count = fields.componentCount { rows.append(["componentCount", String(count)]) }
        if let key = fields.customerKeySHA256 { rows.append(["customerEncryption", "AES256, key SHA-256 \(key)"]) }
        if let deleted = metadata.timeDeleted { rows.append(["timeDeleted", deleted.rfc3339]) }
        if let soft = fields.softDeleteTime { rows.append(["softDeleteTime", soft.rfc3339]) }
        if let hard = fields.hardDeleteTime { rows.append(["hardDeleteTime", hard.rfc3339]) }
        return Formatting.columns(rows.map { $0.map(MessageText.oneLine) })
    }
}

/// Results as the contract's JSON documents, one per result; the changes of a dry run carry `"dryRun":true`.
package struct JSONRenderer: ResultRenderer {
    package init() {}

    package func render(_ result: CommandResult, to output: SessionOutput) {
        if let document = document(for: result) { output.result(document.serialized) }
    }

    func document(for result: CommandResult) -> JSONValue? {
        func marked(_ fields: [(String, JSONValue)], _ dryRun: Bool) -> JSONValue {
            .object(fields + (dryRun ? [("dryRun", .bool(true))] : []))
        }
        switch result {
        case .planHeader, .note: return nil
        case .path(let url): return .object([("path", .string(url))])
        case .listing(let listing):
            let items: [JSONValue] =
                listing.long || listing.generations
                ? listing.metadata.map(\.jsonDocument) : listing.page.items.map { .string($0) }
            return .object([
                ("prefixes", .array(listing.page.prefixes.map { .string($0) })), ("items", .array(items)),
                ("nextPageToken", listing.page.nextPageToken.map { .string($0) } ?? .null),
            ])
        case .metadata(let metadata): return metadata.jsonDocument
        case .written(let metadata, let dryRun):
            guard dryRun, case .object(let fields) = metadata.jsonDocument else { return metadata.jsonDocument }
            return marked(fields, true)
        case .restored(let metadata, let generation, let dryRun):
            guard case .object(let fields) = metadata.jsonDocument else { return metadata.jsonDocument }
            return marked(fields + [("restoredFrom", .string(generation.description))], dryRun)
        case .moved(let source, let metadata, let replaced, let inOneStep, let dryRun):
            guard case .object(let fields) = metadata.jsonDocument else { return metadata.jsonDocument }
            return marked(
                fields + [
                    ("movedFrom", .string(source)), ("replaced", .bool(replaced)), ("inOneStep", .bool(inOneStep)),
                ], dryRun)
        case .saved(let object, let file, let size, let dryRun):
            // A dry run saves no file, and says so to people only.
            return dryRun
                ? nil : .object([("path", .string(object)), ("file", .string(file)), ("size", .integer(size))])
        case .content(let object, let data):
            let body: (String, JSONValue) =
                String(data: data, encoding: .utf8).map { ("text", .string($0)) } ?? (
                    "base64", .string(data.base64EncodedString())
                )
            return .object([("path", .string(object)), body])
        case .echo(let text): return .object([("echo", .string(text))])
        case .help(let text): return .object([("help", .string(text))])
        case .command(let text, let prompt): return .object([("command", .string(text)), ("at", .string(prompt))])
        case .pageToken(let token, let bucket, let position, _):
            return .object([
                ("token", .string(token)), ("bucket", .string(bucket)), ("prefix", .string(position.prefix)),
                ("lastEntry", .string(position.lastEntry)),
                ("lastEntryKind", .string(position.lastEntryKind == .prefix ? "prefix" : "item")),
            ])
        case .explanation(let explanation):
            return .object([
                ("explain", .string(explanation.command)),
                (
                    "requests",
                    .array(
                        explanation.requests.map { request in
                            .object(
                                [("purpose", .string(request.purpose))]
                                    + [
                                        ("swift", request.swift), ("firebaseREST", request.firebaseREST),
                                        ("cloudStorageREST", request.cloudStorageREST),
                                        ("rulesMethod", request.rulesMethod), ("note", request.note),
                                    ].compactMap { key, value in value.map { (key, JSONValue.string($0)) } })
                        })
                ),
            ])
        case .rules(let source, let origin): return .object([("origin", .string(origin)), ("source", .string(source))])
        case .rulesLoaded(let file, let dryRun): return marked([("loaded", .string(file))], dryRun)
        case .rulesReset(let dryRun): return marked([("rulesReset", .bool(true))], dryRun)
        case .decision(let allowed, let explanation):
            return .object([("allowed", allowed.map { .bool($0) } ?? .null), ("explanation", .string(explanation))])
        case .signedIn(let uid): return .object([("uid", .string(uid))])
        case .signedOut: return .object([("uid", .null)])
        case .access(let text): return .object([("access", .string(text))])
        case .identity(let identity):
            return .object([
                ("uid", identity.map { .string($0.uid) } ?? .null),
                (
                    "claims",
                    .object(identity?.claims.sortedByKeyBytes.map { ($0.key, .string($0.value.description)) } ?? [])
                ),
            ])
        case .snapshotSaved(let info, let dryRun): return marked([("saved", Self.document(info))], dryRun)
        case .snapshots(let all): return .object([("snapshots", .array(all.map(Self.document)))])
        case .snapshotRemoved(let info, let dryRun): return marked([("removedSnapshot", .string(info.name))], dryRun)
        case .bucketSettings(let bucket, let settings):
            return .object([
                ("bucket", .string(bucket)),
                (
                    "settings",
                    .object(BucketSettingsView(settings).rows.map { ($0.key, $0.value.map { .string($0) } ?? .null) })
                ),
            ])
        case .bucketSettingsChanged(let bucket, let differences, let dryRun):
            return marked([("bucket", .string(bucket)), ("changes", Self.changesDocument(differences))], dryRun)
        }
    }

    static func document(_ info: SnapshotInfo) -> JSONValue {
        .object([
            ("name", .string(info.name)), ("created", .string(info.created.rfc3339)),
            ("objects", .integer(Int64(info.objectCount))),
        ])
    }

    /// Added and removed paths, and each changed object's properties old → new.
    static func changeFields(_ changes: [ObjectChange]) -> [(String, JSONValue)] {
        let paths = { (kind: ObjectChange.Kind) -> JSONValue in
            .array(changes.filter { $0.kind == kind }.map { .string($0.name) })
        }
        let changed = changes.filter { $0.kind == .changed }.map { changedDocument(path: $0.name, $0.differences) }
        return [("added", paths(.added)), ("removed", paths(.removed)), ("changed", .array(changed))]
    }

    /// `{"path": …, "changes": {KEY: {"old": …, "new": …}}}`: a changed object in JSON plans and diffs.
    static func changedDocument(path: String, _ differences: [PropertyDifference]) -> JSONValue {
        .object([("path", .string(path)), ("changes", changesDocument(differences))])
    }

    /// `{KEY: {"old": …, "new": …}}`: each property's change, in JSON plans, diffs and changed settings.
    static func changesDocument(_ differences: [PropertyDifference]) -> JSONValue {
        .object(
            differences.map {
                (
                    $0.key,
                    .object([
                        ("old", $0.old.map(JSONValue.string) ?? .null), ("new", $0.new.map(JSONValue.string) ?? .null),
                    ])
                )
            })
    }
}
