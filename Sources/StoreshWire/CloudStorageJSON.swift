import Foundation
import StoreshCore

/// The Cloud Storage JSON API's documents as storesh reads and writes them (rule G1): object resources into
/// `ObjectMetadata`, updates into PATCH bodies, error bodies into storage errors.
package enum CloudStorageJSON {
    /// An object resource of an answer (`storage#object`), as `CloudStorageObjectDocument` reads it (`what`: "an
    /// update").
    package static func metadata(_ data: Data, bucket: String, what: String) throws -> ObjectMetadata {
        try CloudStorageObjectDocument.decode(data, what: what).metadata(bucket: bucket)
    }

    /// objects.list's answer (`storage#objects`), as `storesh serve` writes it: the page's prefixes (each ending in
    /// `/`, as the service writes them), its items as object resources, and the token of the next page.
    package static func listDocument(_ page: StoredListingPage, baseURL: String) -> JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string("storage#objects"))]
        if let token = page.continuation { members.append(("nextPageToken", .string(token))) }
        if !page.prefixes.isEmpty { members.append(("prefixes", .array(page.prefixes.map { .string($0) }))) }
        if !page.items.isEmpty {
            members.append(("items", .array(page.items.map { ObjectResource.cloudStorage($0, baseURL: baseURL) })))
        }
        return .object(members)
    }

    /// A page read back from objects.list's answer (`listDocument` writes it so), as the `gs://` client reads the
    /// service's: absent members are empty, and an empty token is none.
    package static func listPage(_ data: Data, bucket: String) throws -> StoredListingPage {
        let document = try decodeAnswer(CloudStorageObjectListDocument.self, data, what: "a listing")
        return StoredListingPage(
            prefixes: document.prefixes ?? [],
            items: try (document.items ?? []).map { try $0.metadata(bucket: bucket) },
            continuation: document.nextPageToken.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// A PATCH body that makes an object's writable metadata go from `before` to `after`: each changed property
    /// set, or null to delete it; each changed custom key likewise (rules M4–M5). Keys that did not change,
    /// download tokens among them (rule G7), are not sent, so they are kept.
    ///
    /// Of Cloud Storage's own fields (rule M9) a changed custom time is sent as its time, a hold as true or false, a
    /// retention as `{mode, retainUntilTime}` or null, a context as `contexts.custom.KEY` with its value or null.
    package static func patchBody(from before: ObjectMetadata, to after: ObjectMetadata) -> Data {
        var members: [(String, JSONValue)] = []
        var custom: [(String, JSONValue)] = []
        var contexts: [(String, JSONValue)] = []
        for difference in before.differences(to: after) {
            let value: JSONValue = difference.new.map { .string($0) } ?? .null
            if difference.key.hasPrefix("custom.") {
                custom.append((String(difference.key.dropFirst("custom.".count)), value))
                continue
            }
            switch CloudStorageWritableField(key: difference.key) {
            case .temporaryHold?, .eventBasedHold?: members.append((difference.key, .bool(difference.new != nil)))
            case .context(let key)?:
                contexts.append((key, difference.new.map { .object([("value", .string($0))]) } ?? .null))
            case .retention?: members.append((difference.key, after.cloudStorage.retention?.jsonValue ?? .null))
            case .customTime?, .storageClass?, nil: members.append((difference.key, value))
            }
        }
        if !custom.isEmpty { members.append(("metadata", .object(custom))) }
        if !contexts.isEmpty { members.append(("contexts", .object([("custom", .object(contexts))]))) }
        return Data(JSONValue.object(members).serialized.utf8)
    }

    /// The destination resource of a rewrite of an object onto itself that makes `before` `after` (a change of
    /// storage class, rule M9): every writable property, custom key, custom time and context `after` has, and null
    /// for each one `before` has and `after` does not, so that the object is `after` whether the service takes the
    /// resource as the whole of the new object's metadata or lays it over the source's. Holds are not sent: an object
    /// under one is not rewritten.
    package static func rewriteBody(from before: ObjectMetadata, to after: ObjectMetadata) -> Data {
        var members: [(String, JSONValue)] = []
        for property in WritableProperty.allCases {
            if let value = after[property] {
                members.append((property.rawValue, .string(value)))
            } else if before[property] != nil {
                members.append((property.rawValue, .null))
            }
        }
        members.append(("storageClass", .string(after.cloudStorage.effectiveStorageClass)))
        if let time = after.cloudStorage.customTime {
            members.append(("customTime", .string(time.rfc3339Microseconds)))
        }
        var custom = after.customMetadata.sortedByKeyBytes.map { ($0.key, JSONValue.string($0.value)) }
        custom += before.customMetadata.sortedByKeyBytes.filter { after.customMetadata[$0.key] == nil }.map {
            ($0.key, JSONValue.null)
        }
        if !custom.isEmpty { members.append(("metadata", .object(custom))) }
        var contexts = after.cloudStorage.contexts.sortedByKeyBytes.map {
            ($0.key, JSONValue.object([("value", .string($0.value.value))]))
        }
        contexts += before.cloudStorage.contexts.sortedByKeyBytes.filter { after.cloudStorage.contexts[$0.key] == nil }
            .map { ($0.key, JSONValue.null) }
        if !contexts.isEmpty { members.append(("contexts", .object([("custom", .object(contexts))]))) }
        return Data(JSONValue.object(members).serialized.utf8)
    }

    /// The metadata of an upload: the name, the writable properties given, custom metadata and the MD5 to check.
    package static func uploadResource(name: String, options: WriteOptions) -> JSONValue {
        var members: [(String, JSONValue)] = [("name", .string(name))]
        for property in WritableProperty.allCases {
            if let value = options.properties[property] { members.append((property.rawValue, .string(value))) }
        }
        if let md5 = options.expectedMD5 { members.append(("md5Hash", .string(md5))) }
        if !options.customMetadata.isEmpty {
            members.append(
                ("metadata", .object(options.customMetadata.sortedByKeyBytes.map { ($0.key, .string($0.value)) })))
        }
        return .object(members)
    }

    /// A `multipart/related` upload body, as both APIs take it: the resource as JSON, then the content. Answers
    /// the body and its Content-Type header.
    package static func multipartUpload(
        resource: JSONValue, contentType: String, content: Data
    ) -> (body: Data, contentType: String) {
        let boundary = "storesh-\(UUID().uuidString)"
        var body = Data("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8)
        body += Data(resource.serialized.utf8)
        body += Data("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        body += content
        body += Data("\r\n--\(boundary)--\r\n".utf8)
        return (body, "multipart/related; boundary=\(boundary)")
    }

    /// The message of an error body (`{"error":{"code":…,"message":…}}`, or `{"error":"…"}`), when there is one;
    /// a body that is not JSON, its first words.
    package static func errorMessage(_ data: Data) -> String? {
        guard let document = try? JSONDecoder().decode(ErrorDocument.self, from: data) else {
            let text = String(decoding: data.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : text
        }
        return document.message
    }

    private struct ErrorDocument: Decodable {
        var message: String?

        private enum Member: String, CodingKey { case error }
        private struct Body: Decodable { var message: String? }

        init(from decoder: any Decoder) throws {
            let members = try decoder.container(keyedBy: Member.self)
            if let body = try? members.decode(Body.self, forKey: .error) {
                message = body.message
            } else {
                message = try? members.decode(String.self, forKey: .error)
            }
        }
    }
}

extension CloudStorageJSON {
    /// The members of a bucket resource that say how it keeps deleted objects (rules B5, B6), as buckets.get answers
    /// them with `fields=versioning,softDeletePolicy`: a bucket without either answers neither.
    package struct DeletionSettings: Decodable, Sendable {
        struct Versioning: Decodable, Sendable {
            var enabled: Bool?
        }

        struct SoftDeletePolicy: Decodable, Sendable {
            /// Seconds, written as a string of digits (the API's int64), or as a number.
            var retentionDurationSeconds: JSONInteger?
        }

        var versioning: Versioning?
        var softDeletePolicy: SoftDeletePolicy?

        /// Versioning first: while it is on, a delete leaves a noncurrent generation, not a soft-deleted one.
        package var keeping: DeletionKeeping {
            if versioning?.enabled == true { return .noncurrent }
            let seconds = softDeletePolicy?.retentionDurationSeconds?.value ?? 0
            return seconds > 0 ? .softDeleted(seconds: seconds) : .notKept
        }
    }
}
