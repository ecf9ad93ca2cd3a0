import Crypto
import Foundation
import StoreshCore

/// Objects and buckets as the two APIs write them (what `storesh serve` answers) and read back (what the `gs://`
/// clients decode): one place for both directions, tested as a round trip.
package enum ObjectResource {
    /// An object of the Cloud Storage JSON API (`storage#object`): numbers as strings, every name as it is,
    /// custom metadata (download tokens included) under `metadata`, and `crc32c` where the bucket keeps one.
    /// An object written with a customer-supplied key shows its MD5 and CRC32C only to a request that gives the key
    /// (`customerKey`, its SHA-256): the service encrypts them with it.
    package static func cloudStorage(_ object: ObjectMetadata, baseURL: String, customerKey: String? = nil) -> JSONValue
    {
        let showsHashes = object.cloudStorage.customerKeySHA256.map { $0 == customerKey } ?? true
        let encoded = NameBytes.percentEncoded(object.fullPath)
        var members: [(String, JSONValue)] =
            [
                ("kind", .string("storage#object")),
                ("id", .string("\(object.bucket)/\(object.fullPath)/\(object.generation)")),
                ("selfLink", .string("\(baseURL)/storage/v1/b/\(object.bucket)/o/\(encoded)")),
                (
                    "mediaLink",
                    .string(
                        "\(baseURL)/download/storage/v1/b/\(object.bucket)/o/\(encoded)?generation=\(object.generation)&alt=media"
                    )
                ),
            ] + identity(object)
        members += [
            ("storageClass", .string(object.cloudStorage.storageClass ?? CloudStorageFields.defaultStorageClass)),
            ("size", .string(String(object.size))),
        ]
        if showsHashes {
            members.append(("md5Hash", .string(object.md5Hash)))
            if let crc32c = object.crc32c { members.append(("crc32c", .string(crc32c))) }
        }
        for property in [WritableProperty.contentEncoding, .contentDisposition, .contentLanguage, .cacheControl] {
            if let value = object[property] { members.append((property.rawValue, .string(value))) }
        }
        members += [
            ("etag", .string(etag(object))),
            ("timeCreated", .string(object.timeCreated.rfc3339)),
            ("updated", .string(object.updated.rfc3339)),
            (
                "timeStorageClassUpdated",
                .string((object.cloudStorage.timeStorageClassUpdated ?? object.timeCreated).rfc3339)
            ),
        ]
        if let deleted = object.timeDeleted { members.append(("timeDeleted", .string(deleted.rfc3339))) }
        members += object.cloudStorage.jsonMembers
        if !object.customMetadata.isEmpty { members.append(("metadata", customMetadata(object.customMetadata))) }
        return .object(members)
    }

    /// An object of the Firebase v0 API: download tokens as `downloadTokens`, and not among the custom metadata.
    package static func firebase(_ object: ObjectMetadata) -> JSONValue {
        var members = identity(object)
        members += [
            ("timeCreated", .string(object.timeCreated.rfc3339)),
            ("updated", .string(object.updated.rfc3339)),
            ("storageClass", .string("STANDARD")),
            ("size", .string(String(object.size))),
            ("md5Hash", .string(object.md5Hash)),
        ]
        for property in [WritableProperty.contentEncoding, .contentDisposition, .contentLanguage, .cacheControl] {
            if let value = object[property] { members.append((property.rawValue, .string(value))) }
        }
        if let crc32c = object.crc32c { members.append(("crc32c", .string(crc32c))) }
        members.append(("etag", .string(etag(object))))
        members.append(("downloadTokens", .string(object.customMetadata[ObjectMetadata.downloadTokensKey] ?? "")))
        var custom = object.customMetadata
        custom[ObjectMetadata.downloadTokensKey] = nil
        if !custom.isEmpty { members.append(("metadata", customMetadata(custom))) }
        return .object(members)
    }

    /// The members both APIs begin an object with: which object, which version, and its type.
    private static func identity(_ object: ObjectMetadata) -> [(String, JSONValue)] {
        var members: [(String, JSONValue)] = [
            ("name", .string(object.fullPath)),
            ("bucket", .string(object.bucket)),
            ("generation", .string(String(object.generation))),
            ("metageneration", .string(String(object.metageneration))),
        ]
        if let contentType = object.contentType { members.append(("contentType", .string(contentType))) }
        return members
    }

    /// Changes with every change of content or metadata, as the service's etag does; the Firebase emulator's
    /// form (see `etag(generation:metageneration:)`), so that an app moved from the emulator sees the same etags.
    package static func etag(_ object: ObjectMetadata) -> String {
        etag(generation: object.generation, metageneration: object.metageneration)
    }

    /// The Firebase storage emulator's etag, in its answers and in its exports' metadata files: the base64 of
    /// SHA-1("GENERATION/METAGENERATION"), without its last `=`.
    package static func etag(generation: Int64, metageneration: Int64) -> String {
        let digest = Insecure.SHA1.hash(data: Data("\(generation)/\(metageneration)".utf8))
        return String(Data(digest).base64EncodedString().dropLast())
    }

    private static func customMetadata(_ map: CustomMetadata) -> JSONValue {
        .object(map.sortedByKeyBytes.map { ($0.key, .string($0.value)) })
    }

    /// The served bucket (`storage#bucket`).
    package static func bucket(_ name: String, baseURL: String) -> JSONValue {
        .object([
            ("kind", .string("storage#bucket")),
            ("id", .string(name)),
            ("selfLink", .string("\(baseURL)/storage/v1/b/\(name)")),
            ("projectNumber", .string("0")),
            ("name", .string(name)),
            ("metageneration", .string("1")),
            ("location", .string("US-CENTRAL1")),
            ("storageClass", .string("STANDARD")),
            ("etag", .string("CAE=")),
            ("locationType", .string("region")),
        ])
    }

    /// An object of the Firebase v0 API read back: the JSON API's fields, with the download tokens returned to the
    /// custom metadata, where the bucket keeps them.
    package static func firebaseMetadata(_ data: Data, bucket: String) throws -> ObjectMetadata {
        let document = try CloudStorageObjectDocument.decode(data, what: "a metadata read")
        var metadata = try document.metadata(bucket: bucket)
        if let tokens = document.downloadTokens, !tokens.isEmpty {
            metadata.customMetadata[ObjectMetadata.downloadTokensKey] = tokens
        }
        return metadata
    }
}
