import Foundation
import StoreshCore

/// An object resource as the JSON API writes it (`storage#object`; `ObjectResource.cloudStorage` writes storesh's),
/// and as the Firebase v0 API writes its own (the same members, with `downloadTokens`): numbers as strings (or
/// numbers), unset members absent. The one place both are read back into `ObjectMetadata`.
public struct CloudStorageObjectDocument: Decodable, Sendable {
    public var name: String?
    public var bucket: String?
    public var generation: JSONInteger?
    public var metageneration: JSONInteger?
    public var size: JSONInteger?
    public var timeCreated: String?
    public var updated: String?
    public var timeDeleted: String?
    public var md5Hash: String?
    public var crc32c: String?
    /// M1's writable properties, by name.
    public var properties: [WritableProperty: String] = [:]
    /// The custom metadata; a member that is not a string is not one (none of these APIs writes such).
    public var metadata: [String: JSONValue]?
    /// The Firebase v0 API's download tokens (rule G7), comma-separated.
    public var downloadTokens: String?
    /// Cloud Storage's own fields (rule M9), read from the same members.
    public var fields: CloudStorageFieldsDocument

    private enum Member: String, CodingKey {
        case name, bucket, generation, metageneration, size, timeCreated, updated, timeDeleted, md5Hash, crc32c,
            metadata, downloadTokens
    }

    public init(from decoder: any Decoder) throws {
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
    public static func decode(_ data: Data, what: String) throws -> Self {
        try decodeAnswer(Self.self, data, what: what)
    }

    /// The object it describes, in `bucket` unless it names its own. Its generation, metageneration, size and times
    /// must be there and valid: without them it describes no object.
    public func metadata(bucket fallback: String) throws -> ObjectMetadata {
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
        for (key, value) in metadata ?? [:] {
            if case .string(let text) = value { object.customMetadata[key] = text }
        }
        return object
    }
}

/// objects.list's answer (`storage#objects`; `CloudStorageJSON.listDocument` writes storesh's).
public struct CloudStorageObjectListDocument: Decodable, Sendable {
    public var items: [CloudStorageObjectDocument]?
    public var prefixes: [String]?
    public var nextPageToken: String?
}

/// objects.rewrite's answer (`storage#rewriteResponse`): done with the new object, or a token to continue with.
public struct CloudStorageRewriteDocument: Decodable, Sendable {
    public var done: Bool?
    public var rewriteToken: String?
    public var resource: CloudStorageObjectDocument?

    public static func decode(_ data: Data, what: String) throws -> Self {
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
