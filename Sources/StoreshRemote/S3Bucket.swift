import Foundation
import NIOHTTP1
import StoreshCore
import StoreshWire
import Synchronization

/// An S3-compatible bucket (AWS S3, MinIO, R2, Ceph) over the S3 REST API, signed with SigV4 (rules S1–S4).
///
/// S3 has no partial metadata update: an update reads the object (HEAD), merges the change (rules M4–M5), and
/// copies the object onto itself with `x-amz-metadata-directive: REPLACE`, resending every property, guarded by the
/// ETag read and its time (rule S3). The storage class is storesh's `storageClass` (rule M9: S3's names; a copy that
/// does not name one makes the object STANDARD, so every copy names it), the Object Lock's legal hold and retention
/// are `temporaryHold` and `retention` (`ObjectLock`), and versions are generations (`S3Bucket+Versions`).
/// Properties storesh does not show (server-side encryption, `Expires`, a website redirect) are resent as they were
/// read. Listings are the Firebase view of ListObjectsV2, with storesh's own page tokens (rule S1).
package final class S3Bucket: Bucket, StoredListingSource, @unchecked Sendable {
    package let name: String
    package let configuration: AWSConfiguration
    let http: RemoteHTTP
    let signer: SigV4Signer
    /// Uploads larger than this go in parts of this size (S3's parts are at least 5 MiB).
    let multipartThreshold: Int
    /// Requests at once while reading the metadata of a page's objects (S3 lists without it).
    let readsInParallel = 32

    static let tokens = PositionPageTokens(mark: "s31:")
    /// The largest object a single copy can rewrite (S3's CopyObject limit, 5 GiB).
    static let largestCopy: Int64 = 5 << 30
    /// The most user metadata an object can carry, keys and values in UTF-8 (S3's limit).
    static let largestUserMetadata = 2048

    /// `https://BUCKET.s3.REGION.amazonaws.com`, or `ENDPOINT/BUCKET` in path style; no trailing `/`.
    private let bucketURL: String
    /// The path the bucket's URL starts with (`/BUCKET` in path style, else empty), as the signer sees it.
    private let bucketPath: String
    private let host: String
    var completions: CompletionReads!
    /// What a HEAD said beyond storesh's properties, by object, with the ETag it was read at: resent by a copy.
    /// By the keys' bytes (rule P7).
    private let kept = Mutex<[ObjectName: (entityTag: String?, headers: [(String, String)])]>([:])

    package init(name: String, configuration: AWSConfiguration, http: RemoteHTTP, multipartThreshold: Int = 8 << 20) {
        self.name = name
        self.configuration = configuration
        self.http = http
        self.multipartThreshold = max(5 << 20, multipartThreshold)
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        let endpoint = URLComponents(string: configuration.endpoint)
        let scheme = endpoint?.scheme ?? "https"
        let endpointHost = endpoint?.host ?? ""
        let port = endpoint?.port.map { ":\($0)" } ?? ""
        if configuration.pathStyle {
            bucketPath = "/" + NameBytes.percentEncoded(name)
            host = endpointHost + port
        } else {
            bucketPath = ""
            host = "\(name).\(endpointHost)\(port)"
        }
        bucketURL = "\(scheme)://\(host)\(bucketPath)"
        completions = CompletionReads(bucket: self)
    }

    package var scheme: String { "s3" }
    package var pageTokens: any PageTokenFormat { Self.tokens }
    package var capabilities: BucketCapabilities { [.immediateReads] }
    package var immediateReads: (any ImmediateReads)? { completions }
    package var guardsChanges: Bool { true }
    package var storageClasses: StorageClasses { .s3 }
    package var transactions: (any TransactionalBucket)? { nil }
    package var snapshotStore: (any SnapshotStore)? { nil }
    package var rulesStore: (any RulesStore)? { nil }
    package var settingsStore: (any BucketSettingsStore)? { nil }
    /// Its versions, where versioning is on (rule S2).
    package var objectVersions: (any ObjectVersions)? { self }
    /// S3 has no move: a copy, then a delete of the source as copied (rule M10).
    package var objectMoves: (any ObjectMoves)? { self }
    package var endUserSignIn: (any EndUserSignIn)? { nil }
    package var batchedChanges: (any BatchedChanges)? { nil }
    package var uniformUpdates: (any UniformUpdates)? { nil }
    package var asTransaction: (any BucketTransaction)? { nil }

    package var accessDescription: String? {
        "s3://\(name) at \(configuration.endpoint) (\(configuration.endpointSource)), region \(configuration.region), with the key "
            + "\(configuration.credentials.accessKeyID) from \(configuration.credentials.source); the bucket's policies decide. "
            + "Updates copy each object onto itself, guarded by its ETag and time (S3 has no partial update)."
    }

    package func close() { http.close() }

    // MARK: Requests

    /// Sends a signed request to `path` (after the bucket's, percent-encoded) with `query` (names and values as
    /// given; encoded here); a failure status becomes the storage error it means.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], headers: [(String, String)] = [],
        body: Data? = nil, repeatable: Bool, object: String? = nil, precondition: Precondition = .none,
        into sink: (any ContentSink)? = nil, acceptFailure: Bool = false
    ) async throws -> RemoteResponse {
        let present = query.compactMap { name, value in value.map { (name, $0) } }
        let queryText = present.map { "\(NameBytes.percentEncoded($0.0))=\(NameBytes.percentEncoded($0.1))" }.joined(
            separator: "&")
        let signedPath = bucketPath + path
        let url = bucketURL + path + (queryText.isEmpty ? "" : "?" + queryText)
        let payloadHash = SigV4Signer.payloadHash(body)
        let request = RemoteRequest(
            method: method, url: url, headers: [("Host", host)] + headers, body: body, repeatable: repeatable)
        let signer = self.signer
        let response = try await http.send(request, into: sink) { request in
            signer.sign(
                method: request.method.rawValue, path: signedPath.isEmpty ? "/" : signedPath, query: queryText,
                headers: request.headers,
                payloadHash: payloadHash, date: Date()
            ).headers
        }
        if acceptFailure || (200..<300).contains(response.status) { return response }
        throw failure(response, object: object, precondition: precondition)
    }

    /// Refuses, before any request, to read or copy `object` (at `path`, for the message) when storesh read its class
    /// as an archived one (`archived`).
    static func refuseIfArchived(_ object: ObjectMetadata, at path: String) throws {
        if let storageClass = object.cloudStorage.storageClass, StorageClasses.s3Archived.contains(storageClass) {
            throw archived(path)
        }
    }

    /// `x-amz-copy-source` of `key` in this bucket (of its version `version`, when given).
    func copySource(_ key: String, version: String? = nil) -> String {
        "/" + NameBytes.percentEncoded(name) + objectPath(key)
            + (version.map { "?versionId=" + NameBytes.percentEncoded($0) } ?? "")
    }

    /// The server-side encryption (SSE-S3, SSE-KMS) among `headers` (lower-case names), which a copy names again: a
    /// copy that does not is encrypted as the bucket's default. A customer's own key is not the bucket's to give.
    static func encryptionHeaders(_ headers: [(String, String)]) -> [(String, String)] {
        headers.filter { $0.0.hasPrefix("x-amz-server-side-encryption") && keptHeaders.contains($0.0) }
    }

    /// An object in GLACIER or DEEP_ARCHIVE, which is neither read nor copied (so neither changed nor moved) until
    /// restored: refused before a request when storesh read its class, and when the service says so.
    static func archived(_ path: String, detail: String = "") -> StorageError {
        StorageError(
            .invalidArgument,
            "\(path) is archived (S3's GLACIER or DEEP_ARCHIVE class): it cannot be read, changed or moved until it is restored (aws s3api restore-object), and nothing was changed.\(detail)"
        )
    }

    /// A status (and S3's error code, when the answer has a body) as the error it means (spec E).
    func failure(_ response: RemoteResponse, object: String?, precondition: Precondition) -> StorageError {
        // Without libxml2 the status alone says what failed.
        let error = (try? S3XML.error(response.body)) ?? nil
        let detail =
            error.map { error in
                let message = error.message.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }
                return " The service said: \(error.code)\(message.map { ": \($0)" } ?? "")."
            } ?? ""
        let path = "s3://\(name)/\(object ?? "")"
        let credentialsHint = "Check the key from \(configuration.credentials.source) (storesh whoami says which)."
        switch (response.status, error?.code) {
        case (_, "NoSuchBucket"): return .bucketNotFound(name)
        case (_, "InvalidAccessKeyId"), (_, "SignatureDoesNotMatch"), (_, "ExpiredToken"), (_, "InvalidToken"),
            (_, "TokenRefreshRequired"):
            return StorageError(
                .unauthenticated,
                "s3://\(name): the credentials were refused (\(response.status)).\(detail) \(credentialsHint)")
        case (_, "RequestTimeTooSkewed"):
            return StorageError(
                .unauthenticated, "s3://\(name): this machine's clock is too far from the service's.\(detail)")
        case (_, "BadDigest"), (_, "InvalidDigest"):
            return StorageError(
                .nonMatchingChecksum,
                "The service refused the content of \(path): its MD5 is not the one expected.\(detail)")
        case (_, "EntityTooLarge"):
            return StorageError(.invalidArgument, "\(path) is larger than the service takes in one request.\(detail)")
        case (_, "InvalidObjectState"), (_, "ObjectNotInActiveTierError"):
            return Self.archived(path, detail: detail)
        case (_, "InvalidRequest")
        where (error?.message ?? "").replacingOccurrences(of: " ", with: "").contains("ObjectLockConfiguration"):
            return StorageError(
                .invalidArgument,
                "s3://\(name) has no Object Lock (S3 turns it on when a bucket is made): its objects take no hold (temporaryHold) or retention, and nothing was changed.\(detail)"
            )
        case (_, "MetadataTooLarge"):
            return StorageError(
                .invalidArgument, "The metadata of \(path) is over S3's 2 KB of user metadata.\(detail)")
        default:
            return StatusErrors.error(
                StatusErrors.Answer(
                    status: response.status, attempts: response.attempts, message: error?.message, detail: detail),
                bucket: name, bucketURL: "s3://\(name)", object: object,
                audience: .credentials(hint: credentialsHint))
        }
    }

    /// Checks that the bucket is there and the credentials work, so that a mistyped name or a wrong secret is
    /// said at once.
    package func verify() async throws {
        _ = try await send(.GET, "/", query: [("list-type", "2"), ("max-keys", "1")], repeatable: true)
    }

    func objectPath(_ key: String) -> String { "/" + NameBytes.percentEncoded(key, keepingSlashes: true) }

    // MARK: Listing

    package func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        var page = try await Lister.page(
            of: reference, bucket: name, options: options, source: self, tokens: Self.tokens)
        if options.includeMetadata {
            // ListObjectsV2 carries no content type or custom metadata: each item is read (HEAD), many at once.
            page.itemMetadata = try await headAll(page.items)
        }
        return page
    }

    package func storedPage(
        prefix: String, startOffset: String?, continuation: String?, maxResults: Int
    ) async throws
        -> StoredListingPage
    {
        // S3's start-after is exclusive: starting after the name with its last character dropped reaches the name
        // itself (the entries in between are dropped by the lister, which knows the exact bound).
        let startAfter = startOffset.flatMap { $0.isEmpty ? nil : String($0.dropLast()) }.flatMap {
            $0.isEmpty || $0 == prefix ? nil : $0
        }
        let listed = try await listRequest(
            prefix: prefix, delimited: true, startAfter: startAfter, continuation: continuation, maxKeys: maxResults)
        return StoredListingPage(
            prefixes: listed.prefixes, items: listed.items.map(listedMetadata), continuation: listed.continuation)
    }

    private func listRequest(
        prefix: String, delimited: Bool, startAfter: String?, continuation: String?, maxKeys: Int
    ) async throws
        -> (prefixes: [String], items: [S3ListedObject], continuation: String?)
    {
        let response = try await send(
            .GET, "/",
            query: [
                ("list-type", "2"), ("prefix", prefix.isEmpty ? nil : prefix), ("delimiter", delimited ? "/" : nil),
                ("max-keys", String(maxKeys)), ("start-after", continuation == nil ? startAfter : nil),
                ("continuation-token", continuation), ("encoding-type", "url"),
            ], repeatable: true)
        return try S3XML.listing(response.body, bucket: name)
    }

    /// What a listing says of an object, as metadata: no content type or custom metadata (rule S2).
    private func listedMetadata(_ listed: S3ListedObject) -> ObjectMetadata {
        let time = listed.lastModified ?? Timestamp(microseconds: 0)
        return ObjectMetadata(
            bucket: name, fullPath: listed.key, generation: 0, metageneration: 0, size: listed.size, timeCreated: time,
            updated: time, md5Hash: Self.md5(fromEntityTag: listed.etag), entityTag: listed.etag)
    }

    package func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        let listed = try await listRequest(
            prefix: prefix, delimited: false, startAfter: after, continuation: nil,
            maxKeys: min(ListOptions.maximumResults, limit))
        let names = listed.items.map(\.key).filter { name in
            after.map { $0.utf8.lexicographicallyPrecedes(name.utf8) } ?? true
        }
        let objects = try await headAll(names)
        return ObjectScanPage(objects: objects, resumeAfter: listed.continuation == nil ? nil : names.last)
    }

    /// The metadata of `names`, read `readsInParallel` at a time, in their order; names deleted meanwhile are left out.
    private func headAll(_ names: [String]) async throws -> [ObjectMetadata] {
        var results = [ObjectMetadata?](repeating: nil, count: names.count)
        try await withThrowingTaskGroup(of: (Int, ObjectMetadata?).self) { group in
            var next = 0
            func start() {
                let index = next
                next += 1
                group.addTask { (index, try await self.metadataIfPresent(of: ObjectName(names[index]))) }
            }
            while next < min(readsInParallel, names.count) { start() }
            while let (index, metadata) = try await group.next() {
                results[index] = metadata
                if next < names.count { start() }
            }
        }
        return results.compactMap { $0 }
    }

    // MARK: Objects

    package func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        let response = try await send(.HEAD, objectPath(object.rawValue), repeatable: true, object: object.rawValue)
        return try headMetadata(response, key: object.rawValue)
    }

    /// An object's metadata from the headers of a HEAD or GET (rule S2); what storesh does not show is kept for a copy.
    /// `keepsHeaders`: what it read is the live object's, kept for its next copy (not an older version's).
    func headMetadata(_ response: RemoteResponse, key: String, keepsHeaders: Bool = true) throws -> ObjectMetadata {
        let time = response.header("Last-Modified").flatMap { Timestamp(httpDate: $0) } ?? Timestamp(microseconds: 0)
        let entityTag = response.header("ETag")
        var metadata = ObjectMetadata(
            bucket: name, fullPath: key, generation: 0, metageneration: 0,
            size: response.header("Content-Length").flatMap { Int64($0) } ?? 0, timeCreated: time, updated: time,
            md5Hash: response.header("x-amz-server-side-encryption") == "aws:kms"
                ? "" : Self.md5(fromEntityTag: entityTag ?? ""),
            entityTag: entityTag, versionID: response.header("x-amz-version-id").flatMap { $0 == "null" ? nil : $0 })
        for property in WritableProperty.allCases {
            if let value = response.header(property.httpHeader), !value.isEmpty { metadata[property] = value }
        }
        ObjectLock.read(response, into: &metadata.cloudStorage)
        // S3 names no class for STANDARD; storesh keeps none for it either (`CloudStorageFields.storageClass`).
        if let storageClass = response.header("x-amz-storage-class"), !storageClass.isEmpty,
            storageClass != CloudStorageFields.defaultStorageClass
        {
            metadata.cloudStorage.storageClass = storageClass
        }
        var keptHeaders: [(String, String)] = []
        for (headerName, value) in response.headers {
            let lowered = headerName.lowercased()
            if lowered.hasPrefix("x-amz-meta-") {
                metadata.customMetadata[String(lowered.dropFirst("x-amz-meta-".count))] = value
            } else if Self.keptHeaders.contains(lowered) {
                keptHeaders.append((lowered, value))
            }
        }
        if let missing = response.header("x-amz-missing-meta"), missing != "0" {
            throw StorageError(
                .invalidArgument,
                "s3://\(name)/\(key) has \(missing) metadata entries that HTTP headers cannot carry; storesh leaves it alone rather than lose them."
            )
        }
        if keepsHeaders { kept.withLock { $0[ObjectName(stored: key)] = (entityTag, keptHeaders) } }
        return metadata
    }

    /// What a copy must resend for the object to stay as it was, besides storesh's properties.
    static let keptHeaders: Set<String> = [
        "x-amz-server-side-encryption", "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-server-side-encryption-bucket-key-enabled", "expires", "x-amz-website-redirect-location",
    ]

    /// The base64 MD5 an ETag is, when it is one (a single-part upload's `"<32 hex digits>"`); else empty.
    static func md5(fromEntityTag entityTag: String) -> String {
        let digits = String(decoding: entityTag.utf8.filter { $0 != UInt8(ascii: "\"") }, as: UTF8.self)
        guard digits.utf8.count == 32, let bytes = Hexadecimal.decoded(digits) else { return "" }
        return Data(bytes).base64EncodedString()
    }

    package func validateStorable(_ metadata: ObjectMetadata) throws {
        if let field = metadata.cloudStorage.writableFields.first(where: {
            ![.storageClass, .temporaryHold, .retention].contains($0)
        }) {
            throw StorageError.invalidArgument(
                "\(metadata.fullPath): \(field.key) is Cloud Storage's (rule M9); an S3 object has no such field, so nothing was changed."
            )
        }
        if let storageClass = metadata.cloudStorage.storageClass {
            try storageClasses.check(storageClass, bucket: "s3://\(name)/\(metadata.fullPath)")
        }
        guard metadata.contentType != nil else {
            throw StorageError.invalidArgument(
                "\(metadata.fullPath): an S3 object always has a content type (S3 gives binary/octet-stream when none is sent); set another instead of unsetting it."
            )
        }
        var total = 0
        for (key, value) in metadata.customMetadata {
            guard key == key.lowercased() else {
                throw StorageError.invalidArgument(
                    "custom.\(key): S3 keeps custom metadata keys in lower case (x-amz-meta-\(key.lowercased())); name it custom.\(key.lowercased())."
                )
            }
            guard !key.isEmpty, key.utf8.allSatisfy(Self.isTokenByte) else {
                throw StorageError.invalidArgument(
                    "custom.\(key): an S3 custom metadata key is sent as a header name (x-amz-meta-KEY), so it may hold letters, digits and -_.!#$%&'*+^`|~ only."
                )
            }
            guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw StorageError.invalidArgument(
                    "custom.\(key): S3 takes printable ASCII in metadata values (they travel as HTTP headers); this value has other characters."
                )
            }
            total += key.utf8.count + value.utf8.count
        }
        guard total <= Self.largestUserMetadata else {
            throw StorageError.invalidArgument(
                "\(metadata.fullPath): the custom metadata would take \(total) bytes; S3 keeps at most 2 KB (keys and values)."
            )
        }
        for property in WritableProperty.allCases {
            if let value = metadata[property], value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw StorageError.invalidArgument(
                    "\(property.rawValue) of \(metadata.fullPath): S3 sends it as a header, which cannot hold control characters."
                )
            }
        }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "-_.!#$%&'*+^`|~".utf8.contains(byte)
        }
    }

    /// The headers that give an object `metadata`'s writable properties (an upload, or a copy with REPLACE).
    private static func propertyHeaders(_ metadata: ObjectMetadata) -> [(String, String)] {
        var headers: [(String, String)] = []
        for property in WritableProperty.allCases {
            if let value = metadata[property] { headers.append((property.httpHeader, value)) }
        }
        for (key, value) in metadata.customMetadata.sortedByKeyBytes { headers.append(("x-amz-meta-" + key, value)) }
        if let storageClass = metadata.cloudStorage.storageClass {
            headers.append(("x-amz-storage-class", storageClass))
        }
        return headers + ObjectLock.headers(metadata.cloudStorage)
    }

    package func read(_ object: ObjectName) async throws -> Data {
        try await send(.GET, objectPath(object.rawValue), repeatable: true, object: object.rawValue).body
    }

    /// A download pinned to the object's ETag (`If-Match`): when the answer breaks off midway, it goes on from the
    /// byte it reached with a ranged GET, so a large file is never fetched twice, and a change of the object
    /// meanwhile is precondition-failed rather than a file of two versions.
    package func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        let key = object.rawValue
        let pinned = try await metadata(of: object)
        let counter = CountingSink(sink)
        var resumes = 0
        while true {
            let offset = counter.count
            var headers: [(String, String)] = pinned.entityTag.map { [("If-Match", $0)] } ?? []
            if offset > 0 { headers.append(("Range", "bytes=\(offset)-")) }
            do {
                let response = try await send(
                    .GET, objectPath(key), headers: headers, repeatable: true, object: key,
                    precondition: .matches(pinned), into: counter)
                if offset > 0, response.status != 206 {
                    throw StorageError(
                        .unavailable,
                        "The download of \(key) broke off after \(offset) bytes and the service did not resume it (it ignored the range)."
                    )
                }
                break
            } catch let error as StorageError where error.code == .unavailable && counter.count > offset && resumes < 20
            {
                // It broke off after some progress: go on from there (bounded, and only while it progresses).
                resumes += 1
            }
        }
        guard counter.count == pinned.size else {
            throw StorageError(
                .unavailable, "The download of \(key) ended after \(counter.count) of \(pinned.size) bytes.")
        }
        return counter.count
    }

    // MARK: Changes

    package func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        try await updateByReadingThenApplying(of: object, update, precondition: precondition)
    }

    /// Rule S3: a copy of the object onto itself that replaces its metadata with `after`'s, guarded by the ETag and
    /// the time `before` was read at (a concurrent change of content changes the ETag; one of metadata alone, the
    /// time, to the second).
    package func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        try validateStorable(after)
        // A hold or a retention alone is put on the object as it is (S3's own calls, no new version); anything else
        // writes it again, which neither may be (on S3 each version keeps its own: the one written over would
        // stay held, out of sight).
        var rest = after
        (rest.cloudStorage.temporaryHold, rest.cloudStorage.retention) = (
            before.cloudStorage.temporaryHold, before.cloudStorage.retention
        )
        if before.differences(to: rest).isEmpty { return try await applyLock(of: object, from: before, to: after) }
        if var refusal = before.protection(against: .overwritten, now: Timestamp(date: Date())) {
            refusal.message +=
                " On S3 a change of metadata writes the object again (a copy onto itself); change its hold or retention alone, or release it first."
            throw refusal
        }
        try Self.refuseIfArchived(before, at: "s3://\(name)/\(object.rawValue)")
        guard before.size <= Self.largestCopy else {
            throw StorageError.invalidArgument(
                "\(object.rawValue) is \(before.size) bytes; S3 can rewrite the metadata of objects up to 5 GiB only (CopyObject's limit)."
            )
        }
        guard let entityTag = before.entityTag else {
            throw StorageError.internalError("\(object.rawValue) was read without an ETag; the update was not sent.")
        }
        var extra = kept.withLock { $0[object] }
        if extra?.entityTag != entityTag || !configuration.isAWS {
            // Not read in this run (a resumed journal): read what else the object has, and stop if it changed. A
            // store other than AWS may ignore the copy's conditions: the object is read just before, which narrows
            // the window in which a concurrent change could be overwritten to the time of one copy.
            let current = try await metadata(of: object)
            // Already as planned (a resumed run's change that landed before the journal heard of it): nothing to send.
            if current.differences(to: after).isEmpty { return current }
            guard current.entityTag == entityTag, current.updated == before.updated else {
                throw StorageError.preconditionFailed(object.rawValue, .matches(before), actual: current)
            }
            extra = kept.withLock { $0[object] }
        }
        var headers: [(String, String)] = [
            ("x-amz-copy-source", copySource(object.rawValue)), ("x-amz-metadata-directive", "REPLACE"),
            ("x-amz-copy-source-if-match", entityTag),
            ("x-amz-copy-source-if-unmodified-since", before.updated.httpDate),
        ]
        headers += Self.propertyHeaders(after) + (extra?.headers ?? [])
        let response = try await send(
            .PUT, objectPath(object.rawValue), headers: headers, repeatable: true, object: object.rawValue,
            precondition: .matches(before), acceptFailure: true)
        completions.forget()
        // A copy may answer 200 with an error in its body.
        if (200..<300).contains(response.status), try S3XML.error(response.body) == nil {
            // The copy's answer says what changed; the rest is `after`.
            var result = after
            result.entityTag = try S3XML.value("ETag", in: response.body) ?? entityTag
            if let time = try S3XML.value("LastModified", in: response.body).flatMap({ Timestamp(rfc3339: $0) }) {
                result.timeCreated = time
                result.updated = time
            }
            result.versionID = response.header("x-amz-version-id") ?? before.versionID
            kept.withLock { $0[object] = (result.entityTag, extra?.headers ?? []) }
            return result
        }
        if response.attempts > 1, response.status == 412, let current = try await metadataIfPresent(of: object),
            current.differences(to: after).isEmpty
        {
            // A repeat refused because the first attempt landed: the object is as planned.
            return current
        }
        throw failure(response, object: object.rawValue, precondition: .matches(before))
    }

    package func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        let headers = try uploadHeaders(object, options)
        if content.count > multipartThreshold {
            return try await multipartUpload(
                size: content.count,
                read: { offset, length in content.subdata(in: offset..<min(content.count, offset + length)) },
                object: object, headers: headers, precondition: precondition)
        }
        let md5 = ContentHash.md5Base64(content)
        if let expected = options.expectedMD5, expected != md5 {
            throw StorageError(
                .nonMatchingChecksum, "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        let response = try await send(
            .PUT, objectPath(object.rawValue),
            headers: headers + [("Content-MD5", md5)] + Self.conditions(precondition), body: content,
            repeatable: precondition.isConditional, object: object.rawValue, precondition: precondition,
            acceptFailure: true)
        return try await written(response, object: object, precondition: precondition, md5: md5)
    }

    package func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        guard source.size > Int64(multipartThreshold) else {
            return try await write(try source.readAll(), to: object, options: options, precondition: precondition)
        }
        if let expected = options.expectedMD5, expected != source.md5Base64 {
            throw StorageError(
                .nonMatchingChecksum,
                "The content's MD5 is \(source.md5Base64), not the expected \(expected); nothing was written.")
        }
        return try await multipartUpload(
            size: Int(source.size), read: { offset, length in try source.read(offset: Int64(offset), length: length) },
            object: object, headers: try uploadHeaders(object, options), precondition: precondition)
    }

    /// An upload's headers: its properties (content type guessed from the name when not given, as the SDKs do).
    private func uploadHeaders(_ object: ObjectName, _ options: WriteOptions) throws -> [(String, String)] {
        try CustomMetadataLimits.validate(options.customMetadata)
        var metadata = ObjectMetadata(
            bucket: name, fullPath: object.rawValue, generation: 0, metageneration: 0, size: 0,
            timeCreated: Timestamp(microseconds: 0),
            updated: Timestamp(microseconds: 0), md5Hash: "", customMetadata: options.customMetadata)
        for (property, value) in options.properties { metadata[property] = value }
        if metadata.contentType == nil { metadata.contentType = ContentType.guess(forName: object.rawValue) }
        try validateStorable(metadata)
        return Self.propertyHeaders(metadata)
    }

    /// S3's conditional write headers: `If-None-Match: *` for a create, `If-Match` for a replacement.
    static func conditions(_ precondition: Precondition) -> [(String, String)] {
        if precondition.generation == 0 { return [("If-None-Match", "*")] }
        if let entityTag = precondition.entityTag { return [("If-Match", entityTag)] }
        return []
    }

    /// The object a write made, read back (S3's answer to a PUT carries no metadata); a repeat refused because
    /// the first attempt landed counts as done when the object has the content written.
    private func written(
        _ response: RemoteResponse, object: ObjectName, precondition: Precondition, md5: String?
    ) async throws
        -> ObjectMetadata
    {
        completions.forget()
        if !(200..<300).contains(response.status) {
            if response.attempts > 1, response.status == 412, let md5,
                let current = try await metadataIfPresent(of: object),
                current.md5Hash == md5
            {
                return current
            }
            throw failure(response, object: object.rawValue, precondition: precondition)
        }
        return try await metadata(of: object)
    }

    /// An upload in parts of `multipartThreshold` bytes, read one at a time; abandoned parts are discarded when
    /// anything fails. The object appears only when the last request completes it.
    private func multipartUpload(
        size: Int, read: (Int, Int) throws -> Data, object: ObjectName, headers: [(String, String)],
        precondition: Precondition
    ) async throws -> ObjectMetadata {
        guard size <= 10_000 * multipartThreshold else {
            throw StorageError.invalidArgument(
                "\(object.rawValue): S3 takes at most 10,000 parts, \(10_000 * multipartThreshold) bytes in parts of this size."
            )
        }
        let path = objectPath(object.rawValue)
        let started = try await send(
            .POST, path, query: [("uploads", "")], headers: headers, repeatable: true, object: object.rawValue)
        guard let uploadID = try S3XML.value("UploadId", in: started.body) else {
            throw StorageError.internalError(
                "The service started no multipart upload for \(object.rawValue) (no UploadId).")
        }
        do {
            var parts: [(number: Int, entityTag: String)] = []
            var offset = 0
            while offset < size || parts.isEmpty {
                let piece = try read(offset, min(multipartThreshold, size - offset))
                let number = parts.count + 1
                // A part sent again replaces itself: repeatable.
                let response = try await send(
                    .PUT, path, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                    headers: [("Content-MD5", ContentHash.md5Base64(piece))], body: piece, repeatable: true,
                    object: object.rawValue)
                guard let entityTag = response.header("ETag") else {
                    throw StorageError.internalError(
                        "The service gave no ETag for part \(number) of \(object.rawValue).")
                }
                parts.append((number, entityTag))
                offset += piece.count
                if piece.isEmpty { break }
            }
            let manifest =
                "<CompleteMultipartUpload>"
                + parts.map {
                    "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(MarkupText.escaped($0.entityTag))</ETag></Part>"
                }.joined()
                + "</CompleteMultipartUpload>"
            let response = try await send(
                .POST, path, query: [("uploadId", uploadID)],
                headers: [("Content-Type", "application/xml")] + Self.conditions(precondition),
                body: Data(manifest.utf8), repeatable: true, object: object.rawValue, precondition: precondition,
                acceptFailure: true)
            if (200..<300).contains(response.status), let error = try S3XML.error(response.body) {
                throw StorageError(
                    .internalError, "The service did not complete the upload of \(object.rawValue): \(error.code).")
            }
            if response.status == 404, response.attempts > 1 {
                // The first completion landed and its answer was lost: the upload id is gone, the object is there.
                return try await metadata(of: object)
            }
            return try await written(response, object: object, precondition: precondition, md5: nil)
        } catch {
            _ = try? await send(
                .DELETE, path, query: [("uploadId", uploadID)], repeatable: true, object: object.rawValue,
                acceptFailure: true)
            throw error
        }
    }

    /// S3 deletes a missing key without complaint, and not every S3 store honours `If-Match` on a delete: the
    /// object is read first, so that a missing one is object-not-found and one that changed is precondition-failed.
    package func delete(_ object: ObjectName, precondition: Precondition) async throws {
        let current = try await metadata(of: object)
        guard precondition.isSatisfied(by: current) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: current)
        }
        var headers: [(String, String)] = []
        if let entityTag = precondition.entityTag { headers.append(("If-Match", entityTag)) }
        _ = try await send(
            .DELETE, objectPath(object.rawValue), headers: headers, repeatable: true, object: object.rawValue,
            precondition: precondition)
        completions.forget()
    }
}

/// `mv` on S3, which has no move: CopyObject of the source as read (its ETag) onto the destination as read (or
/// where nothing is), then DeleteObject of the source with that ETag. A failure of the delete leaves the object in
/// both places, and says so (`HalfMove`).
extension S3Bucket: ObjectMoves {
    package var movesInOneStep: Bool { false }

    package func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        let current = try await metadata(of: source)
        guard sourcePrecondition.isSatisfied(by: current) else {
            throw StorageError.preconditionFailed(source.rawValue, sourcePrecondition, actual: current)
        }
        try Self.refuseIfArchived(current, at: "s3://\(name)/\(source.rawValue)")
        guard !NameBytes.sameBytes(source.rawValue, destination.rawValue) else {
            throw StorageError.invalidArgument("\(MessageText.name(source.rawValue)) cannot be moved onto itself.")
        }
        guard current.size <= Self.largestCopy else {
            throw StorageError.invalidArgument(
                "\(source.rawValue) is \(current.size) bytes; S3 copies objects of up to 5 GiB in one request (CopyObject's limit), so it was not moved."
            )
        }
        guard let entityTag = current.entityTag else {
            throw StorageError.internalError("\(source.rawValue) was read without an ETag; it was not moved.")
        }
        let existing = try await metadataIfPresent(of: destination)
        guard destinationPrecondition.isSatisfied(by: existing) else {
            throw StorageError.preconditionFailed(destination.rawValue, destinationPrecondition, actual: existing)
        }
        let guarded = existing.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
        // A copy takes the source's metadata (COPY) but not its class nor its encryption, which it names again: the
        // destination would be STANDARD, encrypted as the bucket's default.
        let encryption = Self.encryptionHeaders(
            kept.withLock { $0[source]?.entityTag == entityTag ? $0[source]?.headers ?? [] : [] })
        var headers: [(String, String)] = [
            ("x-amz-copy-source", copySource(source.rawValue)),
            ("x-amz-metadata-directive", "COPY"), ("x-amz-copy-source-if-match", entityTag),
        ]
        if let storageClass = current.cloudStorage.storageClass {
            headers.append(("x-amz-storage-class", storageClass))
        }
        headers += encryption + Self.conditions(guarded)
        let response = try await send(
            .PUT, objectPath(destination.rawValue), headers: headers, repeatable: true, object: destination.rawValue,
            precondition: guarded, acceptFailure: true)
        completions.forget()
        guard (200..<300).contains(response.status), try S3XML.error(response.body) == nil else {
            throw failure(response, object: destination.rawValue, precondition: guarded)
        }
        let arrived = try await metadata(of: destination)
        do {
            try await delete(source, precondition: Precondition.sameContent(as: current))
        } catch let error as StorageError {
            var failure = error
            failure.message =
                "\(destination.rawValue) was copied from \(source.rawValue), which was not deleted: \(error.message) Both objects are there now."
            throw HalfMove(arrived: arrived, failure: failure)
        }
        return arrived
    }
}

/// S3 Object Lock as rule M9's fields (rule S2): the legal hold is `temporaryHold` (an object under it is neither
/// deleted nor written again until it is released), a retention is `retention`, GOVERNANCE being Unlocked (shortened
/// or removed only by a change that says it overrides it: `x-amz-bypass-governance-retention`) and COMPLIANCE
/// Locked (only lengthened). S3 has no event-based hold.
enum ObjectLock {
    /// What a HEAD says of the object's lock (S3 sends it to whoever may read it).
    static func read(_ response: RemoteResponse, into fields: inout CloudStorageFields) {
        if response.header("x-amz-object-lock-legal-hold") == "ON" { fields.temporaryHold = true }
        if let mode = response.header("x-amz-object-lock-mode").flatMap(mode(named:)),
            let until = response.header("x-amz-object-lock-retain-until-date").flatMap(Timestamp.init(rfc3339:))
        {
            fields.retention = ObjectRetention(mode: mode, retainUntilTime: until)
        }
    }

    static func mode(named name: String) -> ObjectRetention.Mode? {
        switch name {
        case "GOVERNANCE": .unlocked
        case "COMPLIANCE": .locked
        default: nil
        }
    }

    static func name(of mode: ObjectRetention.Mode) -> String { mode == .unlocked ? "GOVERNANCE" : "COMPLIANCE" }

    /// The headers that give a new version (an upload, a copy) the hold and retention of `fields`; none when it
    /// has neither, so that a bucket without Object Lock takes the write.
    static func headers(_ fields: CloudStorageFields) -> [(String, String)] {
        var headers: [(String, String)] = []
        if fields.temporaryHold { headers.append(("x-amz-object-lock-legal-hold", "ON")) }
        // A retention whose time has passed keeps nothing, and S3 takes only a time to come.
        if let retention = fields.retention, retention.retainUntilTime > Timestamp(date: Date()) {
            headers += [
                ("x-amz-object-lock-mode", name(of: retention.mode)),
                ("x-amz-object-lock-retain-until-date", retention.retainUntilTime.rfc3339),
            ]
        }
        return headers
    }

    static let namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

    /// PutObjectLegalHold's body.
    static func legalHoldBody(_ on: Bool) -> Data {
        Data("<LegalHold xmlns=\"\(namespace)\"><Status>\(on ? "ON" : "OFF")</Status></LegalHold>".utf8)
    }

    /// PutObjectRetention's body; an empty retention removes it.
    static func retentionBody(_ retention: ObjectRetention?) -> Data {
        guard let retention else { return Data("<Retention xmlns=\"\(namespace)\"></Retention>".utf8) }
        return Data(
            "<Retention xmlns=\"\(namespace)\"><Mode>\(name(of: retention.mode))</Mode><RetainUntilDate>\(retention.retainUntilTime.rfc3339)</RetainUntilDate></Retention>"
                .utf8)
    }
}

extension S3Bucket {
    /// A change of the hold or retention alone (rule M9), put on the version read (`versionId`): the object is read
    /// again first and must be as it was (its ETag and version), and after, to say whether the version changed is
    /// still the live one. A shorter or removed GOVERNANCE retention is sent with the bypass the change was planned
    /// with (the core refused it otherwise).
    func applyLock(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws -> ObjectMetadata {
        let current = try await metadata(of: object)
        if current.differences(to: after).isEmpty { return current }
        guard current.entityTag == before.entityTag, current.versionID == before.versionID,
            current.differences(to: before).isEmpty
        else {
            throw StorageError.preconditionFailed(object.rawValue, .matches(before), actual: current)
        }
        let version: [(String, String?)] = [("versionId", current.versionID)]
        if current.cloudStorage.temporaryHold != after.cloudStorage.temporaryHold {
            let body = ObjectLock.legalHoldBody(after.cloudStorage.temporaryHold)
            _ = try await send(
                .PUT, objectPath(object.rawValue), query: [("legal-hold", "")] + version,
                headers: [("Content-MD5", ContentHash.md5Base64(body))],
                body: body, repeatable: true, object: object.rawValue)
        }
        if current.cloudStorage.retention != after.cloudStorage.retention {
            let body = ObjectLock.retentionBody(after.cloudStorage.retention)
            var headers = [("Content-MD5", ContentHash.md5Base64(body))]
            if let old = current.cloudStorage.retention, old.mode == .unlocked,
                after.cloudStorage.retention.map({ $0.retainUntilTime < old.retainUntilTime || $0.mode != old.mode })
                    ?? true
            {
                headers.append(("x-amz-bypass-governance-retention", "true"))
            }
            _ = try await send(
                .PUT, objectPath(object.rawValue), query: [("retention", "")] + version, headers: headers,
                body: body, repeatable: true, object: object.rawValue)
        }
        completions.forget()
        let landed = try await metadata(of: object)
        guard landed.versionID == current.versionID else {
            throw StorageError(
                .preconditionFailed,
                "\(object.rawValue) was written again while its hold or retention was changed: the change is on the version read (\(current.versionID ?? "null")), not on the live one."
            )
        }
        return landed
    }
}
