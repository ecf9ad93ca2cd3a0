import Foundation
import StoreshCore

/// An object resource as the JSON API writes it (`storage#object`; `ObjectResource.cloudStorage` writes storesh's),
/// and as the Firebase v0 API writes its own (the same members, with `downloadTokens`): numbers as strings (or
/// numbers), unset members absent. The one place both are read back into `ObjectMetadata`.
package struct CloudStorageObjectDocument: Decodable, Sendable {
    package var name: String?
    package var bucket: String?
    package var generation: JSONInteger?
    package var metageneration: JSONInteger?
    package var size: JSONInteger?
    package var timeCreated: String?
    package var updated: String?
    package var timeDeleted: String?
    package var md5Hash: String?
    package var crc32c: String?
    /// M1's writable properties, by name.
    package var properties: [WritableProperty: String] = [:]
    /// The custom metadata; a member that is not a string is not one (none of these APIs writes such).
    package var metadata: [String: JSONValue]?
    /// The Firebase v0 API's download tokens (rule G7), comma-separated.
    package var downloadTokens: String?
    /// Cloud Storage's own fields (rule M9), read from the same members.
    package var fields: CloudStorageFieldsDocument

    private enum Member: String, CodingKey {
        case name, bucket, generation, metageneration, size, timeCreated, updated, timeDeleted, md5Hash, crc32c,
            metadata, downloadTokens
    }

    package init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: Member.self)
        name = try members.decodeIfPresent(String.self, forKey: .name)
        bucket = try members.decodeIfPresent(String.self, forKey: .bucket)
        generation = try members.decodeIfPresent(JSONInteger.self, forKey: .generation)
        metageneration = try members.decodeIfPresent(JSONInteger.self, forKey: .metageneration)
        size = try members.decodeIfPresent(JSONInteger.self, forKey: .size)
        timeCreated = try members.decodeIfPresent(String.self, forKey: .timeCreated)
        updated = try members.decodeIfPresent(String.self, forKey: .updated)
        timeDeleted = try members.decodeIfPresent(String.self, forKey: .timeDeleted)
        md5Hash = try members.decodeIfPresent(String.self, forKey: .md5Hash)
        crc32c = try members.decodeIfPresent(String.self, forKey: .crc32c)
        metadata = try members.decodeIfPresent([String: JSONValue].self, forKey: .metadata)
        downloadTokens = try members.decodeIfPresent(String.self, forKey: .downloadTokens)
        let properties = try decoder.container(keyedBy: JSONMemberKey.self)
        for property in WritableProperty.allCases {
            if let value = try properties.decodeIfPresent(
                String.self, forKey: JSONMemberKey(stringValue: property.rawValue))
            {
                self.properties[property] = value
            }
        }
        fields = try CloudStorageFieldsDocument(from: decoder)
    }

    /// A document of an answer: anything else is the service misbehaving, said plainly (`what`: "a listing").
    package static func decode(_ data: Data, what: String) throws -> Self {
        try decodeAnswer(Self.self, data, what: what)
    }

    /// The object it describes, in `bucket` unless it names its own. Its generation, metageneration, size and times
    /// must be there and valid: without them it describes no object.
    package func metadata(bucket fallback: String) throws -> ObjectMetadata {
        guard let name else { throw StorageError.internalError("The service gave an object without a name.") }
        func required<T>(_ value: T?, _ member: String) throws -> T {
            guard let value else {
                throw StorageError.internalError("The service gave object \(name) without a valid \(member).")
            }
            return value
        }
        func time(_ text: String?, _ member: String) throws -> Timestamp {
            try required(text.flatMap(Timestamp.init(rfc3339:)), member)
        }
        var object = ObjectMetadata(
            bucket: bucket ?? fallback, fullPath: name, generation: try required(generation, "generation").value,
            metageneration: try required(metageneration, "metageneration").value,
            size: try required(size, "size").value,
            timeCreated: try time(timeCreated, "timeCreated"), updated: try time(updated, "updated"),
            md5Hash: md5Hash ?? "",
            crc32c: crc32c)
        if timeDeleted != nil { object.timeDeleted = try time(timeDeleted, "timeDeleted") }
        guard let cloudStorage = fields.fields else {
            throw StorageError.internalError(
                "The service gave object \(name) with Cloud Storage fields that cannot be read.")
        }
        object.cloudStorage = cloudStorage
        for (property, value) in properties { object[property] = value }
        object.customMetadata = CustomMetadata(
            (metadata ?? [:]).compactMap { key, value in
                if case .string(let text) = value { (key, text) } else { nil }
            })
        return object
    }
}

/// objects.list's answer (`storage#objects`; `CloudStorageJSON.listDocument` writes storesh's).
package struct CloudStorageObjectListDocument: Decodable, Sendable {
    package var items: [CloudStorageObjectDocument]?
    package var prefixes: [String]?
    package var nextPageToken: String?
}

/// objects.rewrite's answer (`storage#rewriteResponse`): done with the new object, or a token to continue with.
package struct CloudStorageRewriteDocument: Decodable, Sendable {
    package var done: Bool?
    package var rewriteToken: String?
    package var resource: CloudStorageObjectDocument?

    package static func decode(_ data: Data, what: String) throws -> Self {
        try decodeAnswer(Self.self, data, what: what)
    }
}

/// A document of an answer decoded as `type`; anything else is the service misbehaving, said plainly.
func decodeAnswer<T: Decodable>(_ type: T.Type, _ data: Data, what: String) throws -> T {
    do {
        return try JSONDecoder().decode(type, from: data)
    } catch let error as DecodingError {
        throw StorageError.internalError(
            "The service answered \(what) with a document storesh cannot read: \(DecodingErrors.summary(error)).")
    } catch {
        throw StorageError.internalError("The service answered \(what) with something that is not a JSON object.")
    }
}

/// A decoding error in a few words: which member, and what was wrong.
enum DecodingErrors {
    static func summary(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let members = context.codingPath.map(\.stringValue).joined(separator: ".")
            return members.isEmpty ? "the document" : members
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)) is not what it must be (\(context.debugDescription))"
        case .keyNotFound(let key, let context):
            return "\(path(context)) has no \(key.stringValue)"
        @unknown default:
            return "\(error)"
        }
    }
}
