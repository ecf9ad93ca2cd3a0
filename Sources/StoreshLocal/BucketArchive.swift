import Foundation
import StoreshCore

/// One object as an archive holds it: what a write sets, plus (optionally) the read-only properties
/// of an exported object, which an import keeps so that an export/import round trip is exact.
public struct ArchivedObject: Sendable, Equatable {
    public var name: ObjectName
    public var content: Data
    public var properties: [WritableProperty: String]
    public var customMetadata: [String: String]
    public var generation: Int64?
    public var metageneration: Int64?
    public var timeCreated: Timestamp?
    public var updated: Timestamp?

    public init(
        name: ObjectName, content: Data, properties: [WritableProperty: String] = [:],
        customMetadata: [String: String] = [:], generation: Int64? = nil, metageneration: Int64? = nil,
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
public enum BucketArchive {
    public static let format = "storesh-bucket"
    public static let version = 1

    public struct Contents: Sendable {
        public var bucket: String?
        public var objects: [ArchivedObject]
    }

    static let objectFields: Set<String> = [
        "name", "text", "base64", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage",
        "contentType", "customMetadata", "generation", "metageneration", "timeCreated", "updated", "size", "md5Hash",
    ]

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
            throw .invalidArgument("\(source): \"version\" must be a whole number up to \(version).")
        }
        if let key = document.unknownKeys.first {
            throw .invalidArgument(
                "\(source): \(unknownField(key, at: " at the top level", among: ["format", "version", "bucket", "objects"]))")
        }
        guard let entries = document.objects else {
            throw .invalidArgument("\(source): \"objects\" must be a list.")
        }
        var objects: [ArchivedObject] = []
        objects.reserveCapacity(entries.count)
        var seen = Set<ObjectName>()
        seen.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let object = try entry.archivedObject(where: "\(source): object #\(index + 1)")
            guard seen.insert(object.name).inserted else {
                throw .invalidArgument("\(source): object #\(index + 1): \"\(object.name)\" appears twice.")
            }
            objects.append(object)
        }
        return Contents(bucket: document.bucket, objects: objects)
    }

    /// Any JSON key, for reading objects whose keys are checked rather than assumed.
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The archive document as decoded, before its rules are checked.
    struct Document: Decodable {
        var format: String?
        var version: Int?
        var bucket: String?
        var objects: [Entry]?
        var unknownKeys: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            format = try? container.decodeIfPresent(String.self, forKey: AnyKey("format"))
            version = try? container.decodeIfPresent(Int.self, forKey: AnyKey("version"))
            bucket = try container.decodeIfPresent(String.self, forKey: AnyKey("bucket"))
            if container.contains(AnyKey("objects")),
                (try? container.decodeNil(forKey: AnyKey("objects"))) == false,
                (try? container.nestedUnkeyedContainer(forKey: AnyKey("objects"))) != nil
            {
                objects = try container.decode([Entry].self, forKey: AnyKey("objects"))
            }
            unknownKeys = container.allKeys.map(\.stringValue)
                .filter { !["format", "version", "bucket", "objects"].contains($0) }.sorted()
        }
    }

    /// One object as decoded, before its rules are checked.
    struct Entry: Decodable {
        var name: String?
        var text: String?
        var base64: String?
        var properties: [WritableProperty: String] = [:]
        var customMetadata: [String: String]?
        var generation: Int64?
        var metageneration: Int64?
        var size: Int64?
        var timeCreated: String?
        var updated: String?
        var md5Hash: String?
        var unknownKeys: [String] = []

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            name = try container.decodeIfPresent(String.self, forKey: AnyKey("name"))
            text = try container.decodeIfPresent(String.self, forKey: AnyKey("text"))
            base64 = try container.decodeIfPresent(String.self, forKey: AnyKey("base64"))
            for property in WritableProperty.allCases {
                if let value = try container.decodeIfPresent(String.self, forKey: AnyKey(property.rawValue)) {
                    properties[property] = value
                }
            }
            customMetadata = try container.decodeIfPresent([String: String].self, forKey: AnyKey("customMetadata"))
            generation = try Self.wholeNumber(container, "generation")
            metageneration = try Self.wholeNumber(container, "metageneration")
            size = try Self.wholeNumber(container, "size")
            timeCreated = try container.decodeIfPresent(String.self, forKey: AnyKey("timeCreated"))
            updated = try container.decodeIfPresent(String.self, forKey: AnyKey("updated"))
            md5Hash = try container.decodeIfPresent(String.self, forKey: AnyKey("md5Hash"))
            unknownKeys = container.allKeys.map(\.stringValue).filter { !objectFields.contains($0) }.sorted()
        }

        /// A whole number written as a number or as a string of one (generations are strings in the API).
        static func wholeNumber(_ container: KeyedDecodingContainer<AnyKey>, _ key: String) throws -> Int64? {
            guard container.contains(AnyKey(key)) else { return nil }
            if let text = try? container.decode(String.self, forKey: AnyKey(key)), let number = Int64(text) {
                return number
            }
            if let number = try? container.decode(Int64.self, forKey: AnyKey(key)) { return number }
            throw DecodingError.typeMismatch(
                Int64.self,
                DecodingError.Context(
                    codingPath: container.codingPath + [AnyKey(key)], debugDescription: "must be a whole number"))
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
                    throw .invalidArgument("\(place): \"\(key)\" must be an RFC 3339 date such as 2026-11-21T09:30:00.000Z.")
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
            do { try CustomMetadataLimits.validate(custom) } catch { throw .invalidArgument("\(place): \(error.message)") }
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
            return ArchivedObject(
                name: objectName, content: content, properties: properties, customMetadata: custom,
                generation: generation, metageneration: metageneration,
                timeCreated: try timestamp(timeCreated, "timeCreated"), updated: try timestamp(updated, "updated"))
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
                type == String.self ? "must be a string"
                : type == Int64.self ? "must be a whole number (or a string of one)"
                : type is [String: String].Type || type is [String: Any].Type ? "must be an object of strings"
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

    /// Writes the whole bucket as an archive, one object per line, in name order.
    public static func export(_ bucket: LocalBucket, counting: (any WorkCounter)? = nil, to write: (String) throws -> Void) throws {
        counting?.begin("exporting", total: try? bucket.objectCount())
        defer { counting?.end() }
        try write(
            "{\"format\":\(JSONValue.quoted(format)),\"version\":\(version),\"bucket\":\(JSONValue.quoted(bucket.name)),\"objects\":[")
        var first = true
        try bucket.forEachObjectWithContent { metadata, content in
            try write((first ? "\n" : ",\n") + line(for: metadata, content: content))
            first = false
            counting?.advance()
        }
        try write("\n]}\n")
    }

    /// One object's line: name first, then the writable properties, the read-only ones, and the content.
    static func line(for metadata: ObjectMetadata, content: Data) -> String {
        var members: [(String, JSONValue)] = [("name", .string(metadata.fullPath))]
        for property in WritableProperty.allCases {
            if let value = metadata[property] { members.append((property.rawValue, .string(value))) }
        }
        if !metadata.customMetadata.isEmpty {
            members.append(
                ("customMetadata", .object(metadata.customMetadata.sortedByKeyBytes.map { ($0.key, .string($0.value)) })))
        }
        members += [
            ("generation", .string(String(metadata.generation))),
            ("metageneration", .string(String(metadata.metageneration))),
            ("timeCreated", .string(metadata.timeCreated.rfc3339)),
            ("updated", .string(metadata.updated.rfc3339)),
            ("size", .integer(metadata.size)),
            ("md5Hash", .string(metadata.md5Hash)),
        ]
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
