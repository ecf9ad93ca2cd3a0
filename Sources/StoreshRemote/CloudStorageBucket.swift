import Foundation
import NIOHTTP1
import StoreshCore
import StoreshWire

/// Where the Cloud Storage JSON API is (rule G2): Google's service, or an emulator named by
/// `$STORAGE_EMULATOR_HOST` (scheme optional, `http://` assumed) or `$FIREBASE_STORAGE_EMULATOR_HOST` (`host:port`).
/// Against an emulator no OAuth is done: requests carry `Authorization: Bearer owner`.
package struct CloudStorageEndpoint: Sendable, Equatable {
    /// Without a trailing `/`: `https://storage.googleapis.com`, `http://127.0.0.1:9199`.
    package var baseURL: String
    /// The variable that named an emulator; nil for Google's service.
    package var emulatorVariable: String?

    package static let google = CloudStorageEndpoint(baseURL: "https://storage.googleapis.com", emulatorVariable: nil)

    package var isEmulator: Bool { emulatorVariable != nil }

    package init(baseURL: String, emulatorVariable: String?) {
        self.baseURL = baseURL
        self.emulatorVariable = emulatorVariable
    }

    /// The endpoint the environment names. `$STORESH_GCS_ENDPOINT` names an endpoint that is not an emulator
    /// (a private or regional one): credentials are used there as at Google's.
    package static func resolve(_ environment: (String) -> String?) -> CloudStorageEndpoint {
        func url(_ variable: String) -> String? {
            guard var host = environment(variable)?.trimmingCharacters(in: .whitespaces), !host.isEmpty else {
                return nil
            }
            if !host.contains("://") { host = "http://" + host }
            while host.hasSuffix("/") { host.removeLast() }
            return host
        }
        for variable in ["STORAGE_EMULATOR_HOST", "FIREBASE_STORAGE_EMULATOR_HOST"] {
            if let host = url(variable) { return CloudStorageEndpoint(baseURL: host, emulatorVariable: variable) }
        }
        if let host = url("STORESH_GCS_ENDPOINT") { return CloudStorageEndpoint(baseURL: host, emulatorVariable: nil) }
        return .google
    }
}

/// What authorises a request: a header value, asked for each attempt (a token may be refreshed meanwhile).
package protocol RequestAuthorizer: Sendable {
    /// The `Authorization` header's value, or nil to send none.
    func authorization() async throws -> String?
    /// Extra headers every request carries (`x-goog-user-project`).
    var extraHeaders: [(String, String)] { get }
    /// How to say who is asking, for `whoami` and messages: "the emulator's owner", "service account …".
    var description: String { get }
}

extension RequestAuthorizer {
    package var extraHeaders: [(String, String)] { [] }
}

/// The administrator of an emulator (rule G2).
package struct EmulatorOwner: RequestAuthorizer {
    package init() {}
    package func authorization() async throws -> String? { "Bearer owner" }
    package var description: String { "the emulator's administrator (Bearer owner)" }
}

/// No Google credentials were found, but requests are made as an end user (rule F1): only if the user signs out
/// does a request need them, and it then fails as the search did.
package struct MissingCredentials: RequestAuthorizer {
    let search: StorageError

    package init(_ search: StorageError) { self.search = search }

    package func authorization() async throws -> String? { throw search }
    package var description: String { "no Google credentials (none were found)" }
}

/// A Google Cloud Storage bucket over the JSON API v1 (rules G1–G7): every Firebase Storage bucket is one.
///
/// Listings are the Firebase view of what the service lists as stored, with pages filled (rule G6). Every change
/// carries the precondition it is given (rule G5), and is retried only when that precondition makes a repeat
/// harmless (rule G4). There are no transactions: scripts are planned, then applied (rule X1).
package final class CloudStorageBucket: Bucket, StoredListingSource, @unchecked Sendable {
    package let name: String
    package let endpoint: CloudStorageEndpoint
    let http: RemoteHTTP
    let authorizer: any RequestAuthorizer
    /// Uploads larger than this go as resumable uploads, in chunks of this size.
    let resumableThreshold: Int
    /// Whether the service took batches (rule Q2).
    let batches = BatchEndpointState()

    static let tokens = PositionPageTokens(mark: "gs1:")

    package init(
        name: String, endpoint: CloudStorageEndpoint, http: RemoteHTTP, authorizer: any RequestAuthorizer,
        resumableThreshold: Int = 8 << 20
    ) {
        self.name = name
        self.endpoint = endpoint
        self.http = http
        self.authorizer = authorizer
        self.resumableThreshold = resumableThreshold
    }

    /// The v0 API's base URL for this endpoint: the emulator's, or Google's.
    var firebaseBaseURL: String { endpoint.isEmulator ? endpoint.baseURL : FirebaseWire.baseURL }

    package var capabilities: BucketCapabilities { [] }
    package var scheme: String { "gs" }
    package var guardsChanges: Bool { true }
    /// Cloud Storage stores whatever metadata its JSON API accepts: nothing to refuse beforehand.
    package var storageClasses: StorageClasses { .cloudStorage }
    package func validateStorable(_ metadata: ObjectMetadata) throws {}
    package var transactions: (any TransactionalBucket)? { nil }
    package var snapshotStore: (any SnapshotStore)? { nil }
    package var immediateReads: (any ImmediateReads)? { nil }
    package var rulesStore: (any RulesStore)? { nil }
    package var settingsStore: (any BucketSettingsStore)? { nil }
    /// Every Cloud Storage bucket names generations, whether or not its versioning keeps noncurrent ones (rule B5).
    package var objectVersions: (any ObjectVersions)? { self }
    package var objectMoves: (any ObjectMoves)? { self }
    package var endUserSignIn: (any EndUserSignIn)? { nil }
    package var batchedChanges: (any BatchedChanges)? { batches.refused ? nil : self }
    /// Each object is a request of its own (batched: `batchedChanges`).
    package var uniformUpdates: (any UniformUpdates)? { nil }
    package var asTransaction: (any BucketTransaction)? { nil }
    package var pageTokens: any PageTokenFormat { Self.tokens }

    package var accessDescription: String? {
        let decides =
            endpoint.isEmulator
            ? "security rules are bypassed"
            : "IAM decides what it may do (security rules apply to the Firebase SDKs, not here)"
        return
            "gs://\(name) through the Cloud Storage JSON API at \(endpoint.baseURL), as \(authorizer.description); \(decides)"
    }

    package func close() { http.close() }

    // MARK: URLs

    private var bucketURL: String { endpoint.baseURL + CloudStorageWire.bucketPath(name) }

    func objectURL(_ object: String, _ query: [(String, String?)] = []) -> String {
        endpoint.baseURL + CloudStorageWire.objectPath(name, object) + CloudStorageWire.query(query)
    }

    /// The URL of a request built by `CloudStorageWire` (the one `explain` shows).
    func url(_ request: WireRequest) -> String { endpoint.baseURL + request.target }

    // MARK: Requests

    /// Sends a request with the authorizer's credentials; a failure status becomes the storage error it means.
    func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: Data? = nil, repeatable: Bool,
        object: String? = nil, precondition: Precondition = .none, into sink: (any ContentSink)? = nil
    ) async throws -> RemoteResponse {
        let authorizer = self.authorizer
        let request = RemoteRequest(
            method: method, url: url, headers: authorizer.extraHeaders + headers, body: body, repeatable: repeatable)
        let response = try await http.send(request, into: sink) { try await authorizer.authorization() }
        guard (200..<300).contains(response.status) || response.status == 308 else {
            throw failure(response, object: object, precondition: precondition)
        }
        return response
    }

    /// A status as the error it means (spec E: `StatusErrors`), with the service's own message where it says more.
    func failure(_ response: RemoteResponse, object: String?, precondition: Precondition) -> StorageError {
        let message = CloudStorageJSON.errorMessage(response.body)
        return StatusErrors.error(
            StatusErrors.Answer(status: response.status, attempts: response.attempts, message: message),
            bucket: name, bucketURL: "gs://\(name)", object: object,
            bucketMissing: (message ?? "").lowercased().contains("bucket"),
            audience: .credentials(hint: "Check them with storesh whoami."))
    }

    /// Checks that the bucket is there and the credentials work, so that a mistyped name is said at once. A 403
    /// on the bucket itself is not fatal: Firebase users may read objects without the right to see the bucket.
    package func verify() async throws {
        do {
            _ = try await send(.GET, bucketURL + "?fields=name", repeatable: true)
        } catch let error as StorageError where error.code == .unauthorized {
            return
        }
    }

    // MARK: Listing

    package func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        try await Lister.page(of: reference, bucket: name, options: options, source: self, tokens: Self.tokens)
    }

    package func storedPage(
        prefix: String, startOffset: String?, continuation: String?, maxResults: Int
    ) async throws
        -> StoredListingPage
    {
        try await listPage(
            CloudStorageWire.list(
                bucket: name, prefix: prefix, delimited: true, maxResults: maxResults, startOffset: startOffset,
                pageToken: continuation))
    }

    /// One page of objects.list.
    func listPage(_ request: WireRequest) async throws -> StoredListingPage {
        let response = try await send(.GET, url(request), repeatable: true)
        return try CloudStorageJSON.listPage(response.body, bucket: name)
    }

    package func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        var objects: [ObjectMetadata] = []
        var continuation: String?
        // Bounded by the service's continuation, which must change at every page.
        while true {
            let page = try await listPage(
                CloudStorageWire.scanPage(
                    bucket: name, prefix: prefix, after: after, limit: limit, pageToken: continuation))
            // A service that ignores startOffset gives names before it: they are dropped here.
            objects += page.items.filter { object in
                after.map { $0.utf8.lexicographicallyPrecedes(object.fullPath.utf8) } ?? true
            }
            if objects.count > limit {
                let taken = Array(objects.prefix(limit))
                return ObjectScanPage(objects: taken, resumeAfter: taken.last?.fullPath)
            }
            guard let next = page.continuation, next != continuation else {
                return ObjectScanPage(objects: objects, resumeAfter: nil)
            }
            // One request a page: startOffset is inclusive, so a page after the first brings `after` again and one
            // name fewer than asked; the page ends there rather than asking again for the rest (which cost a second
            // request and threw away all but one of its names, issue 55).
            if !objects.isEmpty { return ObjectScanPage(objects: objects, resumeAfter: objects.last?.fullPath) }
            continuation = next
        }
    }

    // MARK: Objects

    package func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        let response = try await send(
            .GET, url(CloudStorageWire.metadata(bucket: name, object: object.rawValue)), repeatable: true,
            object: object.rawValue)
        return try CloudStorageJSON.metadata(response.body, bucket: name, what: "a metadata read")
    }

    package func read(_ object: ObjectName) async throws -> Data {
        try await send(.GET, objectURL(object.rawValue, [("alt", "media")]), repeatable: true, object: object.rawValue)
            .body
    }

    package func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        let counter = CountingSink(sink)
        _ = try await send(
            .GET, objectURL(object.rawValue, [("alt", "media")]), repeatable: true, object: object.rawValue,
            into: counter)
        return counter.count
    }

    package func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        guard source.size > Int64(resumableThreshold) else {
            return try await write(try source.readAll(), to: object, options: options, precondition: precondition)
        }
        let (resource, _) = try Self.uploadResource(object, options)
        let md5 = source.md5Base64
        let response = try await resumableUpload(
            size: Int(source.size), read: { offset, length in try source.read(offset: Int64(offset), length: length) },
            object: object.rawValue, resource: resource, precondition: precondition,
            landed: { current in
                current.md5Hash == md5 && current.metageneration == 1 && current.generation != precondition.generation
            })
        return try await uploaded(response, object: object, expectedMD5: options.expectedMD5 ?? md5)
    }

    package func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        // The service's PATCH answers the object after; the update's old values come from a read, which also
        // guards the PATCH when the caller gave no precondition (a read-modify-write never overwrites).
        try await updateByReadingThenApplying(of: object, update, precondition: precondition)
    }

    package func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        if before.rewrites(to: after) { return try await rewriteInPlace(object, from: before, to: after) }
        let request = CloudStorageWire.patch(bucket: name, object: object.rawValue, from: before, to: after)
        let response = try await sendChange(
            .PATCH, url(request), headers: [("Content-Type", "application/json")], body: request.body ?? Data(),
            object: object.rawValue, precondition: .matches(before)
        ) { current in Self.metadataLanded(current, from: before, to: after) }
        if let response { return try CloudStorageJSON.metadata(response.body, bucket: name, what: "an update") }
        return try await metadata(of: object)
    }

    /// A change of storage class (rule M9): the object rewritten onto itself, guarded by `before` on both sides, a
    /// call at a time until the service says it is done (a large object takes several, each continuing the last
    /// with its token). A repeat refused because the first attempt landed counts as done when the object is a new
    /// generation of the same content, as planned.
    private func rewriteInPlace(
        _ object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws -> ObjectMetadata {
        var token: String?
        while true {
            let request = CloudStorageWire.rewriteInPlace(
                bucket: name, object: object.rawValue, from: before, to: after, token: token)
            let response = try await sendChange(
                .POST, url(request), headers: [("Content-Type", "application/json")], body: request.body ?? Data(),
                object: object.rawValue,
                precondition: Precondition(generation: before.generation, metageneration: before.metageneration)
            ) { current in
                current.generation != before.generation && current.md5Hash == before.md5Hash
                    && current.differences(to: after).isEmpty
            }
            guard let response else { return try await metadata(of: object) }
            let answer = try CloudStorageRewriteDocument.decode(response.body, what: "a rewrite")
            if answer.done == true, let resource = answer.resource { return try resource.metadata(bucket: name) }
            guard let next = answer.rewriteToken, !next.isEmpty, next != token else {
                throw StorageError.internalError(
                    "The service answered a rewrite of \(object.rawValue) as neither done nor with a token to continue it; the object is as it was, or a new generation of the same content."
                )
            }
            token = next
        }
    }

    /// Whether a metadata change refused on a repeat had landed on its first attempt: the object is as planned,
    /// one metageneration on.
    static func metadataLanded(_ current: ObjectMetadata, from before: ObjectMetadata, to after: ObjectMetadata) -> Bool
    {
        current.metageneration == before.metageneration + 1 && current.differences(to: after).isEmpty
    }

    package func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        let (resource, contentType) = try Self.uploadResource(object, options)
        let md5 = ContentHash.md5Base64(content)
        // A repeat refused because the first attempt landed: the object has this content, as first written.
        let landed: @Sendable (ObjectMetadata) -> Bool = { current in
            current.md5Hash == md5 && current.metageneration == 1 && current.generation != precondition.generation
        }
        let response: RemoteResponse?
        if content.count > resumableThreshold {
            response = try await resumableUpload(
                size: content.count,
                read: { offset, length in content.subdata(in: offset..<min(content.count, offset + length)) },
                object: object.rawValue, resource: resource, precondition: precondition, landed: landed)
        } else {
            let upload = CloudStorageJSON.multipartUpload(
                resource: resource, contentType: contentType, content: content)
            response = try await sendChange(
                .POST, url(CloudStorageWire.upload(bucket: name, uploadType: "multipart", precondition: precondition)),
                headers: [("Content-Type", upload.contentType)], body: upload.body,
                object: object.rawValue, precondition: precondition, landed: landed)
        }
        return try await uploaded(response, object: object, expectedMD5: options.expectedMD5)
    }

    /// An upload's resource (name, writable properties, custom metadata, the MD5 to check) and its content type
    /// (guessed from the name when not given, as the SDKs do).
    /// An upload's resource (its content type guessed from the name when not given) and its content type, as both
    /// APIs take it.
    static func uploadResource(_ object: ObjectName, _ options: WriteOptions) throws -> (JSONValue, String) {
        // Refused here, before any request, whatever server stands in for Cloud Storage (an emulator may take them).
        try object.checkNewObjectName()
        try CustomMetadataLimits.validate(options.customMetadata)
        var options = options
        if options.properties[.contentType] == nil {
            options.properties[.contentType] = ContentType.guess(forName: object.rawValue)
        }
        return (
            CloudStorageJSON.uploadResource(name: object.rawValue, options: options),
            options.properties[.contentType] ?? "application/octet-stream"
        )
    }

    /// The object an upload made (read again when its answer was lost and a repeat found it landed), checked
    /// against the MD5 the caller expects.
    private func uploaded(
        _ response: RemoteResponse?, object: ObjectName, expectedMD5: String?
    ) async throws -> ObjectMetadata {
        let metadata: ObjectMetadata
        if let response {
            metadata = try CloudStorageJSON.metadata(response.body, bucket: name, what: "an upload")
        } else {
            metadata = try await self.metadata(of: object)
        }
        if let expectedMD5, metadata.md5Hash != expectedMD5 {
            throw StorageError(
                .nonMatchingChecksum,
                "The service stored \(object.rawValue) with MD5 \(metadata.md5Hash), not the expected \(expectedMD5).")
        }
        return metadata
    }

    /// A resumable upload: a session, then chunks; a broken chunk is followed by a status query and the rest
    /// is sent from where the service says it stands (the session itself makes the repeat harmless).
    private func resumableUpload(
        size: Int, read: (Int, Int) throws -> Data, object: String, resource: JSONValue, precondition: Precondition,
        landed: @escaping @Sendable (ObjectMetadata) -> Bool
    ) async throws -> RemoteResponse? {
        let start = url(CloudStorageWire.upload(bucket: name, uploadType: "resumable", precondition: precondition))
        // Opening a session changes nothing: it is repeatable.
        let session = try await send(
            .POST, start, headers: [("Content-Type", "application/json"), ("X-Upload-Content-Length", String(size))],
            body: Data(resource.serialized.utf8), repeatable: true, object: object, precondition: precondition)
        guard let location = session.header("Location") else {
            throw StorageError.internalError("The service opened no upload session for \(object) (no Location header).")
        }
        var offset = 0
        var rounds = 0
        while true {
            rounds += 1
            guard rounds <= 4 * (size / resumableThreshold + 2) else {
                throw StorageError(.unavailable, "The upload of \(object) made no progress; nothing was written.")
            }
            let end = min(size, offset + resumableThreshold)
            let range = end > offset ? "bytes \(offset)-\(end - 1)/\(size)" : "bytes */\(size)"
            let response: RemoteResponse
            do {
                response = try await send(
                    .PUT, location, headers: [("Content-Range", range)], body: try read(offset, end - offset),
                    repeatable: true, object: object, precondition: precondition)
            } catch let error as StorageError where error.code == .unavailable {
                // Ask where the session stands, and go on from there.
                let status = try await send(
                    .PUT, location, headers: [("Content-Range", "bytes */\(size)")], repeatable: true, object: object)
                if status.status != 308 { return status }
                offset = Self.committedBytes(status)
                continue
            } catch let error as StorageError where error.code == .preconditionFailed {
                if let current = try await metadataIfPresent(of: ObjectName(object)), landed(current) { return nil }
                throw error
            }
            if response.status != 308 { return response }
            offset = Self.committedBytes(response)
        }
    }

    /// The bytes a session holds, from a 308's `Range: bytes=0-N`.
    static func committedBytes(_ response: RemoteResponse) -> Int {
        guard let range = response.header("Range"), let dash = range.lastIndex(of: "-"),
            let last = Int(range[range.index(after: dash)...])
        else { return 0 }
        return last + 1
    }

    package func delete(_ object: ObjectName, precondition: Precondition) async throws {
        _ = try await sendChange(
            .DELETE, url(CloudStorageWire.delete(bucket: name, object: object.rawValue, precondition: precondition)),
            object: object.rawValue, precondition: precondition
        ) { _ in false }
    }

    /// A change: repeated on failure only when a precondition guards it (rule G4). When a repeat is refused
    /// (412, or 404 for a delete), the first attempt may have landed and only its answer was lost: `landed` says
    /// whether the object is now as the change would leave it, and then the change succeeded (nil: no answer to
    /// read; the caller reads the object).
    func sendChange(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: Data? = nil, object: String,
        precondition: Precondition, landed: @escaping @Sendable (ObjectMetadata) -> Bool
    ) async throws -> RemoteResponse? {
        let repeatable = precondition.isConditional
        let authorizer = self.authorizer
        let request = RemoteRequest(
            method: method, url: url, headers: authorizer.extraHeaders + headers, body: body, repeatable: repeatable)
        let response = try await http.send(request) { try await authorizer.authorization() }
        if (200..<300).contains(response.status) { return response }
        if response.attempts > 1 {
            if method == .DELETE && response.status == 404 { return nil }
            if response.status == 412, let current = try await metadataIfPresent(of: ObjectName(object)),
                landed(current)
            {
                return nil
            }
        }
        throw failure(response, object: object, precondition: precondition)
    }
}

/// Counts what passes into a sink.
final class CountingSink: ContentSink, @unchecked Sendable {
    let inner: any ContentSink
    private(set) var count: Int64 = 0

    init(_ inner: any ContentSink) { self.inner = inner }

    func write(_ bytes: Data) throws {
        try inner.write(bytes)
        count += Int64(bytes.count)
    }
}
