import Foundation
import StoreshCore
import StoreshWire

/// One object as an archive holds it: what a write sets, plus (optionally) the read-only properties
/// of an exported object, which an import keeps so that an export/import round trip is exact: Cloud Storage's own
/// fields (rule M9), and a generation that is not live (a noncurrent one, rule B5, or a soft-deleted one, rule B6).
public struct ArchivedObject: Sendable, Equatable {
    public var name: ObjectName
    public var content: Data
    public var properties: [WritableProperty: String]
    public var customMetadata: CustomMetadata
    public var generation: Int64?
    public var metageneration: Int64?
    public var timeCreated: Timestamp?
    public var updated: Timestamp?
    /// Holds, retention, custom time, storage class, contexts… (and a soft-deleted generation's times).
    public var cloudStorage = CloudStorageFields()
    /// When a noncurrent generation stopped being live; nil for any other.
    public var timeDeleted: Timestamp?

    /// Which generation of its object an archived object is.
    public enum Kind: Sendable, Equatable {
        /// The object as listed.
        case live
        /// Kept by versioning after a write replaced it or a delete removed it (`timeDeleted`).
        case noncurrent
        /// Kept by the soft delete policy (`softDeleteTime`, `hardDeleteTime`), restorable until its hard delete time.
        case softDeleted
    }

    public var kind: Kind {
        timeDeleted != nil ? .noncurrent : cloudStorage.softDeleteTime != nil ? .softDeleted : .live
    }

    public init(
        name: ObjectName, content: Data, properties: [WritableProperty: String] = [:],
        customMetadata: CustomMetadata = [:], generation: Int64? = nil, metageneration: Int64? = nil,
        timeCreated: Timestamp? = nil, updated: Timestamp? = nil
    ) {
        self.name = name
        self.content = content
        self.properties = properties
        self.customMetadata = customMetadata
        self.generation = generation
        self.metageneration = metageneration
        self.timeCreated = timeCreated
        self.updated = updated
    }

    /// The object's metadata once stored: archived values where given, else those of a new write (rule M3).
    func metadata(bucket: String, generation: Int64, now: Timestamp) -> ObjectMetadata {
        archived(
            ObjectMetadata.newObject(
                bucket: bucket, name: name, content: content, generation: generation, now: now, properties: properties,
                customMetadata: customMetadata))
    }

    /// The same, for content streamed from elsewhere (known by its size and MD5).
    func metadata(bucket: String, generation: Int64, now: Timestamp, size: Int64, md5Hash: String) -> ObjectMetadata {
        archived(
            ObjectMetadata.newObject(
                bucket: bucket, name: name, size: size, md5Hash: md5Hash, generation: generation, now: now,
                properties: properties, customMetadata: customMetadata))
    }

    private func archived(_ new: ObjectMetadata) -> ObjectMetadata {
        var metadata = new
        if let metageneration { metadata.metageneration = metageneration }
        if let timeCreated { metadata.timeCreated = timeCreated }
        metadata.updated = updated ?? metadata.timeCreated
        if !cloudStorage.isEmpty {
            metadata.cloudStorage = cloudStorage
            // Computed from the bucket's policy where the object is read, never kept with it.
            metadata.cloudStorage.retentionExpirationTime = nil
        }
        metadata.timeDeleted = timeDeleted
        return metadata
    }
}

/// A whole bucket as readable JSON, so samples stay reviewable in git.
///
/// ```
/// {"format":"storesh-bucket","version":1,"bucket":"teaching","objects":[
/// {"name":"correctPrefix/happyItem","contentType":"text/plain","text":"happy\n"},
/// {"name":"images/forest.jpg","contentType":"image/jpeg","customMetadata":{"activity":"Hiking"},"base64":"/9j/4A…"}
/// ]}
/// ```
/// One object per line keeps diffs readable. Content is `text` when it is UTF-8 text, else `base64`.
/// `generation`, `metageneration`, `timeCreated`, `updated`, `size` and `md5Hash` are optional: an
/// export writes them and an import keeps them (checking `size` and `md5Hash` against the content).
///
/// Version 2 adds what Cloud Storage keeps beyond that: the bucket's `settings` (its resource as the JSON API
/// writes it, without what the service sets itself, and its `iamPolicy`), each object's own fields as its resource
/// names them (`temporaryHold`, `retention`, `customTime`, `storageClass`, `contexts`…), and the generations that
/// are not live: a noncurrent one has `timeDeleted`, a soft-deleted one `softDeleteTime` and `hardDeleteTime`, and
/// both have their `generation`. An export writes version 2; an import reads both.
public enum BucketArchive {
    public static let format = "storesh-bucket"
    public static let version = 2

    public struct Contents: Sendable {
        public var bucket: String?
        /// The bucket's settings, as members of its JSON API resource (and `iamPolicy`); nil when the archive has
        /// none (version 1, or a bucket file that never stored settings).
        public var settings: [(String, JSONValue)]?
        public var objects: [ArchivedObject]

        /// `settings` laid over a bucket's (`current`: what it has, or a new bucket's), as a bucket update that
        /// replaces them all would lay them; the bucket's own history (made, changed, made by whom) is kept.
        public func settings(over current: BucketSettings, now: Timestamp) throws(StorageError) -> BucketSettings? {
            guard let settings else { return nil }
            var result = current
            try BucketArchive.apply(settings, to: &result, now: now, place: "the archive's \"settings\"")
            return result
        }
    }

    static let topLevelFields = ["format", "version", "bucket", "settings", "objects"]

    static let objectFields: Set<String> = Set(
        [
            "name", "text", "base64", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage",
            "contentType", "customMetadata", "generation", "metageneration", "timeCreated", "updated", "size",
            "md5Hash",
            "timeDeleted",
        ] + CloudStorageFieldsDocument.memberNames)

    /// The members of a bucket's resource an archive leaves out: the service's own (its name is the archive's
    /// `bucket`; its times and metageneration are the importing bucket's).
    static let unarchivedSettings: Set<String> = [
        "kind", "id", "selfLink", "projectNumber", "name", "etag", "timeCreated", "updated", "metageneration",
        "locationType",
        "generation", "softDeleteTime", "hardDeleteTime",
    ]

    /// The archive's members of a bucket's settings, in the order its resource answers them; access control lists
    /// and the IAM policy where the bucket has its own (not a new bucket's, which an import gives anyway).
    static func archivedSettings(_ settings: BucketSettings, bucket: String) -> [(String, JSONValue)] {
        guard case .object(let members) = BucketResource.document(settings, name: bucket, baseURL: "") else {
            return []
        }
        var archived = members.filter { !unarchivedSettings.contains($0.0) }
        if let acl = settings.acl { archived.append(("acl", acl)) }
        if let acl = settings.defaultObjectAcl { archived.append(("defaultObjectAcl", acl)) }
        if let policy = settings.iamPolicy { archived.append(("iamPolicy", policy)) }
        return archived
    }

    /// Lays an archive's settings over `settings` as a bucket update replacing them all (`BucketResource.apply`),
    /// `iamPolicy` aside; a problem names `place`.
    static func apply(
        _ members: [(String, JSONValue)], to settings: inout BucketSettings, now: Timestamp, place: String
    ) throws(StorageError) {
        var fields = members
        var policy: JSONValue?
        if let index = fields.firstIndex(where: { $0.0 == "iamPolicy" }) {
            policy = fields.remove(at: index).1
            guard case .object? = policy else { throw .invalidArgument("\(place): \"iamPolicy\" must be an object.") }
        }
        let kept = settings
        do {
            try BucketResource.apply(
                fields, to: &settings, replacing: BucketSettings(madeAt: now), creating: true, now: now)
        } catch {
            throw .invalidArgument("\(place): \(error.message)")
        }
        // What the service sets itself, an archive restores: when each policy took effect, and a policy's lock.
        func member(_ path: String...) -> JSONValue? {
            var value: JSONValue? = .object(members)
            for name in path { value = value?[member: name] }
            return value
        }
        func time(_ value: JSONValue?, _ name: String) throws(StorageError) -> Timestamp? {
            guard let value else { return nil }
            guard let text = value.string, let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument(
                    "\(place): \"\(name)\" must be an RFC 3339 time such as 2026-11-21T09:30:00.000Z.")
            }
            return time
        }
        if settings.softDeleteSeconds != nil,
            let effective = try time(member("softDeletePolicy", "effectiveTime"), "softDeletePolicy.effectiveTime")
        {
            settings.softDeleteEffectiveTime = effective
        }
        if settings.retentionPeriod != nil {
            if let effective = try time(member("retentionPolicy", "effectiveTime"), "retentionPolicy.effectiveTime") {
                settings.retentionEffectiveTime = effective
            }
            switch member("retentionPolicy", "isLocked") {
            case nil, .bool(false)?: break
            case .bool(true)?: settings.retentionLocked = true
            default: throw .invalidArgument("\(place): \"retentionPolicy.isLocked\" must be true or false.")
            }
        }
        (settings.iamPolicy, settings.iamPolicyVersion) = (kept.iamPolicy, kept.iamPolicyVersion)
        if policy != kept.iamPolicy {
            settings.iamPolicy = policy
            settings.iamPolicyVersion = policy == nil ? nil : (kept.iamPolicyVersion ?? 0) + 1
        }
        // A change of the settings moves the bucket's metageneration on, as an update does.
        (settings.timeCreated, settings.updated, settings.metageneration) = (
            kept.timeCreated, kept.updated, kept.metageneration
        )
        if settings != kept {
            settings.metageneration += 1
            settings.updated = now
        }
    }

    /// Reads and checks an archive. Every problem names the object (by position and name) and the field.
    public static func parse(_ data: Data, source: String) throws(StorageError) -> Contents {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw .invalidArgument("\(source): \(syntaxError(in: data))")
            }
            throw .invalidArgument("\(source): \(describe(error))")
        } catch {
            throw .invalidArgument("\(source): not valid JSON: \(error)")
        }
        guard document.format == format else {
            throw .invalidArgument("\(source): \"format\" must be \"\(format)\"; this is not a storesh bucket archive.")
        }
        guard let archiveVersion = document.version, archiveVersion <= version else {
            throw .invalidArgument(
                "\(source): \"version\" must be a whole number up to \(version) (an archive of a newer storesh is read by that storesh)."
            )
        }
        if let key = document.unknownKeys.first {
            throw .invalidArgument("\(source): \(unknownField(key, at: " at the top level", among: topLevelFields))")
        }
        var settings: [(String, JSONValue)]?
        if let given = document.settings {
            guard case .object(let members) = given else {
                throw .invalidArgument("\(source): \"settings\" must be an object.")
            }
            // Checked now, over a new bucket's settings: nothing is written from an archive with a bad setting.
            var checked = BucketSettings(madeAt: Timestamp(microseconds: 0))
            try apply(members, to: &checked, now: Timestamp(microseconds: 0), place: "\(source): \"settings\"")
            settings = members
        }
        guard let entries = document.objects else {
            throw .invalidArgument("\(source): \"objects\" must be a list.")
        }
        var objects: [ArchivedObject] = []
        objects.reserveCapacity(entries.count)
        var seen = Set<ObjectName>()
        seen.reserveCapacity(entries.count)
        // A generation that is not live, by its kind, name and number.
        var seenGenerations = Set<String>()
        for (index, entry) in entries.enumerated() {
            let object = try entry.archivedObject(where: "\(source): object #\(index + 1)")
            switch object.kind {
            case .live:
                guard seen.insert(object.name).inserted else {
                    throw .invalidArgument("\(source): object #\(index + 1): \"\(object.name)\" appears twice.")
                }
            case .noncurrent, .softDeleted:
                let which = object.kind == .noncurrent ? "noncurrent" : "soft-deleted"
                guard seenGenerations.insert("\(which) \(object.generation ?? 0) \(object.name.rawValue)").inserted
                else {
                    throw .invalidArgument(
                        "\(source): object #\(index + 1): the \(which) generation \(object.generation ?? 0) of \"\(object.name)\" appears twice."
                    )
                }
            }
            objects.append(object)
        }
        return Contents(bucket: document.bucket, settings: settings, objects: objects)
    }

    /// The archive document as decoded, before its rules are checked.
    struct Document: Decodable {
        var format: String?
        var version: Int?
        var bucket: String?
        var settings: JSONValue?
        var objects: [Entry]?
        var unknownKeys: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: JSONMemberKey.self)
            format = try? container.decodeIfPresent(String.self, forKey: JSONMemberKey("format"))
            version = try? container.decodeIfPresent(Int.self, forKey: JSONMemberKey("version"))
            bucket = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("bucket"))
            settings = try container.decodeIfPresent(JSONValue.self, forKey: JSONMemberKey("settings"))
            if container.contains(JSONMemberKey("objects")),
                (try? container.decodeNil(forKey: JSONMemberKey("objects"))) == false,
                (try? container.nestedUnkeyedContainer(forKey: JSONMemberKey("objects"))) != nil
            {
                objects = try container.decode([Entry].self, forKey: JSONMemberKey("objects"))
            }
            unknownKeys = container.allKeys.map(\.stringValue).filter { !topLevelFields.contains($0) }.sorted()
        }
    }

    /// One object as decoded, before its rules are checked.
    struct Entry: Decodable {
        var name: String?
        var text: String?
        var base64: String?
        var properties: [WritableProperty: String] = [:]
        var customMetadata: CustomMetadata?
        var generation: Int64?
        var metageneration: Int64?
        var size: Int64?
        var timeCreated: String?
        var updated: String?
        var md5Hash: String?
        var timeDeleted: String?
        /// Cloud Storage's own fields, read as an object resource's (rule M9).
        var cloudStorage: CloudStorageFieldsDocument
        var unknownKeys: [String] = []

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: JSONMemberKey.self)
            name = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("name"))
            text = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("text"))
            base64 = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("base64"))
            for property in WritableProperty.allCases {
                if let value = try container.decodeIfPresent(String.self, forKey: JSONMemberKey(property.rawValue)) {
                    properties[property] = value
                }
            }
            customMetadata = try container.decodeIfPresent(
                CustomMetadata.self, forKey: JSONMemberKey("customMetadata"))
            generation = try Self.wholeNumber(container, "generation")
            metageneration = try Self.wholeNumber(container, "metageneration")
            size = try Self.wholeNumber(container, "size")
            timeCreated = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("timeCreated"))
            updated = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("updated"))
            md5Hash = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("md5Hash"))
            timeDeleted = try container.decodeIfPresent(String.self, forKey: JSONMemberKey("timeDeleted"))
            cloudStorage = try CloudStorageFieldsDocument(from: decoder)
            unknownKeys = container.allKeys.map(\.stringValue).filter { !objectFields.contains($0) }.sorted()
        }

        /// A whole number written as a number or as a string of one (generations are strings in the API).
        static func wholeNumber(_ container: KeyedDecodingContainer<JSONMemberKey>, _ key: String) throws -> Int64? {
            guard container.contains(JSONMemberKey(key)) else { return nil }
            if let text = try? container.decode(String.self, forKey: JSONMemberKey(key)), let number = Int64(text) {
                return number
            }
            if let number = try? container.decode(Int64.self, forKey: JSONMemberKey(key)) { return number }
            throw DecodingError.typeMismatch(
                Int64.self,
                DecodingError.Context(
                    codingPath: container.codingPath + [JSONMemberKey(key)], debugDescription: "must be a whole number")
            )
        }

        func archivedObject(where place: String) throws(StorageError) -> ArchivedObject {
            guard let rawName = name else { throw .invalidArgument("\(place): \"name\" is missing.") }
            let place = "\(place) (\(MessageText.oneLine(rawName)))"
            if let key = unknownKeys.first {
                throw .invalidArgument("\(place): \(unknownField(key, at: "", among: objectFields.sorted()))")
            }
            func timestamp(_ text: String?, _ key: String) throws(StorageError) -> Timestamp? {
                guard let text else { return nil }
                guard let time = Timestamp(rfc3339: text) else {
                    throw .invalidArgument(
                        "\(place): \"\(key)\" must be an RFC 3339 date such as 2026-11-21T09:30:00.000Z.")
                }
                return time
            }
            let objectName: ObjectName
            do {
                objectName = try ObjectName(rawName)
            } catch {
                throw .invalidArgument("\(place): \(error.message)")
            }
            let content: Data
            switch (text, base64) {
            case (let text?, nil): content = Data(text.utf8)
            case (nil, let base64?):
                guard let decoded = Data(base64Encoded: base64) else {
                    throw .invalidArgument("\(place): \"base64\" is not valid base64.")
                }
                content = decoded
            case (nil, nil): content = Data()
            case (_?, _?): throw .invalidArgument("\(place): give the content as \"text\" or \"base64\", not both.")
            }
            let custom = customMetadata ?? [:]
            do { try CustomMetadataLimits.validate(custom) } catch {
                throw .invalidArgument("\(place): \(error.message)")
            }
            if let size, size != content.count {
                throw .invalidArgument("\(place): \"size\" is \(size) but the content has \(content.count) bytes.")
            }
            if let md5Hash {
                let actual = ContentHash.md5Base64(content)
                if md5Hash != actual {
                    throw StorageError(
                        .nonMatchingChecksum, "\(place): \"md5Hash\" is \(md5Hash) but the content's MD5 is \(actual).")
                }
            }
            if let metageneration, metageneration < 1 {
                throw .invalidArgument("\(place): \"metageneration\" starts at 1.")
            }
            if let generation, generation < 0 {
                throw .invalidArgument("\(place): \"generation\" must not be negative.")
            }
            var object = ArchivedObject(
                name: objectName, content: content, properties: properties, customMetadata: custom,
                generation: generation, metageneration: metageneration,
                timeCreated: try timestamp(timeCreated, "timeCreated"), updated: try timestamp(updated, "updated"))
            do {
                object.cloudStorage = try cloudStorage.checkedFields()
            } catch {
                throw .invalidArgument("\(place): \(error.message)")
            }
            object.timeDeleted = try timestamp(timeDeleted, "timeDeleted")
            let fields = object.cloudStorage
            if (fields.softDeleteTime == nil) != (fields.hardDeleteTime == nil) {
                throw .invalidArgument(
                    "\(place): a soft-deleted generation has both \"softDeleteTime\" and \"hardDeleteTime\".")
            }
            if object.timeDeleted != nil, fields.softDeleteTime != nil {
                throw .invalidArgument(
                    "\(place): a generation is noncurrent (\"timeDeleted\") or soft-deleted (\"softDeleteTime\"), not both."
                )
            }
            if object.kind != .live, generation == nil {
                throw .invalidArgument(
                    "\(place): a \(object.kind == .noncurrent ? "noncurrent" : "soft-deleted") generation needs its \"generation\"."
                )
            }
            return object
        }
    }

    /// `unknown field "X"`, with the nearest known field when there is one near enough.
    static func unknownField(_ key: String, at place: String, among known: [String]) -> String {
        var message = "unknown field \"\(key)\"\(place)"
        if let near = Suggestion.nearest(to: key, among: known) { message += "; did you mean \"\(near)\"?" }
        return message
    }

    /// Where the JSON syntax breaks, as line and column. JSONDecoder says only that the data is not valid
    /// JSON; JSONSerialization gives the character offset, read here only once parsing has already failed.
    static func syntaxError(in data: Data) -> String {
        let detail: String
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return "not valid JSON."
        } catch {
            detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? ""
        }
        if detail.contains("Unexpected end of file") || data.isEmpty {
            return "not valid JSON: it ends too early (cut short, or a bracket or quote is not closed)."
        }
        guard let range = detail.range(of: "around character "),
            let offset = Int(detail[range.upperBound...].prefix { $0.isNumber })
        else { return "not valid JSON: \(detail)" }
        // The offset counts bytes of UTF-8; lines and columns are counted in characters as an editor shows them.
        let before = data.prefix(offset)
        let lines = before.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let column = String(decoding: lines.last ?? Data(), as: UTF8.self).count + 1
        return "not valid JSON at line \(lines.count), column \(column)."
    }

    /// A decoding failure as a place in the archive and what is wrong there.
    private static func describe(_ error: DecodingError) -> String {
        func place(_ path: [any CodingKey]) -> String {
            var words: [String] = []
            var index = 0
            while index < path.count {
                let key = path[index]
                if key.stringValue == "objects", index + 1 < path.count, let position = path[index + 1].intValue {
                    words.append("object #\(position + 1)")
                    index += 2
                    continue
                }
                words.append(key.intValue.map { "item #\($0 + 1)" } ?? "\"\(key.stringValue)\"")
                index += 1
            }
            return words.isEmpty ? "" : words.joined(separator: ", ") + ": "
        }
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return "not valid JSON: \(detail ?? context.debugDescription)"
            }
            return place(context.codingPath) + context.debugDescription
        case .typeMismatch(let type, let context):
            let expected =
                type == String.self
                ? "must be a string"
                : type == Int64.self
                    ? "must be a whole number (or a string of one)"
                    : type is [String: String].Type || type is [String: Any].Type
                        ? "must be an object of strings"
                        : context.debugDescription
            if context.codingPath.isEmpty { return "expected a JSON object with \"format\": \"\(format)\"." }
            return place(context.codingPath) + expected
        case .valueNotFound(_, let context):
            return place(context.codingPath) + "must not be null"
        case .keyNotFound(let key, let context):
            return place(context.codingPath) + "\"\(key.stringValue)\" is missing"
        @unknown default:
            return "\(error)"
        }
    }

    /// What an export wrote: how many objects, and how many noncurrent and soft-deleted generations.
    public struct Exported: Sendable, Equatable {
        public var objects = 0
        public var noncurrent = 0
        public var softDeleted = 0

        public init() {}

        /// "3 objects", or "3 objects and 2 noncurrent generations" and so on.
        public var described: String {
            var parts = [MessageText.counted(objects, "object")]
            if noncurrent > 0 { parts.append(MessageText.counted(noncurrent, "noncurrent generation")) }
            if softDeleted > 0 { parts.append(MessageText.counted(softDeleted, "soft-deleted generation")) }
            return MessageText.listed(parts)
        }
    }

    /// Writes the whole bucket as an archive, one object per line: its settings, the live objects in name order, then
    /// its noncurrent and soft-deleted generations by name and generation, all read in one transaction.
    @discardableResult
    public static func export(
        _ bucket: LocalBucket, counting: (any WorkCounter)? = nil, to write: (String) throws -> Void
    ) throws -> Exported {
        var exported = Exported()
        defer { counting?.end() }
        var first = true
        try bucket.forEachArchivedObject { settings, total in
            counting?.begin("exporting", total: total)
            var header: [(String, JSONValue)] = [
                ("format", .string(format)), ("version", .integer(Int64(version))), ("bucket", .string(bucket.name)),
            ]
            if let settings { header.append(("settings", .object(archivedSettings(settings, bucket: bucket.name)))) }
            var opening = JSONValue.object(header).serialized
            opening.removeLast()  // its closing brace: the objects follow
            try write(opening + ",\"objects\":[")
        } _: { metadata, content in
            try write((first ? "\n" : ",\n") + line(for: metadata, content: content))
            first = false
            switch (metadata.timeDeleted, metadata.cloudStorage.softDeleteTime) {
            case (nil, nil): exported.objects += 1
            case (_?, _): exported.noncurrent += 1
            case (nil, _?): exported.softDeleted += 1
            }
            counting?.advance()
        }
        try write("\n]}\n")
        return exported
    }

    /// One object's line: name first, then the writable properties, the read-only ones, and the content.
    static func line(for metadata: ObjectMetadata, content: Data) -> String {
        var members: [(String, JSONValue)] = [("name", .string(metadata.fullPath))]
        for property in WritableProperty.allCases {
            if let value = metadata[property] { members.append((property.rawValue, .string(value))) }
        }
        if !metadata.customMetadata.isEmpty {
            members.append(
                (
                    "customMetadata",
                    .object(metadata.customMetadata.sortedByKeyBytes.map { ($0.key, .string($0.value)) })
                ))
        }
        members += [
            ("generation", .string(String(metadata.generation))),
            ("metageneration", .string(String(metadata.metageneration))),
            ("timeCreated", .string(metadata.timeCreated.rfc3339)),
            ("updated", .string(metadata.updated.rfc3339)),
            ("size", .integer(metadata.size)),
            ("md5Hash", .string(metadata.md5Hash)),
        ]
        // Cloud Storage's own fields as the object's resource names them (rule M9), and when a generation that is not
        // live stopped being so (B5, B6); not the expiration a bucket's retention policy gives, which is computed.
        var fields = metadata.cloudStorage
        fields.retentionExpirationTime = nil
        members += fields.documentMembers
        if let timeDeleted = metadata.timeDeleted {
            members.append(("timeDeleted", .string(timeDeleted.rfc3339Microseconds)))
        }
        if let text = readableText(content) {
            members.append(("text", .string(text)))
        } else {
            members.append(("base64", .string(content.base64EncodedString())))
        }
        return JSONValue.object(members).serialized
    }

    /// The content as text, when it is UTF-8 without control characters other than tab, CR and LF.
    static func readableText(_ content: Data) -> String? {
        guard let text = String(data: content, encoding: .utf8) else { return nil }
        let isReadable = text.unicodeScalars.allSatisfy { scalar in
            scalar == "\n" || scalar == "\t" || scalar == "\r" || (scalar.value >= 0x20 && scalar.value != 0x7F)
        }
        return isReadable ? text : nil
    }
}
