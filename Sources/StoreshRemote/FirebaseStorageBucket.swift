import Foundation
import NIOHTTP1
import StoreshCore
import StoreshWire
import Synchronization

/// Someone signed in as an end user of the app (rule F1): the ID token their requests carry.
struct EndUser: Sendable {
    /// `Authorization: Firebase TOKEN`; never printed.
    var idToken: String
    /// Who, for messages: the token's `user_id` (or `sub`), read without checking the signature (the service checks).
    var uid: String?
    var emulatorToken: Bool

    var description: String {
        let who = uid.map { "user \($0)" } ?? "the user of an ID token whose claims could not be read"
        return emulatorToken ? "\(who) (an unsigned emulator token)" : "\(who) (Firebase ID token)"
    }

    /// Who a JWT names (its `user_id`, else its `sub`), read without checking its signature; nil when its claims
    /// cannot be read or name no one.
    static func uid(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, let data = Base64URL.decoded(parts[1]), let claims = try? JSONValue.parse(data) else {
            return nil
        }
        return claims[member: "user_id"]?.string ?? claims[member: "sub"]?.string
    }

    /// An unsigned ID token as the Firebase emulator suite makes one (alg none, no signature), for `project`.
    static func emulatorToken(uid: String, claims: [String: String], project: String) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var members: [(String, JSONValue)] = [
            ("iss", .string("https://securetoken.google.com/\(project)")), ("aud", .string(project)),
            ("auth_time", .integer(now)), ("iat", .integer(now)), ("exp", .integer(now + 3600)),
            ("sub", .string(uid)), ("user_id", .string(uid)),
            ("firebase", .object([("sign_in_provider", .string("custom")), ("identities", .object([]))])),
        ]
        for (key, value) in claims.sorted(by: { $0.key < $1.key }) {
            let typed: JSONValue =
                value == "true"
                ? .bool(true) : value == "false" ? .bool(false) : Int64(value).map { .integer($0) } ?? .string(value)
            members.append((key, typed))
        }
        func encoded(_ value: JSONValue) -> String { Base64URL.encoded(Data(value.serialized.utf8)) }
        return encoded(.object([("alg", .string("none")), ("typ", .string("JWT"))])) + "." + encoded(.object(members))
            + "."
    }
}

/// A bucket as one end user of the app reaches it (rule F1): through the Firebase Storage REST API v0
/// (`/v0/b/BUCKET/o…`), the one the Firebase SDKs use, where lists apply L3 and page themselves and the project's
/// security rules decide every request. The v0 API has no preconditions: a change is checked against the object
/// read just before it, which narrows the window for a concurrent change but cannot close it (`guardsChanges`).
final class FirebaseStorageBucket: Bucket, SignedInUser, Sendable {
    let bucket: String
    /// `https://firebasestorage.googleapis.com`, or the emulator's base URL.
    let baseURL: String
    let http: RemoteHTTP
    let user: EndUser

    /// Where the answers to this user's requests are kept (the signing-in bucket's).
    let answers: LastServiceAnswer

    init(bucket: String, baseURL: String, http: RemoteHTTP, user: EndUser, answers: LastServiceAnswer) {
        self.answers = answers
        self.bucket = bucket
        self.baseURL = baseURL
        self.http = http
        self.user = user
    }

    var name: String { bucket }
    /// Who is signed in: the user, as messages name them.
    var who: String { user.description }
    var capabilities: BucketCapabilities { [] }
    /// The service's own tokens, sent back as they came (`ServicePageTokens`).
    var pageTokens: any PageTokenFormat { ServicePageTokens() }
    var guardsChanges: Bool { false }
    var scheme: String { "gs" }
    /// What the v0 API accepts is the JSON API's Firebase slice: Cloud Storage's own fields (rule M9) are not in it.
    var storageClasses: StorageClasses { .none }
    func validateStorable(_ metadata: ObjectMetadata) throws {
        if let field = metadata.cloudStorage.writableFields.first {
            throw StorageError.invalidArgument(
                "\(metadata.fullPath): \(field.key) is Cloud Storage's own field (rule M9), which the Firebase Storage API does not carry; change it through gs:// with Cloud Storage credentials. Nothing was changed."
            )
        }
    }
    var transactions: (any TransactionalBucket)? { nil }
    var snapshotStore: (any SnapshotStore)? { nil }
    var immediateReads: (any ImmediateReads)? { nil }
    var rulesStore: (any RulesStore)? { nil }
    var settingsStore: (any BucketSettingsStore)? { nil }
    var objectVersions: (any ObjectVersions)? { nil }
    /// The Firebase Storage API has no move (nor copy).
    var objectMoves: (any ObjectMoves)? { nil }
    /// This bucket is the signed-in mode of a `FirebaseProjectBucket`, which signs in and out.
    var endUserSignIn: (any EndUserSignIn)? { nil }
    var batchedChanges: (any BatchedChanges)? { nil }
    var uniformUpdates: (any UniformUpdates)? { nil }
    var asTransaction: (any BucketTransaction)? { nil }
    var accessDescription: String? {
        "gs://\(bucket) through the Firebase Storage API v0 at \(baseURL), as \(user.description): the project's security rules decide, and changes carry no preconditions (the v0 API has none)"
    }

    /// The connections are the bucket's that signed in, closed with it.
    func close() {}

    /// Sends a request of the v0 API as `FirebaseWire` builds it (and `explain` shows it), as `user`.
    private func send(
        _ wire: WireRequest, headers: [(String, String)] = [], object: String?, into sink: (any ContentSink)? = nil
    ) async throws -> RemoteResponse {
        try await send(
            wire.method, url: baseURL + wire.target, headers: headers, body: wire.body, object: object, into: sink)
    }

    /// Sends a request to `url` (an upload session's, which the service names whole) as `user`.
    private func send(
        _ methodName: String, url: String, headers: [(String, String)], body: Data?, object: String?,
        into sink: (any ContentSink)? = nil
    ) async throws -> RemoteResponse {
        let method = HTTPMethod(rawValue: methodName)
        // No preconditions: only reads are repeated.
        let request = RemoteRequest(method: method, url: url, headers: headers, body: body, repeatable: method == .GET)
        let token = user.idToken
        let response = try await http.send(request, into: sink) { "Firebase \(token)" }
        // The service's rules decided this request (rule F1): kept for `rules why`, with the decision when it says it.
        answers.keep(
            ServiceAnswer(
                request: "\(methodName) gs://\(bucket)/\(object ?? "")", status: response.status,
                decision: response.header(RulesDecisionHeader.name).map(RulesDecisionHeader.decision(from:))))
        guard (200..<300).contains(response.status) else { throw failure(response, object: object) }
        return response
    }

    /// A refusal in the words of spec E (the messages the SDKs give: `StatusErrors`).
    func failure(_ response: RemoteResponse, object: String?) -> StorageError {
        StatusErrors.error(
            StatusErrors.Answer(
                status: response.status, attempts: response.attempts,
                message: CloudStorageJSON.errorMessage(response.body)),
            bucket: bucket, bucketURL: "gs://\(bucket)", object: object, audience: .securityRules)
    }

    /// An object of the v0 API (`ObjectResource` reads it as `storesh serve` writes it).
    func metadata(_ data: Data) throws -> ObjectMetadata { try ObjectResource.firebaseMetadata(data, bucket: bucket) }

    func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        // Checked here, and sent only when asked for, as the SDKs do (the service's default is the same 1000).
        _ = try options.validatedMaxResults()
        let request = FirebaseWire.list(
            bucket: bucket, prefix: reference.listingPrefix, maxResults: options.maxResults,
            pageToken: options.pageToken)
        let response: RemoteResponse
        do {
            response = try await send(request, object: nil)
        } catch let error as StorageError where error.code == .unauthorized {
            throw StorageError.unauthorized(bucket: bucket, path: reference.fullPath)
        }
        var page = try FirebaseWire.listPage(response.body)
        if options.includeMetadata {
            // The v0 list carries names only: each item's metadata is a request of its own, as in the SDKs.
            var metadata: [ObjectMetadata] = []
            for item in page.items { metadata.append(try await self.metadata(ofName: item)) }
            page.itemMetadata = metadata
        }
        return page
    }

    /// Every object under `prefix`, in name order, walked folder by folder (the v0 API lists with a delimiter only).
    func everything(under prefix: String) async throws -> [ObjectMetadata] {
        let slash =
            prefix.utf8.lastIndex(of: UInt8(ascii: "/")).map {
                prefix.utf8.distance(from: prefix.utf8.startIndex, to: $0) + 1
            } ?? 0
        var folders = [StoragePath(normalizing: NameBytes.prefix(of: prefix, byteCount: slash))]
        var names: [String] = []
        var visited = 0
        while let folder = folders.popLast() {
            visited += 1
            guard visited <= 1_000_000 else {
                throw StorageError.internalError("More than a million folders under \(prefix).")
            }
            var token: String?
            repeat {
                let page = try await list(folder, options: ListOptions(pageToken: token))
                names += page.items.filter { $0.utf8.starts(with: prefix.utf8) }
                folders += page.prefixes.filter {
                    ($0 + "/").utf8.starts(with: prefix.utf8) || prefix.utf8.starts(with: ($0 + "/").utf8)
                }
                .map { StoragePath(normalizing: $0) }
                token = page.nextPageToken
            } while token != nil
        }
        names.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var objects: [ObjectMetadata] = []
        for name in names { objects.append(try await metadata(ofName: name)) }
        return objects
    }

    func metadata(ofName name: String) async throws -> ObjectMetadata {
        try metadata(try await send(FirebaseWire.metadata(bucket: bucket, object: name), object: name).body)
    }

    func metadata(of object: ObjectName) async throws -> ObjectMetadata { try await metadata(ofName: object.rawValue) }

    func read(_ object: ObjectName) async throws -> Data {
        try await send(FirebaseWire.download(bucket: bucket, object: object.rawValue), object: object.rawValue).body
    }

    func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        let counter = CountingSink(sink)
        _ = try await send(
            FirebaseWire.download(bucket: bucket, object: object.rawValue), object: object.rawValue, into: counter)
        return counter.count
    }

    /// Every object under `prefix` after `after`, walked whole at once (the v0 API has no flat listing to resume):
    /// one page.
    func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        let all = try await everything(under: prefix)
        return ObjectScanPage(
            objects: all.filter { object in
                after.map { $0.utf8.lexicographicallyPrecedes(object.fullPath.utf8) } ?? true
            },
            resumeAfter: nil)
    }

    func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws -> UpdateResult {
        try await updateByReadingThenApplying(of: object, update, precondition: precondition)
    }

    /// The v0 API has no preconditions: the object is read just before the change and compared with the state the
    /// change was computed from, which narrows the window for a concurrent change but cannot close it.
    func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws -> ObjectMetadata {
        let name = object.rawValue
        if !CloudStorageFieldsUpdate(from: before.cloudStorage, to: after.cloudStorage).isEmpty {
            try validateStorable(after)
        }
        let current = try await metadata(ofName: name)
        guard current.generation == before.generation, current.metageneration == before.metageneration else {
            throw StorageError.preconditionFailed(
                name, Precondition(generation: before.generation, metageneration: before.metageneration),
                actual: current)
        }
        let response = try await send(
            FirebaseWire.patch(bucket: bucket, object: name, body: CloudStorageJSON.patchBody(from: before, to: after)),
            headers: [("Content-Type", "application/json")], object: name)
        return try metadata(response.body)
    }

    func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws -> ObjectMetadata {
        let name = object.rawValue
        let (resource, contentType) = try CloudStorageBucket.uploadResource(object, options)
        try await require(precondition, name)
        let upload = CloudStorageJSON.multipartUpload(resource: resource, contentType: contentType, content: content)
        var request = FirebaseWire.upload(bucket: bucket, object: name)
        request.body = upload.body
        let response = try await send(
            request, headers: [("Content-Type", upload.contentType), ("X-Goog-Upload-Protocol", "multipart")],
            object: name)
        return try metadata(response.body)
    }

    /// Content up to this size goes in one multipart upload; larger content in a resumable upload of pieces this
    /// size (a multiple of the service's 256 KiB granularity), so that it is never in memory whole.
    static let uploadPieceBytes = 8 << 20

    /// A large file as the SDKs upload one (`putFile`): a resumable session (`X-Goog-Upload-Command: start`), then
    /// its pieces, the last one finalizing. A piece whose answer is lost is not sent again blindly: the session is
    /// asked how much it holds (`query`) and the upload goes on from there.
    func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        guard source.size > Int64(Self.uploadPieceBytes) else {
            return try await write(try source.readAll(), to: object, options: options, precondition: precondition)
        }
        let name = object.rawValue
        let (resource, contentType) = try CloudStorageBucket.uploadResource(object, options)
        try await require(precondition, name)
        let size = source.size
        let session = try await send(
            FirebaseWire.resumableStart(bucket: bucket, object: name, resource: Data(resource.serialized.utf8)),
            headers: [
                ("Content-Type", "application/json"), ("X-Goog-Upload-Protocol", "resumable"),
                ("X-Goog-Upload-Command", "start"),
                ("X-Goog-Upload-Header-Content-Length", String(size)),
                ("X-Goog-Upload-Header-Content-Type", contentType),
            ], object: name)
        guard let uploadURL = session.header("X-Goog-Upload-URL") else {
            throw StorageError.internalError(
                "The service opened no upload session for \(name) (no X-Goog-Upload-URL header).")
        }
        var offset: Int64 = 0
        var rounds = 0
        while true {
            rounds += 1
            guard rounds <= 4 * (Int(size) / Self.uploadPieceBytes + 2) else {
                throw StorageError(.unavailable, "The upload of \(name) made no progress; nothing was written.")
            }
            let length = Int(min(Int64(Self.uploadPieceBytes), size - offset))
            let last = offset + Int64(length) == size
            let response: RemoteResponse
            do {
                response = try await send(
                    "POST", url: uploadURL,
                    headers: [
                        ("X-Goog-Upload-Command", last ? "upload, finalize" : "upload"),
                        ("X-Goog-Upload-Offset", String(offset)),
                    ],
                    body: try source.read(offset: offset, length: length), object: name)
            } catch let error as StorageError where error.code == .unavailable {
                let status = try await send(
                    "POST", url: uploadURL, headers: [("X-Goog-Upload-Command", "query")], body: nil, object: name)
                if status.header("X-Goog-Upload-Status") == "final" { return try await metadata(ofName: name) }
                guard let received = status.header("X-Goog-Upload-Size-Received").flatMap(Int64.init), received <= size
                else {
                    throw error
                }
                offset = received
                continue
            }
            if last { return try metadata(response.body) }
            offset += Int64(length)
        }
    }

    /// The v0 API has no preconditions: the object is read just before the change, which narrows the window for a
    /// concurrent change but cannot close it.
    private func require(_ precondition: Precondition, _ name: String) async throws {
        guard precondition != .none else { return }
        let current = try? await metadata(ofName: name)
        guard precondition.isSatisfied(by: current) else {
            throw StorageError.preconditionFailed(name, precondition, actual: current)
        }
    }

    func delete(_ object: ObjectName, precondition: Precondition) async throws {
        let name = object.rawValue
        try await require(precondition, name)
        _ = try await send(FirebaseWire.delete(bucket: bucket, object: name), object: name)
    }
}

/// The last answer the service gave a signed-in user, shared by the user's bucket and the bucket they signed in to.
final class LastServiceAnswer: Sendable {
    private let answer = Mutex<ServiceAnswer?>(nil)

    var last: ServiceAnswer? { answer.withLock { $0 } }

    func keep(_ answer: ServiceAnswer?) { self.answer.withLock { $0 = answer } }
}

/// The page tokens of the Firebase v0 API: the service's own, which storesh sends back as they came. Those of
/// `storesh serve` are its bucket files' (`LocalPageTokens`), which `page token` shows; Cloud Storage's are opaque.
struct ServicePageTokens: PageTokenFormat {
    func token(for position: ListPosition, bucket: String) -> String {
        LocalPageTokens().token(for: position, bucket: bucket)
    }

    func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        try LocalPageTokens().position(decoding: token, bucket: bucket, prefix: prefix)
    }

    func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        do {
            return try LocalPageTokens().contents(of: token)
        } catch {
            throw .invalidArgument(
                "This page token is the service's own: Cloud Storage's tokens are opaque, so storesh cannot show what it holds, only send it back as it came (ls --page-token TOKEN, or page next)."
            )
        }
    }
}
