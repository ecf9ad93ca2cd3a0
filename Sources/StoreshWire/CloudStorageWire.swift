import Foundation
import StoreshCore

/// One request of an HTTP API as storesh sends it: its method, its path and query after the service's base URL
/// (percent-encoded), and its body. The `gs://` backend sends these, and `explain` prints the same values: a
/// lesson shows exactly what goes over the wire.
package struct WireRequest: Sendable, Equatable {
    package var method: String
    /// The path and query after the base URL: `/storage/v1/b/teaching/o/images%2Fforest.jpg?ifMetagenerationMatch=1`.
    package var target: String
    package var body: Data?

    package init(method: String, target: String, body: Data? = nil) {
        self.method = method
        self.target = target
        self.body = body
    }

    /// As `explain` prints it: the method and URL, then the body (text) on the next line when there is one.
    package func rendered(baseURL: String) -> String {
        "\(method) \(baseURL)\(target)" + (body.map { "\n" + String(decoding: $0, as: UTF8.self) } ?? "")
    }
}

/// The Cloud Storage JSON API v1's requests (rule G1), built once for the backend that sends them and for
/// `explain`, which shows them.
package enum CloudStorageWire {
    /// The service's base URL; an emulator's replaces it.
    package static let baseURL = "https://storage.googleapis.com"

    /// `/storage/v1/b/BUCKET`.
    package static func bucketPath(_ bucket: String) -> String { "/storage/v1/b/\(NameBytes.percentEncoded(bucket))" }

    /// `/storage/v1/b/BUCKET/o/OBJECT`, the object's name percent-encoded whole (its `/` too).
    package static func objectPath(_ bucket: String, _ object: String) -> String {
        "\(bucketPath(bucket))/o/\(NameBytes.percentEncoded(object))"
    }

    /// A query string of the parameters that have a value, in order: `?a=1&b=2`, or nothing.
    package static func query(_ parameters: [(String, String?)]) -> String {
        let present = parameters.compactMap { name, value in value.map { "\(name)=\(NameBytes.percentEncoded($0))" } }
        return present.isEmpty ? "" : "?" + present.joined(separator: "&")
    }

    /// A change's preconditions as query parameters (rule G5).
    package static func conditions(_ precondition: Precondition) -> [(String, String?)] {
        [
            ("ifGenerationMatch", precondition.generation.map(String.init)),
            ("ifMetagenerationMatch", precondition.metageneration.map(String.init)),
        ]
    }

    /// objects.list: a page of the names under `prefix`, collapsed at the next `/` when `delimited` (a folder's
    /// prefixes and items) or every name under it (a scan), each item with its metadata.
    package static func list(
        bucket: String, prefix: String, delimited: Bool, maxResults: Int?, startOffset: String? = nil,
        pageToken: String? = nil
    ) -> WireRequest {
        WireRequest(
            method: "GET",
            target: "\(bucketPath(bucket))/o"
                + query([
                    ("prefix", prefix.isEmpty ? nil : prefix), ("delimiter", delimited ? "/" : nil),
                    ("maxResults", maxResults.map(String.init)), ("startOffset", startOffset), ("pageToken", pageToken),
                ]))
    }

    /// objects.list of generations (rule B5): every one, live and noncurrent (`versions=true`), or the soft-deleted
    /// ones (`softDeleted=true`, rule B6).
    package static func listGenerations(
        bucket: String, prefix: String, delimited: Bool, maxResults: Int?, pageToken: String?, softDeleted: Bool
    ) -> WireRequest {
        WireRequest(
            method: "GET",
            target: "\(bucketPath(bucket))/o"
                + query([
                    ("prefix", prefix.isEmpty ? nil : prefix), ("delimiter", delimited ? "/" : nil),
                    ("maxResults", maxResults.map(String.init)), ("pageToken", pageToken),
                    (softDeleted ? "softDeleted" : "versions", "true"),
                ]))
    }

    /// objects.get of one generation (`softDeleted`: a soft-deleted one's metadata).
    package static func metadata(
        bucket: String, object: String, generation: Int64, softDeleted: Bool = false
    ) -> WireRequest {
        WireRequest(
            method: "GET",
            target: objectPath(bucket, object)
                + query([("generation", String(generation)), ("softDeleted", softDeleted ? "true" : nil)]))
    }

    /// buckets.get of what says how the bucket keeps deleted objects: its versioning and soft delete policy.
    package static func bucketDeletionSettings(bucket: String) -> WireRequest {
        WireRequest(method: "GET", target: bucketPath(bucket) + query([("fields", "versioning,softDeletePolicy")]))
    }

    /// objects.restore: a soft-deleted generation made live again, a new generation (rule B6), under `precondition`
    /// on the live object (`ifGenerationMatch=0`: none may be live).
    package static func restore(
        bucket: String, object: String, generation: Int64, precondition: Precondition
    ) -> WireRequest {
        WireRequest(
            method: "POST",
            target: objectPath(bucket, object) + "/restore"
                + query([("generation", String(generation))] + conditions(precondition)))
    }

    /// The first request of a scan's page (`Bucket.scan`): every name under `prefix` after `after`, with its
    /// metadata, one more than `limit` asked so that the page knows whether another follows.
    package static func scanPage(
        bucket: String, prefix: String, after: String?, limit: Int, pageToken: String? = nil
    ) -> WireRequest {
        list(
            bucket: bucket, prefix: prefix, delimited: false, maxResults: min(ListOptions.maximumResults, limit + 1),
            startOffset: after, pageToken: pageToken)
    }

    /// objects.get: an object's metadata.
    package static func metadata(bucket: String, object: String) -> WireRequest {
        WireRequest(method: "GET", target: objectPath(bucket, object))
    }

    /// objects.patch from the state `before` to `after`, guarded by `before`'s generation and metageneration, so
    /// that a concurrent change is never overwritten: the body names only what changes (rules M4, M5, G5).
    package static func patch(
        bucket: String, object: String, from before: ObjectMetadata, to after: ObjectMetadata
    ) -> WireRequest {
        WireRequest(
            method: "PATCH",
            target: objectPath(bucket, object)
                + query(conditions(guarding: before) + retentionOverride(from: before, to: after)),
            body: CloudStorageJSON.patchBody(from: before, to: after))
    }

    /// `overrideUnlockedRetention=true` for a change of the object's own retention: the service refuses to shorten or
    /// remove an Unlocked one without it, and a change storesh makes was planned, shown and asked for by name (rule
    /// M9). A Locked retention is refused whatever the request says.
    package static func retentionOverride(from before: ObjectMetadata, to after: ObjectMetadata) -> [(String, String?)]
    {
        before.cloudStorage.retention == after.cloudStorage.retention ? [] : [("overrideUnlockedRetention", "true")]
    }

    /// The request that makes an object `after` from `before`: a PATCH, or, for a change of storage class (rule M9),
    /// a rewrite of the object onto itself.
    package static func change(
        bucket: String, object: String, from before: ObjectMetadata, to after: ObjectMetadata
    ) -> WireRequest {
        before.rewrites(to: after)
            ? rewriteInPlace(bucket: bucket, object: object, from: before, to: after, token: nil)
            : patch(bucket: bucket, object: object, from: before, to: after)
    }

    /// objects.move: `source` renamed to `destination` in one step, the `ifSource…` conditions guarding the source and
    /// the others the destination (`ifGenerationMatch=0`: nothing may be there).
    package static func move(
        bucket: String, source: String, destination: String, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    ) -> WireRequest {
        let sourceConditions = conditions(sourcePrecondition).map { ("ifSource" + $0.0.dropFirst("if".count), $0.1) }
        return WireRequest(
            method: "POST",
            target: objectPath(bucket, source) + "/moveTo/o/\(NameBytes.percentEncoded(destination))"
                + query(sourceConditions + conditions(destinationPrecondition)))
    }

    /// objects.rewrite of an object onto itself, as `before` was read (its generation and metageneration guard the
    /// source, its generation the destination: nothing replaced it since), into `after` (`rewriteBody`). A large
    /// object takes several calls: each after the first carries the `rewriteToken` the one before answered.
    package static func rewriteInPlace(
        bucket: String, object: String, from before: ObjectMetadata, to after: ObjectMetadata, token: String?
    ) -> WireRequest {
        let path = objectPath(bucket, object)
        let generation = String(before.generation)
        return WireRequest(
            method: "POST",
            target: path + "/rewriteTo" + path.dropFirst("/storage/v1".count)
                + query([
                    ("sourceGeneration", generation), ("ifGenerationMatch", generation),
                    ("ifSourceGenerationMatch", generation),
                    ("ifSourceMetagenerationMatch", String(before.metageneration)), ("rewriteToken", token),
                ]),
            body: CloudStorageJSON.rewriteBody(from: before, to: after))
    }

    /// The precondition of a change computed from `state`.
    package static func conditions(guarding state: ObjectMetadata) -> [(String, String?)] {
        conditions(Precondition(generation: state.generation, metageneration: state.metageneration))
    }

    /// An upload (objects.insert) of `uploadType` (`multipart`: the resource and the content in one body;
    /// `resumable`: a session, then the content in chunks), guarded by `precondition`.
    package static func upload(bucket: String, uploadType: String, precondition: Precondition) -> WireRequest {
        WireRequest(
            method: "POST",
            target: "/upload\(bucketPath(bucket))/o" + query([("uploadType", uploadType)] + conditions(precondition)))
    }

    /// objects.delete, guarded by `precondition`.
    package static func delete(bucket: String, object: String, precondition: Precondition) -> WireRequest {
        WireRequest(method: "DELETE", target: objectPath(bucket, object) + query(conditions(precondition)))
    }
}
