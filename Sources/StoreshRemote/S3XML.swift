import Foundation
import StoreshCore
import StoreshWire

/// S3's answers: listings, errors, uploads.
enum S3XML {
    /// An error document's code and message (`<Error><Code>NoSuchKey</Code><Message>…</Message></Error>`).
    static func error(_ body: Data) throws(StorageError) -> (code: String, message: String?)? {
        guard let root = try XMLElement.parse(body), root.name == "Error", let code = root.text(of: "Code") else {
            return nil
        }
        return (code, root.text(of: "Message"))
    }

    /// A ListObjectsV2 page, asked with `encoding-type=url` (keys percent-encoded, so that any byte survives XML).
    static func listing(
        _ body: Data, bucket: String
    ) throws -> (prefixes: [String], items: [S3ListedObject], continuation: String?) {
        guard let root = try XMLElement.parse(body), root.name == "ListBucketResult" else {
            throw StorageError.internalError("The service's listing is not the XML of ListObjectsV2.")
        }
        let key = keys(of: root)
        let prefixes = try root.all("CommonPrefixes").compactMap { try $0.text(of: "Prefix").map(key) }
        let items = try root.all("Contents").map { entry -> S3ListedObject in
            guard let name = entry.text(of: "Key") else {
                throw StorageError.internalError("The service listed an object without a key.")
            }
            return S3ListedObject(
                key: try key(name), size: Int64(entry.text(of: "Size") ?? "") ?? 0, etag: entry.text(of: "ETag") ?? "",
                lastModified: entry.text(of: "LastModified").flatMap { Timestamp(rfc3339: $0) })
        }
        let truncated = root.text(of: "IsTruncated") == "true"
        let next = root.text(of: "NextContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        return (prefixes, items, truncated ? next : nil)
    }

    /// A ListObjectVersions page, asked with `encoding-type=url`: its prefixes, its versions and delete markers in
    /// the service's order (by key, each key's newest first), and S3's markers for the next page.
    static func versions(
        _ body: Data
    ) throws -> (
        prefixes: [String], entries: [S3ListedVersion], truncated: Bool, nextKeyMarker: String?,
        nextVersionMarker: String?
    ) {
        guard let root = try XMLElement.parse(body), root.name == "ListVersionsResult" else {
            throw StorageError.internalError("The service's listing is not the XML of ListObjectVersions.")
        }
        let key = keys(of: root)
        let prefixes = try root.all("CommonPrefixes").compactMap { try $0.text(of: "Prefix").map(key) }
        let entries = try root.children.filter { $0.name == "Version" || $0.name == "DeleteMarker" }.map {
            entry -> S3ListedVersion in
            guard let name = entry.text(of: "Key"), let versionID = entry.text(of: "VersionId") else {
                throw StorageError.internalError("The service listed a version without a key or a version id.")
            }
            return S3ListedVersion(
                key: try key(name), versionID: versionID, isLatest: entry.text(of: "IsLatest") == "true",
                isDeleteMarker: entry.name == "DeleteMarker", size: Int64(entry.text(of: "Size") ?? "") ?? 0,
                etag: entry.text(of: "ETag") ?? "",
                lastModified: entry.text(of: "LastModified").flatMap { Timestamp(rfc3339: $0) }
                    ?? Timestamp(microseconds: 0),
                storageClass: entry.text(of: "StorageClass"))
        }
        let marker = { (name: String) in root.text(of: name).flatMap { $0.isEmpty ? nil : $0 } }
        return (
            prefixes, entries, root.text(of: "IsTruncated") == "true", try marker("NextKeyMarker").map(key),
            marker("NextVersionIdMarker")
        )
    }

    /// How a listing's keys read: as they are, or percent-decoded where it says `EncodingType` url (asked for, so
    /// that any byte survives XML).
    private static func keys(of root: XMLElement) -> (String) throws -> String {
        let encoded = root.text(of: "EncodingType") == "url"
        return { text in
            guard encoded else { return text }
            // Form encoding: a `+` is a space.
            guard let decoded = text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                throw StorageError.internalError("The service listed a key that is not percent-encoded UTF-8: \(text).")
            }
            return decoded
        }
    }

    /// The text of one element of an answer (`UploadId`, `ETag`), anywhere under the root.
    static func value(_ name: String, in body: Data) throws(StorageError) -> String? {
        func find(_ element: XMLElement) -> String? {
            if element.name == name { return element.text }
            for child in element.children { if let found = find(child) { return found } }
            return nil
        }
        return try XMLElement.parse(body).flatMap(find)
    }
}

/// What a ListObjectsV2 entry says of an object: no content type or custom metadata (a HEAD reads those).
struct S3ListedObject {
    var key: String
    var size: Int64
    var etag: String
    var lastModified: Timestamp?
}

/// What a ListObjectVersions entry says of one version or delete marker.
struct S3ListedVersion {
    var key: String
    var versionID: String
    var isLatest: Bool
    var isDeleteMarker: Bool
    var size: Int64
    var etag: String
    var lastModified: Timestamp
    var storageClass: String?
}
