import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshRules
import StoreshWire

/// Who makes a v0 request (rule V3).
enum Caller: Sendable, CustomStringConvertible {
    /// `Bearer owner` or `Firebase owner`: rules are bypassed.
    case administrator
    /// Anyone else, signed in (an emulator ID token's user) or not (nil): the bucket's security rules decide.
    case person(Identity?)

    /// As the request log names it.
    var description: String {
        switch self {
        case .administrator: "the owner (Authorization: Bearer owner), whom rules do not bind"
        case .person(nil): "signed out"
        case .person(let identity?): "signed in as \(identity.uid)"
        }
    }
}

/// Emulator ID tokens: JWTs whose payload is read without checking a signature, as the Firebase emulators do
/// (an emulator's tokens are unsigned, `alg: none`). `user_id` (else `sub`) is the uid, and the payload's other
/// scalar claims are `request.auth.token`.
enum EmulatorToken {
    static func identity(_ token: String) throws -> Identity {
        func refuse(_ why: String) -> HTTPFailure {
            HTTPFailure(.unauthorized, reason: "authError", "Invalid Firebase ID token: \(why). Nothing was done.")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw refuse(
                "a token has three dot-separated parts (header.payload.signature), this one has \(parts.count)")
        }
        guard let data = Base64URL.decoded(parts[1]) else { throw refuse("its payload is not base64url") }
        guard let payload = try? JSONDecoder().decode([String: PayloadMember].self, from: data) else {
            throw refuse("its payload is not a JSON object")
        }
        func text(_ key: String) -> String? {
            if case .claim(.string(let text))? = payload[key] { return text }
            return nil
        }
        guard let uid = text("user_id") ?? text("sub"), !uid.isEmpty else {
            throw refuse("its payload names no user (a non-empty string user_id or sub)")
        }
        guard uid.utf8.count <= 128 else { throw refuse("its user id is longer than 128 bytes") }
        var claims: [String: ClaimValue] = [:]
        for case (let key, .claim(let value)) in payload { claims[key] = value }
        return Identity(uid: uid, claims: claims)
    }

    /// A member of a token's payload: a claim the rules can compare (a string, a flag, a number), or anything else
    /// (an object such as `firebase`, an array, null), which they do not see.
    private enum PayloadMember: Decodable {
        case claim(ClaimValue)
        case other

        init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            if let flag = try? single.decode(Bool.self) {
                self = .claim(.bool(flag))
            } else if let whole = try? single.decode(Int64.self) {
                self = .claim(.integer(whole))
            } else if let number = try? single.decode(Double.self) {
                self = .claim(.float(number))
            } else if let text = try? single.decode(String.self) {
                self = .claim(.string(text))
            } else {
                self = .other
            }
        }
    }
}

/// The Firebase v0 API (rule V1) and the emulator's internal endpoints. Requests are decided by the bucket's
/// security rules unless made by the administrator (rule V3), and listings hide the names the SDK cannot make
/// (rules V2, L3).
extension StorageAPI {
    func respondFirebase(_ exchange: inout Exchange) async throws -> Answer {
        let method = exchange.method == .head ? .get : exchange.method
        switch exchange.endpoint {
        case .setRules:
            guard method == .put else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.put], what: "/internal/setRules")
            }
            return try await setRules(&exchange)
        case .reset:
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "/internal/reset")
            }
            // Every bucket served, as the emulator's reset empties all of its buckets.
            let served = buckets.all()
            for bucket in served { try await bucket.removeEverything() }
            let names = served.map { "gs://\($0.name)" }.joined(separator: ", ")
            return Reply.json(
                .object([
                    (
                        "message",
                        .string(served.count == 1 ? "The bucket \(names) is empty." : "The buckets \(names) are empty.")
                    )
                ]))
        case .firebaseRoot:
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get], what: "/v0/")
            }
            return Reply.json(
                .object([
                    ("emulator", .string("storage")), ("server", .string("storesh serve")),
                    ("bucket", .string(exchange.bucket.name)),
                ]))
        case .firebaseBucket:
            throw HTTPFailure.notFound(
                "Not Found: the v0 API has no bucket resource; list its objects at /v0/b/\(exchange.bucket.name)/o.")
        case .firebaseObjects:
            switch method {
            case .get: return try await listFirebase(exchange)
            case .post, .put: return try await firebaseUpload(&exchange, pathName: nil)
            default:
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get, .post], what: "the object list")
            }
        case .firebaseObject(_, let name):
            let override = exchange.header("X-HTTP-Method-Override")?.uppercased()
            switch method {
            case .get:
                return try await getFirebase(exchange, name: try objectName(name))
            case .patch:
                return try await patchFirebase(&exchange, name: try objectName(name))
            case .put where override == "PATCH":
                return try await patchFirebase(&exchange, name: try objectName(name))
            case .delete:
                let target = try caller(exchange)
                let session = try rulesSession(for: target, in: exchange.bucket)
                let object = try objectName(name)
                let precondition = try Self.conditions(exchange)?.precondition ?? .none
                try await exchange.bucket.change { transaction -> Void in
                    try await (session?.guarding(transaction) ?? transaction).delete(object, precondition: precondition)
                }
                return Reply.empty()
            case .post where exchange.query["create_token"] != nil || exchange.query["delete_token"] != nil:
                return try await changeTokens(exchange, name: try objectName(name))
            case .post, .put:
                return try await firebaseUpload(&exchange, pathName: name)
            default:
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get, .patch, .post, .delete], what: "an object")
            }
        default:
            throw HTTPFailure.notFound("Not Found")
        }
    }

    /// Who makes the request: no Authorization header is signed out.
    func caller(_ exchange: Exchange) throws -> Caller {
        let caller = try Self.caller(authorization: exchange.request.headers[.authorization])
        RequestTrace.current?.caller = caller
        return caller
    }

    private static func caller(authorization header: String?) throws -> Caller {
        guard let header else { return .person(nil) }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, ["firebase", "bearer"].contains(parts[0].lowercased()) else {
            throw HTTPFailure(
                .unauthorized, reason: "authError",
                "The Authorization header must be 'Firebase TOKEN' or 'Bearer TOKEN'.")
        }
        if parts[1] == "owner" { return .administrator }
        return .person(try EmulatorToken.identity(String(parts[1])))
    }

    /// The rules that decide `caller`'s requests; nil for the administrator, whom rules do not bind.
    func rulesSession(for caller: Caller, in bucket: ServedBucket) throws -> RulesSession? {
        // An upload's later requests are decided as its first one's caller: the log names that caller.
        RequestTrace.current?.caller = caller
        guard case .person(let identity) = caller else { return nil }
        return try bucket.rulesSession(as: identity)
    }

    /// The served bucket as `caller` may use it for reads.
    private func readable(by caller: Caller, in bucket: ServedBucket) throws -> any Bucket {
        try rulesSession(for: caller, in: bucket)?.guarding(bucket.reader()) ?? bucket.reader()
    }

    // MARK: List and get

    private func listFirebase(_ exchange: Exchange) async throws -> Answer {
        let query = exchange.query
        let prefix = query["prefix"] ?? ""
        let reference = StoragePath(normalizing: prefix)
        guard reference.listingPrefix == prefix else {
            throw HTTPFailure.badRequest(
                "The prefix parameter is required to be empty or end with a single / character (rule L1).")
        }
        guard query["delimiter"] == "/" else {
            throw HTTPFailure.badRequest(
                "The v0 API lists with delimiter=/ (as the Firebase SDKs send it); '\(query["delimiter"] ?? "")' is not supported."
            )
        }
        var maxResults: Int?
        if let given = try query.integer("maxResults") { maxResults = Int(clamping: given) }
        let options = ListOptions(
            maxResults: maxResults, pageToken: query["pageToken"].flatMap { $0.isEmpty ? nil : $0 })
        let bucket = exchange.bucket
        let page = try await readable(by: try caller(exchange), in: bucket).list(reference, options: options)
        return Reply.json(FirebaseWire.listDocument(page, bucket: bucket.name))
    }

    /// Metadata, or content with `alt=media`. A download token of the object lets anyone read its content, as a
    /// download URL does; without one, rules decide (`get`) before the object is looked for (rule R3).
    private func getFirebase(_ exchange: Exchange, name: ObjectName) async throws -> Answer {
        let who = try caller(exchange)
        guard exchange.query["alt"] == "media" else {
            return Reply.json(
                ObjectResource.firebase(try await readable(by: who, in: exchange.bucket).metadata(of: name)))
        }
        if let token = exchange.query["token"], !token.isEmpty,
            let object = try? exchange.bucket.reader().currentMetadata(of: name),
            Self.tokens(of: object).contains(token)
        {
            let read = try download(name, in: exchange.bucket, request: exchange.request.headers)
            let current = read.object
            // Firebase's SDKs give no customer-supplied key: content written with one is not read through this API.
            try CustomerKey.check(nil, reading: current)
            // The object may have changed between the two reads: its content is served only under a token it has.
            if Self.tokens(of: current).contains(token) {
                return try Reply.media(
                    current, content: read.content, partial: read.partial, request: exchange.request.headers,
                    entityTag: "\"\(current.md5Hash)\"")
            }
        }
        _ = try await readable(by: who, in: exchange.bucket).metadata(of: name)
        let read = try download(name, in: exchange.bucket, request: exchange.request.headers)
        try CustomerKey.check(nil, reading: read.object)
        return try Reply.media(
            read.object, content: read.content, partial: read.partial, request: exchange.request.headers,
            entityTag: "\"\(read.object.md5Hash)\"")
    }

    static func tokens(of object: ObjectMetadata) -> [String] {
        (object.customMetadata[downloadTokensKey] ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
    }

    // MARK: Changes

    /// A metadata update (rule R2's `update`): null deletes (rules M4, M5). Download tokens are kept; tokens given
    /// under `metadata.firebaseStorageDownloadTokens` are added to them, as the service does (rule G7).
    private func patchFirebase(_ exchange: inout Exchange, name: ObjectName) async throws -> Answer {
        let session = try rulesSession(for: try caller(exchange), in: exchange.bucket)
        let conditions = try Self.conditions(exchange)
        let body = try await jsonBody(&exchange, what: "metadata")
        let result = try await exchange.bucket.change { transaction in
            var update = body.update
            let existing = try await transaction.metadataIfPresent(of: name)
            if let existing {
                try body.refuseReadOnlyChanges(against: ObjectResource.firebase(existing), object: existing)
            }
            let kept = existing.map(Self.tokens(of:)) ?? []
            var tokens = kept
            if case .set(let added)? = update.customMetadata[downloadTokensKey] {
                tokens += added.split(separator: ",").map(String.init).filter { !tokens.contains($0) }
            }
            update.customMetadata[downloadTokensKey] = nil
            if update.clearsCustomMetadata || tokens != kept, !tokens.isEmpty {
                update.customMetadata[downloadTokensKey] = .set(tokens.joined(separator: ","))
            }
            return try await (session?.guarding(transaction) ?? transaction).updateMetadata(
                of: name, update, precondition: conditions?.precondition ?? existing.map(Precondition.matches) ?? .none)
        }
        return Reply.json(ObjectResource.firebase(result.metadata))
    }

    /// The JSON API's `ifGenerationMatch` (0: must not exist) and `ifMetagenerationMatch`, which storesh's v0 API
    /// also takes (the SDKs send none; the bucket page sends them, so that its edits as a user are refused rather
    /// than overwrite a change made meanwhile). They are checked after the rules: a request the rules deny learns
    /// nothing of the object. Nil when the request gives neither.
    static func conditions(_ exchange: Exchange) throws -> Conditions? {
        let conditions = try Conditions(exchange.query)
        if conditions.hasNotMatch {
            throw HTTPFailure.badRequest(
                "The v0 API takes ifGenerationMatch and ifMetagenerationMatch only; the NotMatch forms are the JSON API's."
            )
        }
        return conditions.generationMatch == nil && conditions.metagenerationMatch == nil ? nil : conditions
    }

    /// `create_token=true` adds a download token; `delete_token=T` removes one (a new one is made when none is
    /// left). The administrator's only, as in the emulator.
    private func changeTokens(_ exchange: Exchange, name: ObjectName) async throws -> Answer {
        guard case .administrator = try caller(exchange) else {
            throw HTTPFailure(.forbidden, reason: "forbidden", "Missing admin credentials.")
        }
        let create = exchange.query["create_token"]
        if let create, create != "true" {
            throw HTTPFailure.badRequest("Invalid value for create_token: '\(create)'; it must be 'true'.")
        }
        let removed = exchange.query["delete_token"]
        let result = try await exchange.bucket.change { transaction in
            let existing = try await transaction.metadata(of: name)
            var tokens = Self.tokens(of: existing)
            if let removed { tokens.removeAll { $0 == removed } }
            if create != nil || tokens.isEmpty { tokens.append(UUID().uuidString.lowercased()) }
            return try await transaction.updateMetadata(
                of: name, MetadataUpdate(customMetadata: [downloadTokensKey: .set(tokens.joined(separator: ","))]),
                precondition: .matches(existing))
        }
        return Reply.json(ObjectResource.firebase(result.metadata))
    }

    // MARK: Uploads

    /// A v0 upload: multipart (`X-Goog-Upload-Protocol: multipart`), resumable (`X-Goog-Upload-Protocol: resumable`
    /// or any `X-Goog-Upload-Command`), or the raw body as the content.
    private func firebaseUpload(_ exchange: inout Exchange, pathName: String?) async throws -> Answer {
        if let id = exchange.query["upload_id"] { return try await firebaseResumable(&exchange, id: id) }
        let who = try caller(exchange)
        let protocolName = exchange.header("X-Goog-Upload-Protocol")?.lowercased()
        let command = exchange.header("X-Goog-Upload-Command")?.lowercased()
        let queryName = exchange.query["name"]
        let conditions = try Self.conditions(exchange) ?? Conditions()
        func request(_ metadata: ObjectMetadataBody) throws -> UploadRequest {
            let name = try objectName(pathName ?? queryName ?? metadata.name)
            if let given = metadata.name, given != name.rawValue {
                throw HTTPFailure.badRequest(
                    "The object's name in the URL ('\(name.rawValue)') and in the metadata ('\(given)') differ.")
            }
            return UploadRequest(
                bucket: exchange.bucket, name: name, options: metadata.writeOptions, expectedCRC32C: metadata.crc32c,
                conditions: conditions, firebase: true, caller: who)
        }
        if protocolName == "resumable" || command != nil {
            guard command == "start" else {
                throw HTTPFailure.badRequest(
                    "A resumable upload starts with X-Goog-Upload-Command: start; later commands go to its upload URL.")
            }
            var upload = try request(try await jsonBody(&exchange, what: "upload's metadata"))
            if upload.options.properties[.contentType] == nil,
                let type = exchange.header("X-Goog-Upload-Header-Content-Type")
                    ?? exchange.header("X-Goog-Upload-Content-Type")
            {
                upload.options.properties[.contentType] = type
            }
            // The Web and Android SDKs write X-Goog-Upload-Header-…, the Apple SDK X-Goog-Upload-….
            let declared = try announcedSize(
                exchange, headers: ["X-Goog-Upload-Header-Content-Length", "X-Goog-Upload-Content-Length"])
            try await authorizeUploadStart(upload, declaredSize: declared)
            let id = try uploads.start(upload, declaredSize: declared, spool: Spool(directory: spoolDirectory))
            let url =
                "\(exchange.baseURL)/v0/b/\(exchange.bucket.name)/o?name=\(NameBytes.percentEncoded(upload.name.rawValue))&upload_id=\(id)&upload_protocol=resumable"
            return Reply.empty(
                .ok,
                headers: [
                    HTTPField.Name("X-Goog-Upload-Status")!: "active", HTTPField.Name("X-Goog-Upload-URL")!: url,
                    HTTPField.Name("X-Goog-Upload-Chunk-Granularity")!: "262144",
                    HTTPField.Name("X-GUploader-UploadID")!: id,
                ])
        }
        if protocolName == "multipart" {
            let parts = try await receiveMultipart(&exchange)
            var upload = try request(try ObjectMetadataBody(json: parts.metadata, what: "upload's metadata part"))
            if upload.options.properties[.contentType] == nil, let type = parts.contentType {
                upload.options.properties[.contentType] = type
            }
            return Reply.json(ObjectResource.firebase(try await finishUpload(upload, content: parts.content)))
        }
        if let protocolName {
            throw HTTPFailure.badRequest(
                "Unknown X-Goog-Upload-Protocol '\(protocolName)': it is multipart or resumable.")
        }
        var upload = try request(ObjectMetadataBody())
        if let type = exchange.request.headers[.contentType] { upload.options.properties[.contentType] = type }
        // The whole object in one request: decided on what the request announces before its bytes are read.
        try await authorizeUploadStart(
            upload, declaredSize: exchange.request.headers[.contentLength].flatMap(Int64.init))
        let content = try await receiveObject(&exchange)
        return Reply.json(ObjectResource.firebase(try await finishUpload(upload, content: content)))
    }

    /// The commands of a v0 resumable upload at its upload URL: `upload`, `finalize` (or both), `query`, `cancel`.
    /// Chunks need not carry the Authorization header (the iOS SDK sends none): the upload is its starter's. A
    /// chunk's place is checked before its bytes are read, which stream into the session's spool.
    private func firebaseResumable(_ exchange: inout Exchange, id: String) async throws -> Answer {
        let commands = Set(
            (exchange.header("X-Goog-Upload-Command") ?? "").lowercased().split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        let known: Set<String> = ["upload", "finalize", "query", "cancel"]
        guard !commands.isEmpty, commands.isSubset(of: known) else {
            throw HTTPFailure.badRequest(
                "X-Goog-Upload-Command must be upload, finalize, 'upload, finalize', query or cancel.")
        }
        var offset: Int64?
        if let text = exchange.header("X-Goog-Upload-Offset") {
            guard let value = Int64(text), value >= 0 else {
                throw HTTPFailure.badRequest(
                    "Invalid X-Goog-Upload-Offset '\(text)': it must be a whole number of bytes.")
            }
            offset = value
        }
        let declaredLength = exchange.request.headers[.contentLength].flatMap(Int64.init)
        func status(_ state: String, _ received: Int64) -> HTTPFields {
            [
                HTTPField.Name("X-Goog-Upload-Status")!: state,
                HTTPField.Name("X-Goog-Upload-Size-Received")!: String(received),
            ]
        }
        /// What the request does first, decided by the machine under the session's lock: its bytes arrive outside it.
        enum Start {
            case answer(Answer)
            case receive(Spool, skip: Int64, limit: Int64, total: Int64?)
            case ended(UploadMachine.ChunkEnd)
        }
        let start: Start
        let upload: UploadRequest
        do {
            (start, upload) = try uploads.withSession(id) { session throws -> (Start, UploadRequest) in
                let machine = session.machine
                switch machine.phase {
                case .finished(let final):
                    return (.answer(Self.replay(final, headers: status("final", machine.received))), session.request)
                case .cancelled:
                    if commands == ["query"] {
                        return (.answer(Reply.empty(.ok, headers: status("cancelled", 0))), session.request)
                    }
                    throw UploadMachine.Refusal.cancelled
                case .receiving, .landing:
                    throw UploadMachine.Refusal.busy
                case .open:
                    break
                }
                if commands.contains("cancel") {
                    _ = try session.machine.cancel()
                    return (.answer(Reply.empty(.ok, headers: status("cancelled", 0))), session.request)
                }
                if commands == ["query"] {
                    return (.answer(Reply.empty(.ok, headers: status("active", machine.received))), session.request)
                }
                guard commands.contains("upload") else {
                    if let declaredLength, declaredLength > 0 {
                        throw HTTPFailure.badRequest(
                            "A finalize without upload carries no bytes, but this request has \(declaredLength).")
                    }
                    return (.ended(try session.machine.finalize()), session.request)
                }
                switch try session.machine.chunkBegins(first: offset, length: declaredLength) {
                case .replay(let final):
                    return (.answer(Self.replay(final, headers: status("final", machine.received))), session.request)
                case .receive(let skip, let limit, let total):
                    guard let spool = session.spool else { throw UploadMachine.Refusal.busy }
                    return (.receive(spool, skip: skip, limit: limit, total: total), session.request)
                }
            }
        } catch let refusal as UploadMachine.Refusal {
            throw failure(refusal, upload: id, firebase: true)
        }
        let end: UploadMachine.ChunkEnd
        switch start {
        case .answer(let answer): return answer
        case .ended(let ended): end = ended
        case .receive(let spool, let skip, let limit, let total):
            let length = try await receiveChunk(
                &exchange, session: id, into: spool, limit: limit, skipping: skip,
                tooLarge: total.map {
                    HTTPFailure.badRequest("The upload would have more than the \($0) bytes announced at its start.")
                }
                    ?? self.objectTooLarge())
            do {
                end = try uploads.withSession(id) { session in
                    try session.machine.chunkArrived(
                        length: length, ending: commands.contains("finalize") ? .finalize : .more)
                }
            } catch let refusal as UploadMachine.Refusal {
                throw failure(refusal, upload: id, firebase: true)
            }
        }
        switch end {
        case .incomplete(let received): return Reply.empty(.ok, headers: status("active", received))
        case .land:
            let spool = try uploads.withSession(id) { $0.spool }
            guard let spool else { throw UploadSessions.busy }
            let answer = try await landUpload(
                session: id, upload, spool: spool, firebase: true, resource: ObjectResource.firebase)
            return Reply.json(answer.body, status: answer.status, headers: status("final", spool.size))
        }
    }

    // MARK: Rules

    /// `PUT /internal/setRules` with `{"rules":{"files":[{"name":…,"content":…}]}}`, as
    /// `@firebase/rules-unit-testing` sends it: one file's rules for every bucket; or several, each for the bucket
    /// its `resource` names. Rules with an error are refused, naming it, and change nothing.
    private func setRules(_ exchange: inout Exchange) async throws -> Answer {
        let data = try await body(&exchange, limit: limits.maximumJSONBytes, what: "rules")
        guard let body = try? JSONValue.parse(data), body.members != nil else {
            throw HTTPFailure.badRequest(
                "The request body must be a JSON object: {\"rules\":{\"files\":[{\"name\":…,\"content\":…}]}}.")
        }
        guard let files = body[member: "rules"]?[member: "files"]?.items, !files.isEmpty else {
            throw HTTPFailure.badRequest("Request body must include 'rules.files' array")
        }
        var rules: [(bucket: String?, rules: ServedBuckets.ProjectRules)] = []
        for file in files {
            guard let name = file[member: "name"]?.string, let content = file[member: "content"]?.string else {
                throw HTTPFailure.badRequest("Each member of 'rules.files' array must contain 'name' and 'content'")
            }
            let bucket = file[member: "resource"]?.string
            if files.count > 1, bucket == nil {
                throw HTTPFailure.badRequest(
                    "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'")
            }
            let origin = "\(name) (PUT /internal/setRules)"
            do {
                try RulesEngine.check(content, origin: origin)
            } catch {
                throw HTTPFailure.badRequest("There was an error updating rules: \(error.message)")
            }
            rules.append((bucket, ServedBuckets.ProjectRules(source: content, origin: origin)))
        }
        for (bucket, ruleset) in rules { try await buckets.setRules(ruleset, for: bucket) }
        return Reply.json(.object([("message", .string("Rules updated successfully"))]))
    }
}
