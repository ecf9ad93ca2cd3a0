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
        var metadata = ObjectMetadata.newObject(
            bucket: bucket, name: name, content: content, generation: generation, now: now, properties: properties,
            customMetadata: customMetadata)
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
        let document: Any
        do {
            document = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .invalidArgument("\(source): not valid JSON: \(Self.describe(error))")
        }
        guard let root = document as? [String: Any] else {
            throw .invalidArgument("\(source): expected a JSON object with \"format\": \"\(format)\".")
        }
        guard root["format"] as? String == format else {
            throw .invalidArgument("\(source): \"format\" must be \"\(format)\"; this is not a storesh bucket archive.")
        }
        guard let archiveVersion = root["version"] as? Int, archiveVersion <= version else {
            throw .invalidArgument("\(source): \"version\" must be a whole number up to \(version).")
        }
        for key in root.keys where !["format", "version", "bucket", "objects"].contains(key) {
            throw .invalidArgument("\(source): unknown field \"\(key)\" at the top level.")
        }
        let bucket = root["bucket"] as? String
        guard let entries = root["objects"] as? [Any] else {
            throw .invalidArgument("\(source): \"objects\" must be a list.")
        }
        var objects: [ArchivedObject] = []
        objects.reserveCapacity(entries.count)
        var seen = Set<ObjectName>()
        for (index, entry) in entries.enumerated() {
            let object = try parseObject(entry, where: "\(source): object #\(index + 1)")
            guard seen.insert(object.name).inserted else {
                throw .invalidArgument("\(source): object #\(index + 1): \"\(object.name)\" appears twice.")
            }
            objects.append(object)
        }
        return Contents(bucket: bucket, objects: objects)
    }

    private static func parseObject(_ entry: Any, where place: String) throws(StorageError) -> ArchivedObject {
        guard let fields = entry as? [String: Any] else { throw .invalidArgument("\(place): expected a JSON object.") }
        guard let rawName = fields["name"] as? String else {
            throw .invalidArgument("\(place): \"name\" is missing or not a string.")
        }
        let place = "\(place) (\(rawName))"
        for key in fields.keys.sorted() where !objectFields.contains(key) {
            var message = "\(place): unknown field \"\(key)\""
            if let near = Suggestion.nearest(to: key, among: objectFields.sorted()) { message += "; did you mean \"\(near)\"?" }
            throw .invalidArgument(message)
        }
        func string(_ key: String) throws(StorageError) -> String? {
            guard let value = fields[key] else { return nil }
            guard let text = value as? String else { throw .invalidArgument("\(place): \"\(key)\" must be a string.") }
            return text
        }
        func integer(_ key: String) throws(StorageError) -> Int64? {
            guard let value = fields[key] else { return nil }
            let number: Int64?
            if let text = value as? String { number = Int64(text) } else { number = (value as? NSNumber).flatMap { Int64(exactly: $0.doubleValue) } }
            guard let number, number >= 0 else {
                throw .invalidArgument("\(place): \"\(key)\" must be a whole number (or a string of one).")
            }
            return number
        }
        func timestamp(_ key: String) throws(StorageError) -> Timestamp? {
            guard let text = try string(key) else { return nil }
            guard let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument("\(place): \"\(key)\" must be an RFC 3339 date such as 2026-11-21T09:30:00.000Z.")
            }
            return time
        }

        let name: ObjectName
        do {
            name = try ObjectName(rawName)
        } catch {
            throw .invalidArgument("\(place): \(error.message)")
        }
        let content: Data
        switch (try string("text"), try string("base64")) {
        case (let text?, nil): content = Data(text.utf8)
        case (nil, let base64?):
            guard let decoded = Data(base64Encoded: base64) else {
                throw .invalidArgument("\(place): \"base64\" is not valid base64.")
            }
            content = decoded
        case (nil, nil): content = Data()
        case (_?, _?): throw .invalidArgument("\(place): give the content as \"text\" or \"base64\", not both.")
        }
        var properties: [WritableProperty: String] = [:]
        for property in WritableProperty.allCases {
            if let value = try string(property.rawValue) { properties[property] = value }
        }
        var custom: [String: String] = [:]
        if let value = fields["customMetadata"] {
            guard let map = value as? [String: Any] else {
                throw .invalidArgument("\(place): \"customMetadata\" must be an object of strings.")
            }
            for (key, item) in map {
                guard let text = item as? String else {
                    throw .invalidArgument("\(place): customMetadata \"\(key)\" must be a string.")
                }
                custom[key] = text
            }
            do { try CustomMetadataLimits.validate(custom) } catch { throw .invalidArgument("\(place): \(error.message)") }
        }
        if let size = try integer("size"), size != content.count {
            throw .invalidArgument("\(place): \"size\" is \(size) but the content has \(content.count) bytes.")
        }
        if let md5 = try string("md5Hash"), md5 != ContentHash.md5Base64(content) {
            throw StorageError(
                .nonMatchingChecksum,
                "\(place): \"md5Hash\" is \(md5) but the content's MD5 is \(ContentHash.md5Base64(content)).")
        }
        let metageneration = try integer("metageneration")
        if let metageneration, metageneration < 1 {
            throw .invalidArgument("\(place): \"metageneration\" starts at 1.")
        }
        return ArchivedObject(
            name: name, content: content, properties: properties, customMetadata: custom,
            generation: try integer("generation"), metageneration: metageneration,
            timeCreated: try timestamp("timeCreated"), updated: try timestamp("updated"))
    }

    private static func describe(_ error: Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
    }

    /// Writes the whole bucket as an archive, one object per line, in name order.
    public static func export(_ bucket: LocalBucket, to write: (String) throws -> Void) throws {
        try write("{\"format\":\(quoted(format)),\"version\":\(version),\"bucket\":\(quoted(bucket.name)),\"objects\":[")
        var first = true
        try bucket.forEachObjectWithContent { metadata, content in
            try write((first ? "\n" : ",\n") + line(for: metadata, content: content))
            first = false
        }
        try write("\n]}\n")
    }

    /// One object's line: name first, then the writable properties, the read-only ones, and the content.
    static func line(for metadata: ObjectMetadata, content: Data) -> String {
        var fields: [(String, String)] = [("name", quoted(metadata.fullPath))]
        for property in WritableProperty.allCases {
            if let value = metadata[property] { fields.append((property.rawValue, quoted(value))) }
        }
        if !metadata.customMetadata.isEmpty {
            let entries = metadata.customMetadata.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { "\(quoted($0.key)):\(quoted($0.value))" }
            fields.append(("customMetadata", "{" + entries.joined(separator: ",") + "}"))
        }
        fields += [
            ("generation", quoted(String(metadata.generation))),
            ("metageneration", quoted(String(metadata.metageneration))),
            ("timeCreated", quoted(metadata.timeCreated.rfc3339)),
            ("updated", quoted(metadata.updated.rfc3339)),
            ("size", String(metadata.size)),
            ("md5Hash", quoted(metadata.md5Hash)),
        ]
        if let text = readableText(content) {
            fields.append(("text", quoted(text)))
        } else {
            fields.append(("base64", quoted(content.base64EncodedString())))
        }
        return "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The content as text, when it is UTF-8 without control characters other than tab, CR and LF.
    static func readableText(_ content: Data) -> String? {
        guard let text = String(data: content, encoding: .utf8) else { return nil }
        let isReadable = text.unicodeScalars.allSatisfy { scalar in
            scalar == "\n" || scalar == "\t" || scalar == "\r" || (scalar.value >= 0x20 && scalar.value != 0x7F)
        }
        return isReadable ? text : nil
    }

    /// A JSON string literal, as JSONSerialization writes it.
    static func quoted(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}
