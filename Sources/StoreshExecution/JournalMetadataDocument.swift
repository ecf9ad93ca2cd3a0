import Foundation
import StoreshCore

// A journal's metadata documents are read with JSONSerialization, as `[String: Any]`, here and only here: read as
// Decodable lines or as JSON values, an undo of 200,000 changes was 1.26-1.37x slower (farm-bench, release build;
// session 64). Everything else storesh reads as JSON goes through Decodable types or `JSONValue`.

extension ObjectMetadata {
    /// The metadata of a metadata document (`jsonDocument`), as JSONSerialization decodes it; nil when a member
    /// is missing or of the wrong type.
    init?(jsonDocument document: [String: Any]) {
        let entityTag = document["etag"] as? String
        func generationNumber(_ key: String) -> Int64? {
            // An S3 object's document has an etag instead of generations.
            guard let text = document[key] as? String else { return entityTag == nil ? nil : 0 }
            return Int64(text)
        }
        guard let bucket = document["bucket"] as? String, let fullPath = document["fullPath"] as? String,
            let generation = generationNumber("generation"), let metageneration = generationNumber("metageneration"),
            let size = (document["size"] as? NSNumber)?.int64Value,
            let timeCreated = (document["timeCreated"] as? String).flatMap({ Timestamp(rfc3339: $0) }),
            let updated = (document["updated"] as? String).flatMap({ Timestamp(rfc3339: $0) }),
            let md5Hash = document["md5Hash"] as? String ?? (entityTag == nil ? nil : "")
        else { return nil }
        self.init(
            bucket: bucket, fullPath: fullPath, generation: generation, metageneration: metageneration, size: size,
            timeCreated: timeCreated, updated: updated, md5Hash: md5Hash, entityTag: entityTag,
            versionID: document["versionId"] as? String)
        for property in WritableProperty.allCases {
            if let value = document[property.rawValue] as? String { self[property] = value }
        }
        var custom: [(String, String)] = []
        for (key, value) in (document["customMetadata"] as? [String: Any]) ?? [:] {
            guard let value = value as? String else { return nil }
            custom.append((key, value))
        }
        customMetadata = CustomMetadata(custom)
        guard let fields = CloudStorageFields(jsonMembers: document) else { return nil }
        cloudStorage = fields
        if let text = document["timeDeleted"] as? String {
            guard let time = Timestamp(rfc3339: text) else { return nil }
            timeDeleted = time
        }
    }
}

extension CloudStorageFields {
    /// The fields of a document as JSONSerialization decodes it (storesh's metadata document in a journal line), read
    /// as `CloudStorageFieldsDocument` reads them; nil when one is malformed.
    init?(jsonMembers resource: [String: Any]) {
        // Only its own members are encoded again to be decoded, and none at all for an object without them (every
        // object written through Firebase): a journal of millions of documents is read at the cost it was before.
        var members: [String: Any] = [:]
        for key in CloudStorageFieldsDocument.memberNames { members[key] = resource[key] }
        guard !members.isEmpty else {
            self.init()
            return
        }
        guard JSONSerialization.isValidJSONObject(members),
            let data = try? JSONSerialization.data(withJSONObject: members),
            let fields = (try? JSONDecoder().decode(CloudStorageFieldsDocument.self, from: data))?.fields
        else { return nil }
        self = fields
    }
}
