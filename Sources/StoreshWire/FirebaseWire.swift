import Foundation
import StoreshCore

/// The Firebase Storage REST API v0 (`/v0/b/BUCKET/o…`), the one the Firebase SDKs send, where the project's
/// security rules decide: its requests built once for the client storesh is when signed in as an end user
/// (rule F1) and for `explain`, which shows them.
package enum FirebaseWire {
    /// The service's base URL; an emulator's replaces it.
    package static let baseURL = "https://firebasestorage.googleapis.com"

    /// `/v0/b/BUCKET/o`.
    package static func objectsPath(_ bucket: String) -> String { "/v0/b/\(NameBytes.percentEncoded(bucket))/o" }

    /// `/v0/b/BUCKET/o/OBJECT`, the object's name percent-encoded whole (its `/` too).
    package static func objectPath(_ bucket: String, _ object: String) -> String {
        "\(objectsPath(bucket))/\(NameBytes.percentEncoded(object))"
    }

    /// A page of a folder as the SDKs ask for it (`list(maxResults:pageToken:)`; `listAll()` asks page after page
    /// without a size): the folder's prefix (none at the root), `/` as the delimiter, the size and the token given.
    package static func list(bucket: String, prefix: String, maxResults: Int?, pageToken: String?) -> WireRequest {
        WireRequest(
            method: "GET",
            target: objectsPath(bucket)
                + CloudStorageWire.query([
                    ("prefix", prefix.isEmpty ? nil : prefix), ("delimiter", "/"),
                    ("maxResults", maxResults.map(String.init)),
                    ("pageToken", pageToken),
                ]))
    }

    /// A page of the v0 API's listing as the service writes it: `prefixes` with their trailing `/`, `items` as
    /// `{name, bucket}`, `nextPageToken` only when another page follows. `storesh serve` answers with it.
    package static func listDocument(_ page: ListPage, bucket: String) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("prefixes", .array(page.prefixes.map { .string($0 + "/") })),
            ("items", .array(page.items.map { .object([("name", .string($0)), ("bucket", .string(bucket))]) })),
        ]
        if let token = page.nextPageToken { members.append(("nextPageToken", .string(token))) }
        return .object(members)
    }

    /// A page read back from the document `listDocument` writes (the signed-in client reads the service's so):
    /// prefixes without their trailing `/`, as rule L4 shows them; an empty token is none.
    package static func listPage(_ document: Data) throws -> ListPage {
        struct Document: Decodable {
            struct Item: Decodable { var name: String }
            var prefixes: [String]?
            var items: [Item]?
            var nextPageToken: String?
        }
        let decoded: Document
        do {
            decoded = try JSONDecoder().decode(Document.self, from: document)
        } catch {
            throw StorageError.internalError(
                "The service answered a listing with a document that is not the v0 API's list (\(error)).")
        }
        return ListPage(
            prefixes: (decoded.prefixes ?? []).map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            items: (decoded.items ?? []).map(\.name),
            nextPageToken: decoded.nextPageToken.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// An object's metadata (`getMetadata()`).
    package static func metadata(bucket: String, object: String) -> WireRequest {
        WireRequest(method: "GET", target: objectPath(bucket, object))
    }

    /// An object's content (`data(maxSize:)`, `write(toFile:)`).
    package static func download(bucket: String, object: String) -> WireRequest {
        WireRequest(method: "GET", target: objectPath(bucket, object) + "?alt=media")
    }

    /// `updateMetadata(_:)`: the v0 API takes no preconditions; the body names what changes (`null` deletes).
    package static func patch(bucket: String, object: String, body: Data) -> WireRequest {
        WireRequest(method: "PATCH", target: objectPath(bucket, object), body: body)
    }

    /// `putData`, `putFile`: a multipart upload (the resource, then the content) to the name given.
    package static func upload(bucket: String, object: String) -> WireRequest {
        WireRequest(method: "POST", target: objectsPath(bucket) + CloudStorageWire.query([("name", object)]))
    }

    /// `putFile` of a large file: a resumable upload's start, its body the object's resource (the content follows in
    /// pieces to the upload URL the answer names, `X-Goog-Upload-URL`).
    package static func resumableStart(bucket: String, object: String, resource: Data) -> WireRequest {
        WireRequest(
            method: "POST", target: objectsPath(bucket) + CloudStorageWire.query([("name", object)]), body: resource)
    }

    /// `delete()`.
    package static func delete(bucket: String, object: String) -> WireRequest {
        WireRequest(method: "DELETE", target: objectPath(bucket, object))
    }
}
