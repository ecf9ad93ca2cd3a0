import Foundation
import StoreshCore
import StoreshExecution
import StoreshWire

/// One request a command stands for, as a class meets it three ways: the Firebase SDK call for Apple platforms
/// (Swift, as the Firebase docs write it), the REST request of the Firebase Storage API v0 that the SDKs send, and
/// the Cloud Storage JSON API's; and the security-rules method that decides it (rules apply to the v0 API only).
package struct ExplainedRequest: Sendable, Equatable {
    /// What the request does: "list one page of photos/".
    package var purpose: String
    package var swift: String?
    /// Method, URL and, for a change, the JSON body.
    package var firebaseREST: String?
    package var cloudStorageREST: String?
    /// `list`, `get`, `create`, `update`, `delete`: nil when no request is made.
    package var rulesMethod: String?
    /// What storesh does that the SDK does not, or where the APIs differ.
    package var note: String?

    package init(
        purpose: String, swift: String? = nil, firebaseREST: String? = nil, cloudStorageREST: String? = nil,
        rulesMethod: String? = nil, note: String? = nil
    ) {
        self.purpose = purpose
        self.swift = swift
        self.firebaseREST = firebaseREST
        self.cloudStorageREST = cloudStorageREST
        self.rulesMethod = rulesMethod
        self.note = note
    }
}

/// `explain COMMAND`: the command, the requests it stands for.
package struct Explanation: Sendable, Equatable {
    package var command: String
    package var requests: [ExplainedRequest]
}

/// How each command's requests are written in the SDK and the two REST APIs.
enum Explainer {
    static let firebaseHost = FirebaseWire.baseURL
    static let cloudStorageHost = CloudStorageWire.baseURL

    /// A query string, written as the backends write theirs.
    static func query(_ parameters: [(String, String?)]) -> String { CloudStorageWire.query(parameters) }

    static func cloudStorageObject(_ bucket: String, _ name: String) -> String {
        cloudStorageHost + CloudStorageWire.objectPath(bucket, name)
    }

    // MARK: Listing

    /// `tokens`: the bucket's page tokens, to read where storesh's own request starts.
    static func list(
        bucket: String, path: StoragePath, maxResults: Int?, pageToken: String?, all: Bool, long: Bool,
        tokens: any PageTokenFormat,
        screenful: Int? = nil
    ) throws -> [ExplainedRequest] {
        let prefix = path.listingPrefix
        let size = maxResults ?? ListOptions.maximumResults
        let swift: String
        if all {
            swift = "let result = try await \(SwiftSDK.list(path.fullPath, maxResults: nil, pageToken: nil))"
        } else {
            swift = "let result = try await \(SwiftSDK.list(path.fullPath, maxResults: size, pageToken: pageToken))"
        }
        var requests = [
            ExplainedRequest(
                purpose: all
                    ? "list every page of \(prefix.isEmpty ? "the root" : prefix) (listAll: one request per page, gathered in memory)"
                    : "list one page of \(prefix.isEmpty ? "the root" : prefix): prefixes and items, \(size) at most",
                swift: swift + "\n// result.prefixes, result.items"
                    + (all ? "" : ", result.pageToken (nil on the last page)"),
                firebaseREST: FirebaseWire.list(
                    bucket: bucket, prefix: prefix, maxResults: all ? nil : maxResults, pageToken: pageToken
                )
                .rendered(baseURL: firebaseHost),
                cloudStorageREST: try storedListing(
                    bucket: bucket, prefix: prefix, maxResults: size, pageToken: pageToken, tokens: tokens),
                rulesMethod: "list",
                note:
                    "list needs rules_version = '2'. The JSON API lists names as stored (wrongPrefix//, lonelyItem/); the v0 API and storesh show the Firebase view (rule L3)."
                    + (pageToken != nil ? " storesh's page tokens are its own; the SDK's come from the service." : "")
                    + (screenful.map {
                        " At the prompt storesh itself lists \($0) at a time (a screenful); the call above is what a program would ask."
                    } ?? ""))
        ]
        if long {
            requests.append(
                ExplainedRequest(
                    purpose: "for each item listed: its size, update time and content type (ls -l)",
                    swift: "let metadata = try await item.getMetadata()",
                    firebaseREST: FirebaseWire.metadata(bucket: bucket, object: prefix + "ITEM").rendered(
                        baseURL: firebaseHost),
                    cloudStorageREST: "(none: the JSON API's list carries each item's metadata)",
                    rulesMethod: "get",
                    note: "The SDK's list gives references only; each item's metadata is a request of its own."))
        }
        return requests
    }

    /// The JSON API listing storesh sends for a page (`Lister.page` over the stored listing): one entry more than
    /// the page, and, for a page after the first, its own token's position as `startOffset`.
    static func storedListing(
        bucket: String, prefix: String, maxResults: Int, pageToken: String?, tokens: any PageTokenFormat
    ) throws -> String {
        let options = ListOptions(maxResults: maxResults, pageToken: pageToken)
        guard
            let first = try Lister.firstStoredRequest(prefix: prefix, bucket: bucket, options: options, tokens: tokens)
        else {
            return "(none: the page starts past every name)"
        }
        let request = CloudStorageWire.list(
            bucket: bucket, prefix: prefix, delimited: true, maxResults: first.maxResults,
            startOffset: first.startOffset)
        return request.rendered(baseURL: cloudStorageHost)
            + (first.maxResults > maxResults
                ? " (storesh asks one entry more, to know whether another page follows)" : "")
    }

    // MARK: Objects

    static func getMetadata(bucket: String, name: String) -> ExplainedRequest {
        ExplainedRequest(
            purpose: "read the metadata of \(name)",
            swift: "let metadata = try await \(SwiftSDK.getMetadata(name))",
            firebaseREST: FirebaseWire.metadata(bucket: bucket, object: name).rendered(baseURL: firebaseHost),
            cloudStorageREST: CloudStorageWire.metadata(bucket: bucket, object: name).rendered(
                baseURL: cloudStorageHost),
            rulesMethod: "get")
    }

    /// The JSON body of an update, as both APIs take it: a property set or `null` to delete it; `metadata` holds
    /// the custom keys, each set or `null`.
    static func updateBody(_ update: MetadataUpdate) -> String {
        var members: [(String, JSONValue)] = []
        for property in WritableProperty.allCases {
            switch update.properties[property] {
            case .set(let value)?: members.append((property.rawValue, .string(value)))
            case .unset?: members.append((property.rawValue, .null))
            case nil: break
            }
        }
        if update.clearsCustomMetadata && update.customMetadata.isEmpty {
            members.append(("metadata", .null))
        } else if !update.customMetadata.isEmpty {
            members.append(
                (
                    "metadata",
                    .object(
                        update.customMetadata.sortedByKeyBytes.map { key, change in
                            if case .set(let value) = change { return (key, .string(value)) }
                            return (key, .null)
                        })
                ))
        }
        return JSONValue.object(members).serialized
    }

    /// `state`: the object as storesh read it, when it exists; the REST requests are then the ones storesh sends
    /// (`CloudStorageWire`): guarded by its generation and metageneration, the body naming only what changes.
    static func updateMetadata(
        bucket: String, name: String, update: MetadataUpdate, state: ObjectMetadata?
    ) -> ExplainedRequest {
        let deletes =
            update.properties.values.contains(.unset) || update.customMetadata.values.contains(.unset)
            || update.clearsCustomMetadata
        var lines: [String]
        var note: String?
        if deletes {
            // The Swift SDK sends what differs from the metadata a StorageMetadata was made from, and null for what it
            // no longer has (firebase-ios-sdk, FirebaseStorage/Sources/StorageMetadata.swift: updatedMetadata() and
            // remove(matchingMetadata:oldMetadata:)): a deletion starts from the object's own metadata. A new
            // StorageMetadata() was made from nothing, so a property set to nil there sends nothing.
            lines = ["let ref = \(SwiftSDK.reference(name))", "let metadata = try await ref.getMetadata()"]
            for property in WritableProperty.allCases {
                switch update.properties[property] {
                case .set(let value)?: lines.append("metadata.\(property.rawValue) = \(SwiftSDK.literal(value))")
                case .unset?: lines.append("metadata.\(property.rawValue) = nil  // sent as null: deleted")
                case nil: break
                }
            }
            if update.clearsCustomMetadata {
                lines.append("metadata.customMetadata = [:]  // every key sent as null: deleted")
            }
            if !update.customMetadata.isEmpty {
                lines.append("var custom = metadata.customMetadata ?? [:]")
                for (key, change) in update.customMetadata.sortedByKeyBytes {
                    switch change {
                    case .set(let value): lines.append("custom[\(SwiftSDK.literal(key))] = \(SwiftSDK.literal(value))")
                    case .unset: lines.append("custom[\(SwiftSDK.literal(key))] = nil  // sent as null: deleted")
                    }
                }
                lines.append("metadata.customMetadata = custom")
            }
            lines.append("let updated = try await ref.updateMetadata(metadata)")
            note =
                "The Swift SDK sends what differs from the metadata it read, and null for what was taken out of it, so a deletion starts from getMetadata(); a new StorageMetadata() with a property set to nil sends nothing for it. The JavaScript SDK's updateMetadata sends null for a key whose value is null."
        } else {
            // As the Firebase docs write an update: a new StorageMetadata naming what changes (firebase-ios-sdk,
            // FirebaseStorage/Sources/StorageReference.swift: updateMetadata(_:completion:)).
            lines = ["let newMetadata = StorageMetadata()"]
            for property in WritableProperty.allCases {
                if case .set(let value)? = update.properties[property] {
                    lines.append("newMetadata.\(property.rawValue) = \(SwiftSDK.literal(value))")
                }
            }
            let setKeys = update.customMetadata.sortedByKeyBytes.compactMap { key, change -> String? in
                if case .set(let value) = change { return "\(SwiftSDK.literal(key)): \(SwiftSDK.literal(value))" }
                return nil
            }
            if !setKeys.isEmpty { lines.append("newMetadata.customMetadata = [\(setKeys.joined(separator: ", "))]") }
            lines.append("let updated = try await \(SwiftSDK.updateMetadata(name))")
        }
        // With the object's state read, both lines are the requests storesh sends (the body naming only what changes,
        // as an SDK would name only what the app set); without it, the fields the update names.
        let cloudStorage: String
        let firebase: String
        let body = updateBody(update)
        if let state,
            let after = try? state.applying(Session.keepingDownloadTokens(update, of: state), now: state.updated)
                .metadata,
            state.differences(to: after).count > 0
        {
            if state.rewrites(to: after) { return rewrite(bucket: bucket, name: name, from: state, to: after) }
            cloudStorage = CloudStorageWire.patch(bucket: bucket, object: name, from: state, to: after).rendered(
                baseURL: cloudStorageHost)
            firebase = FirebaseWire.patch(
                bucket: bucket, object: name, body: CloudStorageJSON.patchBody(from: state, to: after)
            )
            .rendered(baseURL: firebaseHost)
        } else {
            firebase = FirebaseWire.patch(bucket: bucket, object: name, body: Data(body.utf8)).rendered(
                baseURL: firebaseHost)
            cloudStorage =
                "PATCH \(cloudStorageObject(bucket, name))"
                + CloudStorageWire.query([("ifGenerationMatch", "G"), ("ifMetagenerationMatch", "M")]) + "\n\(body)"
        }
        // Cloud Storage's own fields (rule M9) are not the Firebase SDKs' nor the v0 API's: storesh refuses them there.
        let ownFields = update.cloudStorage.isEmpty ? nil : "customTime, holds, retention or contexts"
        return ExplainedRequest(
            purpose: "update the metadata of \(name): only the properties named change (rules M4, M5)",
            swift: ownFields.map { "// none: StorageMetadata has no \($0) (Cloud Storage's own fields, rule M9)" }
                ?? lines.joined(separator: "\n"),
            firebaseREST: ownFields.map {
                "(none: the Firebase Storage API does not carry \($0); storesh changes them through gs:// with Cloud Storage credentials)"
            } ?? firebase,
            cloudStorageREST: cloudStorage,
            rulesMethod: "update",
            note: [
                note,
                "storesh sends ifGenerationMatch and ifMetagenerationMatch with the generation and metageneration it read, and only what changes, so a concurrent change is never overwritten (rule G5).",
            ]
            .compactMap { $0 }.joined(separator: " "))
    }

    /// A change of storage class (rule M9): no SDK of Firebase's has one, and the JSON API makes it by rewriting the
    /// object onto itself.
    static func rewrite(
        bucket: String, name: String, from state: ObjectMetadata, to after: ObjectMetadata
    ) -> ExplainedRequest {
        ExplainedRequest(
            purpose:
                "rewrite \(name) as storage class \(after.cloudStorage.effectiveStorageClass): the same content, a new generation, metageneration 1 (rule M9)",
            firebaseREST: "(none: the Firebase Storage API does not change an object's storage class)",
            cloudStorageREST: CloudStorageWire.change(bucket: bucket, object: name, from: state, to: after).rendered(
                baseURL: cloudStorageHost)
                + "\n(a large object takes several calls: each after the first sends the rewriteToken the one before answered)",
            rulesMethod: "update",
            note:
                "storesh rewrites only the generation and metageneration it read (ifSourceGenerationMatch, ifSourceMetagenerationMatch) and only over that generation (ifGenerationMatch), so a concurrent change is never overwritten (rule G5); the body is the object's metadata whole, with null for what the change removes."
        )
    }

    /// `current`: the object the upload would replace, as storesh read it (nil: none); on a real bucket storesh
    /// writes only over that (or only where nothing is).
    static func upload(
        bucket: String, name: String, fromFile file: String?, contentType: String?, current: ObjectMetadata?
    ) -> ExplainedRequest {
        var lines: [String] = []
        if let contentType {
            lines += ["let metadata = StorageMetadata()", "metadata.contentType = \(SwiftSDK.literal(contentType))"]
        }
        let metadataArgument = contentType == nil ? "" : ", metadata: metadata"
        if let file {
            lines.append(
                "let uploaded = try await \(SwiftSDK.reference(name)).putFileAsync(from: URL(fileURLWithPath: \(SwiftSDK.literal(file)))\(metadataArgument))"
            )
        } else {
            lines.append(
                "let uploaded = try await \(SwiftSDK.putData(name, metadata: contentType == nil ? nil : "metadata"))")
        }
        return ExplainedRequest(
            purpose: "upload \(name): new content, a new generation, metageneration 1 (rule M3)",
            swift: lines.joined(separator: "\n"),
            // firebase-ios-sdk, FirebaseStorage/Sources/StorageUploadTask.swift: enqueue() starts a resumable upload
            // whatever the size; firebase-js-sdk, packages/storage/src/reference.ts: uploadBytes() is multipart.
            firebaseREST: FirebaseWire.upload(bucket: bucket, object: name).rendered(baseURL: firebaseHost)
                + "\n(the Swift SDK sends every upload as a resumable upload, uploadType=resumable; the JavaScript SDK's uploadBytes sends one multipart request: the metadata as JSON, then the content)",
            cloudStorageREST: CloudStorageWire.upload(
                bucket: bucket, uploadType: "multipart", precondition: PlanApplier.writePrecondition(current: current)
            ).rendered(baseURL: cloudStorageHost)
                + "\n(multipart: {\"name\": \(SwiftSDK.literal(name))…}, then the content; large files as a resumable upload)",
            // Rule R2, as the Firebase emulator decides (firebase-tools, src/emulator/storage/files.ts: uploadObject
            // checks create, with resource the object it replaces); update is for metadata only.
            rulesMethod: "create (over an existing object too: resource is then that object, else null)",
            // firebase-ios-sdk, FirebaseStorage/Sources/StorageUploadTask.swift: the type of putFile from the local
            // file's extension; putData sends application/octet-stream. firebase-js-sdk, implementation/requests.ts:
            // determineContentType_ takes the Blob's type.
            note:
                "storesh guesses contentType, when not given, from the object name's extension (its rule M3). The Swift SDK's putFile guesses it from the local file's extension and putData sends application/octet-stream; the JavaScript SDK takes the Blob's type."
        )
    }

    /// A generation's content (NAME#GENERATION, rule B5): the JSON API's media download of that generation; no
    /// Firebase SDK or v0 API call names generations.
    static func download(bucket: String, name: String, generation: Int64, toFile file: String?) -> ExplainedRequest {
        ExplainedRequest(
            purpose: "download the content of \(name) as generation \(generation)\(file.map { " into \($0)" } ?? "")",
            firebaseREST: "(none: the Firebase Storage API names no generations)",
            cloudStorageREST: "GET \(cloudStorageObject(bucket, name))?alt=media&generation=\(generation)",
            rulesMethod: "get")
    }

    /// A generation's metadata (NAME#GENERATION, rules B5, B6): live or noncurrent, else soft-deleted.
    static func getMetadata(bucket: String, name: String, generation: Int64) -> ExplainedRequest {
        ExplainedRequest(
            purpose: "read the metadata of \(name) as generation \(generation)",
            firebaseREST: "(none: the Firebase Storage API names no generations)",
            cloudStorageREST: CloudStorageWire.metadata(bucket: bucket, object: name, generation: generation).rendered(
                baseURL: cloudStorageHost)
                + "\n(not found there: the same with softDeleted=true, for a soft-deleted generation)",
            rulesMethod: "get")
    }

    static func download(bucket: String, name: String, toFile file: String?) -> ExplainedRequest {
        let swift =
            file.map {
                "let url = try await \(SwiftSDK.reference(name)).writeAsync(toFile: URL(fileURLWithPath: \(SwiftSDK.literal($0))))"
            }
            ?? "let data = try await \(SwiftSDK.data(name))"
        return ExplainedRequest(
            purpose: "download the content of \(name)", swift: swift,
            firebaseREST: FirebaseWire.download(bucket: bucket, object: name).rendered(baseURL: firebaseHost),
            cloudStorageREST: "GET \(cloudStorageObject(bucket, name))?alt=media",
            rulesMethod: "get")
    }

    /// `state`: the object as storesh read it; on a real bucket storesh deletes it only as it was read.
    static func delete(bucket: String, name: String, state: ObjectMetadata?) -> ExplainedRequest {
        let precondition = state.map { PlanApplier.deletePrecondition(current: $0) } ?? .none
        return ExplainedRequest(
            purpose: "delete \(name)", swift: "try await \(SwiftSDK.delete(name))",
            firebaseREST: FirebaseWire.delete(bucket: bucket, object: name).rendered(baseURL: firebaseHost),
            cloudStorageREST: CloudStorageWire.delete(bucket: bucket, object: name, precondition: precondition)
                .rendered(baseURL: cloudStorageHost),
            rulesMethod: "delete",
            note: state == nil
                ? nil
                : "storesh deletes an object only as it read it (ifGenerationMatch, rule G5): a concurrent change is never lost."
        )
    }

    /// `mv`: Cloud Storage's objects.move, guarded by the source as read and the object it replaces (or its absence);
    /// no Firebase SDK or v0 API call moves.
    static func move(
        bucket: String, source: String, destination: String, state: ObjectMetadata?, replaced: ObjectMetadata?
    ) -> ExplainedRequest {
        let sourcePrecondition =
            state.map { Precondition.matches($0) } ?? Precondition(generation: nil, metageneration: nil)
        return ExplainedRequest(
            purpose:
                "move \(source) to \(destination): its content and metadata as a new generation there, and it gone, in one step",
            firebaseREST:
                "(none: the Firebase Storage API has no move; an app downloads, uploads and deletes, three requests)",
            cloudStorageREST: CloudStorageWire.move(
                bucket: bucket, source: source, destination: destination, sourcePrecondition: sourcePrecondition,
                destinationPrecondition: replaced.map { PlanApplier.writePrecondition(current: $0) } ?? .doesNotExist
            ).rendered(baseURL: cloudStorageHost),
            rulesMethod: "get, create, delete",
            note:
                "storesh moves the source only as it read it (ifSourceGenerationMatch, ifSourceMetagenerationMatch) and only over what it read at the destination (ifGenerationMatch; 0: nothing there), so a concurrent change is never lost (rule G5)."
        )
    }

    /// `restore NAME#GENERATION`: Cloud Storage's objects.restore, guarded by the live object as read (rule B6); no
    /// Firebase SDK or v0 API call restores.
    static func restore(bucket: String, name: String, generation: Int64) -> ExplainedRequest {
        ExplainedRequest(
            purpose: "restore \(name) from its soft-deleted generation \(generation)",
            firebaseREST: "(none: the Firebase Storage API names no generations)",
            cloudStorageREST: CloudStorageWire.restore(
                bucket: bucket, object: name, generation: generation, precondition: Precondition(generation: 0)
            ).rendered(baseURL: cloudStorageHost)
                + "  (ifGenerationMatch: the live object's generation, or 0 when there is none)",
            note:
                "A soft-deleted generation is kept while the bucket's soft delete policy says (rule B6); the restored object is a new generation."
        )
    }

    /// `ls -a` and `ls --soft-deleted`: objects.list with `versions=true` or `softDeleted=true` (rules B5, B6).
    static func listGenerations(
        bucket: String, path: StoragePath, maxResults: Int?, softDeleted: Bool
    ) -> ExplainedRequest {
        ExplainedRequest(
            purpose: softDeleted
                ? "list the soft-deleted generations under \(path.fullPath)"
                : "list every generation under \(path.fullPath)",
            firebaseREST: "(none: the Firebase Storage API names no generations)",
            cloudStorageREST: CloudStorageWire.listGenerations(
                bucket: bucket, prefix: path.listingPrefix, delimited: true, maxResults: maxResults, pageToken: nil,
                softDeleted: softDeleted
            ).rendered(baseURL: cloudStorageHost))
    }

    /// Where targets are patterns: the listing that finds them. A pattern within one folder (`images/*.jpg`) needs
    /// that folder's listing; one with `**`, or a wildcard in a folder's name, every folder under its fixed start.
    static func patternWalk(
        bucket: String, pattern: String, prefix: String, recursive: Bool, matched: Int
    ) -> ExplainedRequest {
        // The SDK and the v0 API list a folder; the JSON API takes any prefix of names.
        let folder = prefix.lastIndex(of: "/").map { String(prefix[...$0]) } ?? ""
        let folderListing = FirebaseWire.list(bucket: bucket, prefix: folder, maxResults: nil, pageToken: nil).rendered(
            baseURL: firebaseHost)
        guard recursive else {
            // Every match is an item of one folder.
            return ExplainedRequest(
                purpose:
                    "find the objects \(pattern) names (\(MessageText.grouped(matched)) found): list \(folder.isEmpty ? "the root" : folder)",
                swift:
                    "let result = try await \(SwiftSDK.list(String(folder.dropLast()), maxResults: nil, pageToken: nil))\n// The SDK has no patterns: keep the result.items whose names match.",
                firebaseREST: folderListing,
                cloudStorageREST: scanRequest(bucket: bucket, prefix: prefix),
                rulesMethod: "list")
        }
        return ExplainedRequest(
            purpose:
                "find the objects \(pattern) names (\(MessageText.grouped(matched)) found): list every folder under \(folder.isEmpty ? "the root" : folder)",
            swift:
                "// The SDK has no patterns: listAll() each folder, recursing into result.prefixes,\n// and keep the items whose names match.",
            firebaseREST: folderListing + " (then each prefix in turn)",
            cloudStorageREST: scanRequest(bucket: bucket, prefix: prefix),
            rulesMethod: "list")
    }

    /// The JSON API's walk of every name under `prefix`, as target expansion makes it (`Bucket.scan`).
    static func scanRequest(bucket: String, prefix: String) -> String {
        CloudStorageWire.scanPage(bucket: bucket, prefix: prefix, after: nil, limit: Session.scanPageSize).rendered(
            baseURL: cloudStorageHost)
            + " (no delimiter: every name under it, then the next page from the last name)"
    }

    /// `--where`: each target's metadata is read to decide. The JSON API's listing carries it; the SDK's and the
    /// v0 API's list give names only, so each found object is a getMetadata() of its own.
    static func filterReads(
        bucket: String, filters: [String], read: Int, passed: Int, firstName: String?, listed: Bool
    ) -> ExplainedRequest {
        let object = firstName ?? "OBJECT"
        return ExplainedRequest(
            purpose:
                "keep the objects whose metadata pass --where \(filters.joined(separator: " --where ")): \(MessageText.grouped(passed)) of \(MessageText.grouped(read))",
            swift:
                "let metadata = try await \(SwiftSDK.getMetadata(object))  // for each object found\n// and keep it when the metadata pass the filter (the SDK has no filter)",
            firebaseREST: FirebaseWire.metadata(bucket: bucket, object: object).rendered(baseURL: firebaseHost)
                + "  (for each object found)",
            cloudStorageREST: listed
                ? "(none: the JSON API's listing above carries each object's metadata)"
                : "GET \(cloudStorageObject(bucket, object))  (for each object named)",
            rulesMethod: "get")
    }

    /// A command that makes no request, and what it stands for.
    static func local(_ purpose: String, swift: String? = nil, note: String? = nil) -> ExplainedRequest {
        ExplainedRequest(purpose: purpose, swift: swift, note: note)
    }
}

extension Session {
    /// The requests `command` stands for, without running it: paths are resolved, and patterns are expanded by
    /// reading the bucket (reads only), so that the explanation names the objects it would touch.
    func explanation(of command: any LanguageCommand, at here: SourceLocation) async throws -> Explanation {
        Explanation(command: command.header, requests: try await command.explain(in: self, at: here))
    }

    /// The requests for each object targets name: the walk that finds a pattern's, the reads that `--where` needs,
    /// then the first object's request and a count of the rest. `wouldChange` leaves out the objects an update would
    /// not change: storesh sends them no request.
    func explainEach(
        _ targets: [Word], raw: Bool, filters: [MetadataFilter], at here: SourceLocation,
        wouldChange: ((ObjectMetadata) throws -> Bool)? = nil,
        _ make: (_ object: ExpandedTarget, _ state: ObjectMetadata?) -> ExplainedRequest
    ) async throws -> [ExplainedRequest] {
        let bucket = target.name
        var requests: [ExplainedRequest] = []
        let found = try await expand(targets, raw: raw, at: here)
        for word in targets where !raw && ObjectPattern.isPattern(word) {
            let pattern = try located(word.location) {
                try ObjectPattern(resolving: word, from: self.current, bucket: bucket, scheme: self.target.scheme)
            }
            let matched = found.filter { $0.word == word }.count
            requests.append(
                Explainer.patternWalk(
                    bucket: bucket, pattern: word.text, prefix: pattern.literalPrefix,
                    recursive: pattern.crossesSegments, matched: matched))
        }
        var objects = found
        if !filters.isEmpty {
            objects = try await passing(found, filters: filters, at: here)
            requests.append(
                Explainer.filterReads(
                    bucket: bucket, filters: filters.map(\.text), read: found.count, passed: objects.count,
                    firstName: found.first?.name.rawValue,
                    listed: targets.allSatisfy { !raw && ObjectPattern.isPattern($0) }))
        }
        // Objects an update would not change: the SDK would still send the request (and the service would raise
        // metageneration); storesh sends none (rule M6). The example is an object it would change, when there is one. A named object
        // that does not exist is said: the request would fail.
        var unchanged = Set<ObjectName>()
        var missing = Set<ObjectName>()
        // The state of the object the example request is for: the first one changed, else the first.
        var firstRead: (name: ObjectName, state: ObjectMetadata)?
        var firstChanged: (name: ObjectName, state: ObjectMetadata)?
        for object in objects where wouldChange != nil || object.metadata == nil {
            guard let metadata = try await metadataIfPresent(of: object, at: here) else {
                missing.insert(object.name)
                continue
            }
            if firstRead == nil { firstRead = (object.name, metadata) }
            if let wouldChange, try !wouldChange(metadata) {
                unchanged.insert(object.name)
            } else if firstChanged == nil {
                firstChanged = (object.name, metadata)
            }
        }
        let changing = objects.filter { !unchanged.contains($0.name) }
        guard let first = changing.first ?? objects.first else { return requests }
        let state =
            [firstChanged, firstRead].compactMap { $0 }.first { $0.name == first.name }?.state ?? first.metadata
        var request = make(first, state)
        switch changing.count {
        case 0, 1: break
        case 2: request.purpose += " — and the same for 1 other object"
        default:
            request.purpose +=
                " — and the same for each of the \(MessageText.grouped(changing.count - 1)) other objects"
        }
        let batchSize = options.batchSize
        if changing.count > 1, batchSize > 1, let rest = request.cloudStorageREST,
            rest.hasPrefix("PATCH ") || rest.hasPrefix("DELETE ")
        {
            let batches = (changing.count + batchSize - 1) / batchSize
            let batched =
                "On the JSON API these \(MessageText.grouped(changing.count)) requests go as \(MessageText.counted(batches, "batch request")) (POST \(CloudStorageWire.baseURL)\(CloudStorageBatch.path), multipart/mixed, up to \(batchSize) calls each), every call with its own preconditions and answer (rule Q2)."
            request.note = [request.note, batched].compactMap { $0 }.joined(separator: " ")
        }
        if changing.isEmpty {
            // storesh's rule M6: the SDKs send their PATCH all the same (firebase-ios-sdk,
            // StorageUpdateMetadataTask.swift), and the service raises metageneration on every metadata update.
            let already =
                (objects.count == 1 ? "It is" : "All are")
                + " already as asked: storesh sends no request (its rule M6). The SDK would still send its PATCH, and Cloud Storage would raise metageneration."
            request.note = [already, request.note].compactMap { $0 }.joined(separator: " ")
        } else if !unchanged.isEmpty {
            request.purpose +=
                "; \(MessageText.grouped(unchanged.count)) more \(unchanged.count == 1 ? "is" : "are") already as asked: storesh sends \(unchanged.count == 1 ? "it" : "them") no request"
        }
        if missing.contains(first.name) {
            let fails = "\(first.name.rawValue) does not exist: the request would fail with object-not-found."
            request.note = [fails, request.note].compactMap { $0 }.joined(separator: " ")
        }
        requests.append(request)
        return requests
    }
}
