import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// The Cloud Storage JSON API (rule V1), as the official clients call it with `STORAGE_EMULATOR_HOST`: every
/// request is the administrator's, as in the emulator, and names are listed as they are stored (rule V2).
extension StorageAPI {
    func respondCloudStorage(_ exchange: inout Exchange) async throws -> Answer {
        let method = exchange.method == .head ? .get : exchange.method
        switch exchange.endpoint {
        case .buckets:
            switch method {
            case .get:
                // `client.list_buckets(prefix=…)`: every bucket served, the first and those in the directory; with
                // softDeleted=true, those kept soft-deleted instead (rule B6).
                let baseURL = exchange.baseURL
                let prefix = exchange.query["prefix"] ?? ""
                var items: [JSONValue] = []
                if try exchange.query.flag("softDeleted") {
                    for deleted in buckets.softDeleted() where deleted.name.utf8.starts(with: prefix.utf8) {
                        items.append(BucketResource.document(deleted.settings, name: deleted.name, baseURL: baseURL))
                    }
                    return Reply.json(.object([("kind", .string("storage#buckets")), ("items", .array(items))]))
                }
                for served in buckets.all() where served.name.utf8.starts(with: prefix.utf8) {
                    items.append(BucketResource.document(try served.settings(), name: served.name, baseURL: baseURL))
                }
                return Reply.json(.object([("kind", .string("storage#buckets")), ("items", .array(items))]))
            case .post:
                return try await createBucket(&exchange)
            default:
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get, .post], what: "the bucket list")
            }
        case .bucket:
            switch method {
            case .get:
                let settings = try exchange.bucket.settings()
                try Self.checkBucketConditions(try Conditions(exchange.query), settings, name: exchange.bucket.name)
                return Reply.json(
                    BucketResource.document(
                        settings, name: exchange.bucket.name, baseURL: exchange.baseURL,
                        full: exchange.query["projection"] == "full"))
            case .patch, .put:
                return try await updateBucket(&exchange, replacing: method == .put)
            case .delete:
                return try await deleteBucket(exchange)
            default:
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get, .patch, .put, .delete], what: "a bucket")
            }
        case .softDeletedBucket(let name):
            guard let generation = try exchange.query.generation() else {
                throw HTTPFailure.required(
                    "Required parameter: generation (a soft-deleted bucket is read by its generation).")
            }
            return Reply.json(
                BucketResource.document(
                    try buckets.softDeleted(name, generation: generation).settings, name: name,
                    baseURL: exchange.baseURL))
        case .restoreBucket(let name):
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a bucket's restore")
            }
            guard let generation = try exchange.query.generation() else {
                throw HTTPFailure.required("Required parameter: generation (the soft-deleted bucket to restore).")
            }
            let restored = try buckets.restore(name, generation: generation)
            return Reply.json(BucketResource.document(try restored.settings(), name: name, baseURL: exchange.baseURL))
        case .managedFolders:
            guard method == .get else {
                throw HTTPFailure.badRequest("storesh serve keeps no managed folders: they cannot be made (rule B4).")
            }
            return Reply.json(.object([("kind", .string("storage#managedFolders")), ("items", .array([]))]))
        case .serviceAccount:
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get], what: "a project's service account")
            }
            // The project's Cloud Storage service agent, as the service names one (storesh serve acts as no one).
            return Reply.json(
                .object([
                    ("kind", .string("storage#serviceAccount")),
                    ("email_address", .string("service-0@gs-project-accounts.iam.gserviceaccount.com")),
                ]))
        case .bucketACL(_, let defaults):
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get],
                    what: "a bucket's access control list (a PATCH of the bucket changes it)")
            }
            let settings = try exchange.bucket.settings()
            try Self.refuseLegacyACL(settings)
            let list =
                (defaults ? settings.defaultObjectAcl : settings.acl)
                ?? BucketResource.defaultACL(exchange.bucket.name, objects: defaults)
            return Reply.json(
                .object([
                    ("kind", .string(defaults ? "storage#objectAccessControls" : "storage#bucketAccessControls")),
                    ("items", BucketResource.accessControls(list, bucket: exchange.bucket.name, objects: defaults)),
                ]))
        case .objectACL(_, let name):
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get],
                    what: "an object's access control list (a PATCH of the object changes it)")
            }
            let settings = try exchange.bucket.settings()
            try Self.refuseLegacyACL(settings)
            let object = try storage.metadata(
                of: try objectName(name), generation: try exchange.query.generation(), in: exchange.bucket)
            return Reply.json(
                .object([
                    ("kind", .string("storage#objectAccessControls")),
                    (
                        "items",
                        BucketResource.accessControls(
                            Self.objectACL(object, settings, bucket: exchange.bucket.name),
                            bucket: exchange.bucket.name, objects: true)
                    ),
                ]))
        case .bucketIAM:
            return try await bucketIAM(&exchange)
        case .storageLayout:
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get], what: "a bucket's storage layout")
            }
            return Reply.json(BucketResource.storageLayout(try exchange.bucket.settings(), name: exchange.bucket.name))
        case .lockRetentionPolicy:
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a retention policy's lock")
            }
            return try await lockRetentionPolicy(exchange)
        case .objects:
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get],
                    what: "the object list (uploads go to /upload/storage/v1/b/BUCKET/o)")
            }
            return try listObjects(exchange)
        case .object(_, let name):
            switch method {
            case .get:
                return try await getObject(
                    exchange, name: try objectName(name), media: exchange.query["alt"] == "media")
            case .patch, .put:
                return try await patchObject(&exchange, name: try objectName(name), replacing: method == .put)
            case .delete:
                return try await deleteObject(exchange, name: try objectName(name))
            default:
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.get, .patch, .put, .delete], what: "an object")
            }
        case .download(_, let name):
            guard method == .get else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get], what: "a download")
            }
            return try await getObject(exchange, name: try objectName(name), media: true)
        case .copy(_, let source, let destinationBucket, let destination, let rewrite):
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a copy")
            }
            let target = try buckets.bucket(named: destinationBucket, creating: createsBucketsOnEveryWrite)
            return try await copyObject(
                &exchange, from: try objectName(source), to: try objectName(destination), in: target, rewrite: rewrite)
        case .compose(_, let destination):
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a compose")
            }
            return try await composeObject(&exchange, to: try objectName(destination))
        case .restore(_, let name):
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a restore")
            }
            return try await restoreObject(exchange, name: try objectName(name))
        case .move(_, let source, let destination):
            guard method == .post else {
                throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "a move")
            }
            return try await moveObject(exchange, from: try objectName(source), to: try objectName(destination))
        case .upload:
            return try await upload(&exchange)
        default:
            throw HTTPFailure.notFound("Not Found")
        }
    }

    // MARK: Buckets (rule B4)

    /// `buckets.insert`: a bucket file of its own, with the settings asked for, made now as the service makes it;
    /// a setting storesh cannot honour makes no bucket.
    private func createBucket(_ exchange: inout Exchange) async throws -> Answer {
        let objectRetention = try exchange.query.flag("enableObjectRetention")
        let (bucketACL, defaultObjectACL) = (
            exchange.query["predefinedAcl"], exchange.query["predefinedDefaultObjectAcl"]
        )
        let fields = try BucketResource.body(
            try await body(&exchange, limit: limits.maximumJSONBytes, what: "bucket resource"))
        guard case .string(let name)? = fields.first(where: { $0.0 == "name" })?.1 else {
            throw HTTPFailure.required("Required: the bucket resource's name ({\"name\": \"BUCKET\"}).")
        }
        if (try? buckets.bucket(named: name, creating: false)) != nil {
            throw HTTPFailure(.conflict, reason: "conflict", "You already own this bucket. Please select another name.")
        }
        let made = try buckets.bucket(named: name, creating: true)
        let clock = made.clock
        let created = try await made.change(counted: false) { transaction -> BucketSettings in
            guard let store = transaction.settingsStore else {
                throw StorageError.internalError("The bucket keeps no settings.")
            }
            var settings = BucketSettings(madeAt: clock.nextChangeTime(), madeByServer: true)
            try BucketResource.apply(fields, to: &settings, replacing: nil, creating: true, now: settings.timeCreated)
            try BucketResource.applyPredefinedACLs(
                bucketACL: bucketACL, defaultObjectACL: defaultObjectACL, to: &settings)
            if objectRetention { settings.objectRetentionEnabled = true }
            try store.storeSettings(settings)
            return settings
        }
        return Reply.json(BucketResource.document(created, name: made.name, baseURL: exchange.baseURL))
    }

    /// `buckets.lockRetentionPolicy`: the policy can then only be lengthened (rule M9). The request must name the
    /// bucket's metageneration (`ifMetagenerationMatch`), as on the service; a bucket without a policy has none to lock.
    private func lockRetentionPolicy(_ exchange: Exchange) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        guard conditions.metagenerationMatch != nil else {
            throw HTTPFailure.badRequest(
                "Required parameter: ifMetagenerationMatch (the bucket's metageneration, whose policy is locked).")
        }
        let bucket = exchange.bucket
        let clock = bucket.clock
        let unstored = try bucket.settingsWhenNoneStored()
        let locked = try await bucket.change(counted: false) { transaction -> BucketSettings in
            guard let store = transaction.settingsStore else {
                throw StorageError.internalError("The bucket keeps no settings.")
            }
            var settings = try store.storedSettings() ?? unstored
            try Self.checkBucketConditions(conditions, settings, name: bucket.name)
            guard settings.retentionPeriod != nil else {
                throw HTTPFailure.badRequest("gs://\(bucket.name) has no retention policy to lock.")
            }
            guard settings.retentionLocked != true else { return settings }
            settings.retentionLocked = true
            settings.metageneration += 1
            settings.updated = clock.nextChangeTime()
            try store.storeSettings(settings)
            return settings
        }
        return Reply.json(BucketResource.document(locked, name: bucket.name, baseURL: exchange.baseURL))
    }

    /// `buckets.patch` and `buckets.update` (`replacing`): the settings changed as one change, the metageneration
    /// moved on, under the request's metageneration preconditions.
    private func updateBucket(_ exchange: inout Exchange, replacing: Bool) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let fields = try BucketResource.body(
            try await body(&exchange, limit: limits.maximumJSONBytes, what: "bucket resource"))
        let bucket = exchange.bucket
        if case .string(let named)? = fields.first(where: { $0.0 == "name" })?.1, named != bucket.name {
            throw HTTPFailure.badRequest(
                "The bucket resource names \(named), not \(bucket.name); a bucket cannot be renamed.")
        }
        let clock = bucket.clock
        let (bucketACL, defaultObjectACL) = (
            exchange.query["predefinedAcl"], exchange.query["predefinedDefaultObjectAcl"]
        )
        // Read by the writer, in its change; a file that stores none has a new bucket's.
        let unstored = try bucket.settingsWhenNoneStored()
        let updated = try await bucket.change(counted: false) { transaction -> BucketSettings in
            guard let store = transaction.settingsStore else {
                throw StorageError.internalError("The bucket keeps no settings.")
            }
            var settings = try store.storedSettings() ?? unstored
            try Self.checkBucketConditions(conditions, settings, name: bucket.name)
            let now = clock.nextChangeTime()
            try BucketResource.apply(
                fields, to: &settings, replacing: replacing ? BucketSettings(madeAt: now) : nil, creating: false,
                now: now)
            try BucketResource.applyPredefinedACLs(
                bucketACL: bucketACL, defaultObjectACL: defaultObjectACL, to: &settings)
            settings.metageneration += 1
            settings.updated = now
            try store.storeSettings(settings)
            return settings
        }
        return Reply.json(
            BucketResource.document(
                updated, name: bucket.name, baseURL: exchange.baseURL, full: exchange.query["projection"] == "full"))
    }

    /// `buckets.delete`: an empty bucket that this server made for a client goes, file and all (409 when it holds
    /// objects, as on the service); the first bucket, and a bucket file someone else made, are never deleted.
    private func deleteBucket(_ exchange: Exchange) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let bucket = exchange.bucket
        guard bucket !== buckets.primary else {
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(bucket.name) is the bucket storesh serve was started with (\(bucket.path)); it is not deleted through the API."
            )
        }
        // Read by the writer, in its change; a file that stores none has a new bucket's.
        let unstored = try bucket.settingsWhenNoneStored()
        let clock = bucket.clock
        try await buckets.delete(bucket) { transaction -> BucketSettings? in
            let settings = try transaction.settingsStore?.storedSettings() ?? unstored
            try Self.checkBucketConditions(conditions, settings, name: bucket.name)
            guard settings.madeByServer else {
                throw HTTPFailure(
                    .conflict, reason: "conflict",
                    "gs://\(bucket.name) is the bucket file \(bucket.path), which storesh serve did not make; it is not deleted through the API (remove the file yourself)."
                )
            }
            guard try await transaction.scan(prefix: "", after: nil, limit: 1).objects.isEmpty,
                try await transaction.objectVersions?.hasNoncurrentGenerations() != true
            else {
                throw HTTPFailure(.conflict, reason: "conflict", "The bucket you tried to delete is not empty.")
            }
            // Kept restorable for the policy's duration (rule B6), as its objects are, with when it was deleted.
            guard (settings.softDeleteSeconds ?? 0) > 0, let store = transaction.settingsStore else { return nil }
            var kept = settings
            kept.softDeleteTime = clock.nextChangeTime()
            try store.storeSettings(kept)
            return kept
        }
        return Reply.empty(.noContent)
    }

    /// Legacy ACLs are not read or written while uniform bucket-level access is on, as on the service.
    static func refuseLegacyACL(_ settings: BucketSettings) throws {
        if settings.uniformBucketLevelAccess {
            throw HTTPFailure.badRequest(
                "Cannot get legacy ACL for a bucket that has uniform bucket-level access enabled (rule B7).")
        }
    }

    /// An object's ACL: its own, else its bucket's default object ACL.
    static func objectACL(_ object: ObjectMetadata, _ settings: BucketSettings, bucket: String) -> JSONValue {
        object.cloudStorage.acl.flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
            ?? settings.defaultObjectAcl ?? BucketResource.defaultACL(bucket, objects: true)
    }

    /// `getIamPolicy` and `setIamPolicy` (rule B7): kept as given and answered; storesh serve decides nothing by it.
    private func bucketIAM(_ exchange: inout Exchange) async throws -> Answer {
        let bucket = exchange.bucket
        switch exchange.method {
        case .get:
            return Reply.json(try bucket.settings().iamPolicy ?? BucketResource.defaultIAMPolicy(bucket.name))
        case .put:
            let data = try await body(&exchange, limit: limits.maximumJSONBytes, what: "IAM policy")
            guard let given = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                throw HTTPFailure.badRequest("The IAM policy is not valid JSON.")
            }
            let unstored = try bucket.settingsWhenNoneStored()
            let stored = try await bucket.change(counted: false) { transaction -> JSONValue in
                guard let store = transaction.settingsStore else {
                    throw StorageError.internalError("The bucket keeps no settings.")
                }
                var settings = try store.storedSettings() ?? unstored
                let etag = BucketResource.entityTag(metageneration: (settings.iamPolicyVersion ?? 1) + 1)
                let policy = try BucketResource.iamPolicy(given, name: bucket.name, settings: settings, etag: etag)
                settings.iamPolicy = policy
                settings.iamPolicyVersion = (settings.iamPolicyVersion ?? 1) + 1
                try store.storeSettings(settings)
                return policy
            }
            return Reply.json(stored)
        default:
            throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.get, .put], what: "a bucket's IAM policy")
        }
    }

    /// The metageneration preconditions of a request on a bucket.
    static func checkBucketConditions(_ conditions: Conditions, _ settings: BucketSettings, name: String) throws {
        if let required = conditions.metagenerationMatch, required != settings.metageneration {
            throw StorageError(
                .preconditionFailed,
                "gs://\(name) is at metageneration \(settings.metageneration), not \(required); nothing was changed.")
        }
        if let refused = conditions.metagenerationNotMatch, refused == settings.metageneration {
            throw HTTPFailure(.notModified, reason: "notModified", "")
        }
    }

    // MARK: List

    private func listObjects(_ exchange: Exchange) throws -> Answer {
        let query = exchange.query
        let delimited: Bool
        switch query["delimiter"] {
        case nil, "": delimited = false
        case "/": delimited = true
        case let other?:
            throw HTTPFailure.badRequest("storesh serve lists with the delimiter '/' only, not '\(other)'.")
        }
        let matchGlob = try query["matchGlob"].map { try MatchGlob($0) }
        let filter = try query["filter"].flatMap { $0.isEmpty ? nil : $0 }.map { text throws(StorageError) in
            try ObjectContextFilter(parsing: text)
        }
        let includeTrailingDelimiter = try query.flag("includeTrailingDelimiter")
        let versions = try query.flag("versions")
        let softDeleted = try query.flag("softDeleted")
        if (versions || softDeleted) && (matchGlob != nil || filter != nil || includeTrailingDelimiter) {
            throw HTTPFailure.badRequest(
                "storesh serve lists generations (versions, softDeleted) without matchGlob, filter or includeTrailingDelimiter."
            )
        }
        var maxResults = ListOptions.maximumResults
        if let given = try query.integer("maxResults") {
            // The service caps a larger page size at 1000; zero or less is an error.
            guard given > 0 else {
                throw HTTPFailure.badRequest(
                    "Invalid value for the query parameter 'maxResults': \(given); it must be positive.")
            }
            maxResults = Int(min(given, Int64(ListOptions.maximumResults)))
        }
        let options = ListOptions(
            maxResults: maxResults, pageToken: query["pageToken"].flatMap { $0.isEmpty ? nil : $0 },
            startOffset: query["startOffset"], endOffset: query["endOffset"], includeMetadata: true)
        let prefix = query["prefix"] ?? ""
        let page =
            versions || softDeleted
            ? try exchange.bucket.reader().listGenerations(
                prefix: prefix, delimited: delimited, options: options, softDeleted: softDeleted)
            : try exchange.bucket.reader().listStoredNames(
                prefix: prefix, delimited: delimited, options: options, matchGlob: matchGlob, filter: filter,
                includeTrailingDelimiter: includeTrailingDelimiter)
        let stored = StoredListingPage(
            prefixes: page.prefixes.map { $0 + "/" },
            items: try exchange.bucket.reader().withRetentionExpiration(page.itemMetadata ?? []),
            continuation: page.nextPageToken)
        return Reply.json(CloudStorageJSON.listDocument(stored, baseURL: exchange.baseURL))
    }

    // MARK: Get

    private func getObject(_ exchange: Exchange, name: ObjectName, media: Bool) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let generation = try exchange.query.generation()
        if try exchange.query.flag("softDeleted") {
            // A soft-deleted generation's metadata only: its content is read once it is restored (rule B6).
            guard let generation, !media else {
                throw HTTPFailure.badRequest(
                    "A soft-deleted object is read by its generation, metadata only (restore it to read its content).")
            }
            return Reply.json(
                objectResource(
                    try exchange.bucket.reader().softDeletedGenerationMetadata(of: name, generation: generation),
                    exchange))
        }
        if !media {
            let object = try storage.metadata(of: name, generation: generation, in: exchange.bucket)
            try checkForRead(conditions, object, headers: exchange.request.headers)
            return Reply.json(objectResource(object, exchange))
        }
        // Conditions first, on the metadata: a refused read reads no content.
        let current = try storage.metadata(of: name, generation: generation, in: exchange.bucket)
        try checkForRead(conditions, current, headers: exchange.request.headers)
        let key = try CustomerKey(exchange.request.headers)
        try CustomerKey.check(key, reading: current)
        let read = try download(name, generation: generation, in: exchange.bucket, request: exchange.request.headers)
        let object = read.object
        try CustomerKey.check(key, reading: object)
        try checkForRead(conditions, object, headers: exchange.request.headers)
        return try Reply.media(
            object, content: read.content, partial: read.partial, request: exchange.request.headers,
            entityTag: ObjectResource.etag(object))
    }

    /// A read's conditions: a failed `…Match` is 412; a failed `…NotMatch` is 304, as the service answers.
    /// `If-Match` and `If-None-Match` (RFC 9110) name the resource's etag (`ObjectResource.etag`), as on the service:
    /// a failed `If-Match` is 412, a matched `If-None-Match` 304.
    private func checkForRead(_ conditions: Conditions, _ object: ObjectMetadata, headers: HTTPFields) throws {
        guard conditions.precondition.isSatisfied(by: object) else {
            throw StorageError.preconditionFailed(object.fullPath, conditions.precondition, actual: object)
        }
        let tag = ObjectResource.etag(object)
        if let required = headers[.ifMatch], !Self.entityTags(required, include: tag) {
            throw StorageError(
                .preconditionFailed,
                "The object's etag is \(tag), not one that If-Match names (\(required)); nothing was read.")
        }
        if conditions.generationNotMatch == object.generation
            || conditions.metagenerationNotMatch == object.metageneration
            || headers[.ifNoneMatch].map({ Self.entityTags($0, include: tag) }) == true
        {
            throw HTTPFailure(.notModified, reason: "notModified", "Not Modified")
        }
    }

    /// Whether a list of entity tags (`"a", W/"b"`, or `*`) names `tag`.
    static func entityTags(_ list: String, include tag: String) -> Bool {
        list.split(separator: ",").contains { item in
            var value = item.trimmingCharacters(in: .whitespaces)
            if value == "*" { return true }
            if value.hasPrefix("W/") { value.removeFirst(2) }
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return value == tag
        }
    }

    // MARK: Patch, update, delete

    /// PATCH merges (rules M4–M6); PUT (`update`) replaces every writable property with what the body gives.
    private func patchObject(_ exchange: inout Exchange, name: ObjectName, replacing: Bool) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let generation = try exchange.query.generation()
        let body = try await jsonBody(&exchange, what: "object resource")
        try body.refuseRetention(unless: try exchange.bucket.settings())
        var requested = body.update
        requested.cloudStorage.overridesUnlockedRetention = try exchange.query.flag("overrideUnlockedRetention")
        // An ACL is one the bucket's settings allow (rule B7), kept in its checked form.
        if case .some(.some(let text)) = requested.cloudStorage.acl {
            let given = (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .null
            let list = try BucketResource.accessControlList(
                given, field: "acl", settings: try exchange.bucket.settings())
            requested.cloudStorage.acl = .some(list.map { $0.serialized })
        }
        if let predefined = try predefinedACL(exchange) { requested.cloudStorage.acl = .some(predefined) }
        if replacing {
            for property in WritableProperty.allCases where requested.properties[property] == nil {
                requested.properties[property] = .unset
            }
            requested.clearsCustomMetadata = true
            requested.customMetadata = requested.customMetadata.filter {
                if case .set = $0.value { true } else { false }
            }
            // What an update leaves out of Cloud Storage's own fields goes, but the custom time (rule M9).
            requested.cloudStorage.temporaryHold = requested.cloudStorage.temporaryHold ?? false
            requested.cloudStorage.eventBasedHold = requested.cloudStorage.eventBasedHold ?? false
            if requested.cloudStorage.contexts.isEmpty { requested.cloudStorage.clearsContexts = true }
        }
        // On this API download tokens are custom metadata like any other (G6: it hides nothing): a client's
        // `update` resends them, and one that leaves them out removes them, as the service does.
        let baseURL = exchange.baseURL
        let result = try await exchange.bucket.change { [requested] transaction in
            // A generation named is updated as that generation, live or noncurrent (rule B5).
            let versions = try StorageService.objectVersions(transaction, generation: generation)
            let existing: ObjectMetadata
            if let generation, let versions {
                existing = try await versions.metadata(of: name, generation: generation)
            } else {
                existing = try await transaction.metadata(of: name)
            }
            try body.refuseReadOnlyChanges(
                against: ObjectResource.cloudStorage(
                    existing, baseURL: baseURL, customerKey: existing.cloudStorage.customerKeySHA256), object: existing)
            if let storageClass = body.storageClass,
                storageClass != (existing.cloudStorage.storageClass ?? CloudStorageFields.defaultStorageClass)
            {
                throw HTTPFailure.badRequest(
                    "An object's storage class is changed by a rewrite, not by a patch or an update (it is \(existing.cloudStorage.storageClass ?? CloudStorageFields.defaultStorageClass)); nothing was changed."
                )
            }
            let precondition = try conditions.precondition(given: existing, name: name.rawValue)
            guard let generation, let versions else {
                return try await transaction.updateMetadata(of: name, requested, precondition: precondition)
            }
            return try await versions.updateMetadata(
                of: name, generation: generation, requested, precondition: precondition)
        }
        return Reply.json(objectResource(result.metadata, exchange))
    }

    private func deleteObject(_ exchange: Exchange, name: ObjectName) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let generation = try exchange.query.generation()
        try await exchange.bucket.change { transaction -> Void in
            // A generation named is deleted for good, live or noncurrent (rule B5); without one, the live object goes
            // (kept as a noncurrent generation while the bucket's versioning is on).
            if let generation, let versions = try StorageService.objectVersions(transaction, generation: generation) {
                let existing = try await versions.metadata(of: name, generation: generation)
                return try await versions.delete(
                    name, generation: generation,
                    precondition: try conditions.precondition(given: existing, name: name.rawValue))
            }
            guard let existing = try await transaction.metadataIfPresent(of: name) else {
                throw StorageError.objectNotFound(name.rawValue)
            }
            try await transaction.delete(
                name, precondition: try conditions.precondition(given: existing, name: name.rawValue))
        }
        return Reply.empty()
    }

    // MARK: Copy and rewrite

    /// The destination gets the source's content and metadata, with the body's properties laid over them: a new
    /// object (new generation, metageneration 1), in `target` (the source's bucket or another). A rewrite of an
    /// object larger than one call's share (`maxBytesRewrittenPerCall`, else `RewriteToken.defaultStep`) answers
    /// `done: false` with a `rewriteToken` until the call that takes it past the end, which writes the object in one
    /// change, as the source was at the generation the first call found: the destination never shows part of it.
    private func copyObject(
        _ exchange: inout Exchange, from source: ObjectName, to destination: ObjectName, in target: ServedBucket,
        rewrite: Bool
    ) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let sourceConditions = try Conditions(exchange.query, prefix: "ifSource")
        var sourceGeneration = try exchange.query.generation("sourceGeneration")
        let overrides = try await jsonBody(&exchange, what: "destination object resource")
        let origin = exchange.bucket
        // The source is read with its customer-supplied key; the destination is written with the request's (or none).
        let sourceKey = try CustomerKey(exchange.request.headers, copySource: true)
        let destinationKey = try CustomerKey(exchange.request.headers)
        // The destination's ACL, when the request names a predefined one, as the destination bucket allows it.
        let predefined = try predefinedACL(exchange, parameter: "destinationPredefinedAcl", in: target)
        let checkSource: @Sendable (ObjectMetadata) throws -> Void = { [sourceGeneration] original in
            if let sourceGeneration, sourceGeneration != original.generation {
                throw StorageError.objectNotFound(source.rawValue)
            }
            try CustomerKey.check(sourceKey, reading: original)
            guard sourceConditions.hold(for: original) else {
                throw StorageError(
                    .preconditionFailed,
                    "Object \(source.rawValue) does not meet the request's source conditions. Nothing was changed.")
            }
        }
        var rewritten: Int64 = 0
        if rewrite {
            let step = try exchange.query.integer("maxBytesRewrittenPerCall") ?? RewriteToken.defaultStep
            guard step > 0 else {
                throw HTTPFailure.badRequest(
                    "Invalid maxBytesRewrittenPerCall \(step): it must be a positive number of bytes.")
            }
            let route = RewriteToken.Route(
                sourceBucket: origin.name, source: source.rawValue, destinationBucket: target.name,
                destination: destination.rawValue)
            if let text = exchange.query["rewriteToken"], !text.isEmpty {
                let token = try RewriteToken(text, for: route)
                if let sourceGeneration, sourceGeneration != token.generation {
                    throw HTTPFailure.badRequest(
                        "Invalid rewriteToken: it continues a rewrite of generation \(token.generation), not \(sourceGeneration)."
                    )
                }
                sourceGeneration = token.generation
                rewritten = token.bytesRewritten
            }
            let original = try storage.metadata(of: source, generation: sourceGeneration, in: origin)
            try checkSource(original)
            // Both numbers are the client's (the step, the token's count): summed without trapping, a sum past
            // the largest number is past the object's end, and the rewrite is done.
            let (sum, overflow) = rewritten.addingReportingOverflow(step)
            rewritten = overflow ? .max : sum
            if rewritten < original.size {
                let token = RewriteToken(route: route, generation: original.generation, bytesRewritten: rewritten)
                return Reply.json(
                    .object([
                        ("kind", .string("storage#rewriteResponse")),
                        ("totalBytesRewritten", .string(String(rewritten))),
                        ("objectSize", .string(String(original.size))),
                        ("done", .bool(false)),
                        ("rewriteToken", .string(token.text)),
                    ]))
            }
        }
        let checkGeneration: @Sendable (ObjectMetadata) throws -> Void = { [sourceGeneration] original in
            if let sourceGeneration, sourceGeneration != original.generation {
                throw StorageError(
                    .preconditionFailed,
                    "Object \(source.rawValue) changed during the rewrite (generation \(original.generation), not \(sourceGeneration)); nothing was written. Start the rewrite again."
                )
            }
            try checkSource(original)
        }
        let storageClass = overrides.storageClass
        let update = overrides.update
        let object = try await storage.copy(
            StorageService.Copy(
                source: source, generation: sourceGeneration, destination: destination, conditions: conditions,
                check: checkGeneration,
                options: { original in
                    var options = try StorageService.copiedOptions(
                        original, overrides: update, storageClass: storageClass)
                    options.cloudStorage.customerKeySHA256 = destinationKey?.sha256
                    if let predefined { options.cloudStorage.acl = predefined }
                    return options
                }),
            from: origin, to: target)
        let resource = objectResource(object, exchange)
        guard rewrite else { return Reply.json(resource) }
        return Reply.json(
            .object([
                ("kind", .string("storage#rewriteResponse")),
                ("totalBytesRewritten", .string(String(object.size))),
                ("objectSize", .string(String(object.size))),
                ("done", .bool(true)),
                ("resource", resource),
            ]))
    }

    /// An object as the JSON API answers this request: its hashes shown if it has no customer-supplied key, or the
    /// request gives it.
    func objectResource(_ object: ObjectMetadata, _ exchange: Exchange) -> JSONValue {
        let key = (try? CustomerKey(exchange.request.headers)).flatMap { $0 }
        // With the time the bucket's retention policy lets it go (rule M9), as the service answers it.
        let object = (try? exchange.bucket.reader().withRetentionExpiration([object]).first) ?? object
        let resource = ObjectResource.cloudStorage(object, baseURL: exchange.baseURL, customerKey: key?.sha256)
        // `projection=full` names the owner: whoever made it, here the administrator every request is (rule B7).
        guard exchange.query["projection"] == "full", case .object(let members) = resource else { return resource }
        return .object(members + [("owner", .object([("entity", .string(administratorEntity))]))])
    }

    /// Who every request on the JSON and XML APIs is, as an ACL names them: the service account of the key signed URLs
    /// are checked against (`--signing-key`), else the project's owners.
    var administratorEntity: String { signingKey.map { "user-\($0.email)" } ?? "project-owners-0" }

    /// The ACL a request's `parameter` (`predefinedAcl`, `destinationPredefinedAcl`) names for the object it makes or
    /// changes in `bucket` (the request's, unless a copy names another), as its text; nil when it names none.
    func predefinedACL(
        _ exchange: Exchange, parameter: String = "predefinedAcl", in bucket: ServedBucket? = nil
    ) throws -> String? {
        guard let name = exchange.query[parameter] else { return nil }
        let settings = try (bucket ?? exchange.bucket).settings()
        return try BucketResource.predefinedObjectACL(
            name, owner: administratorEntity, parameter: parameter, settings: settings
        ).serialized
    }

    /// `objects.restore`: a soft-deleted generation is live again, as a new generation, under the request's conditions
    /// on the live object it replaces (rule B6).
    private func restoreObject(_ exchange: Exchange, name: ObjectName) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        guard let generation = try exchange.query.generation() else {
            throw HTTPFailure.required("Required parameter: generation (the soft-deleted generation to restore).")
        }
        let restored = try await storage.restore(
            name, generation: generation, in: exchange.bucket, conditions: conditions)
        return Reply.json(objectResource(restored, exchange))
    }

    /// `objects.move`: the object renamed in its bucket, in one change (the bucket's own move, rule M10): the
    /// destination gets the source's content and metadata as a new generation, and the source goes (as the generation
    /// read, leaving no noncurrent or soft-deleted generation), or nothing happens. The `ifSource…` conditions guard
    /// the source, the others the destination.
    private func moveObject(
        _ exchange: Exchange, from source: ObjectName, to destination: ObjectName
    ) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let sourceConditions = try Conditions(exchange.query, prefix: "ifSource")
        guard source != destination else {
            throw HTTPFailure.badRequest("An object cannot be moved onto itself (\(source.rawValue)).")
        }
        let moved = try await storage.move(
            source, to: destination, in: exchange.bucket, sourceConditions: sourceConditions, conditions: conditions)
        return Reply.json(objectResource(moved, exchange))
    }

    /// `compose`: the destination gets the sources' contents one after another (at most 32 sources), each source
    /// as it is now or at the generation named, if its `objectPreconditions` hold; the destination's metadata is the
    /// request's `destination` resource (no content type unless it names one, as on the service), and the query's
    /// conditions guard the destination. One transaction: the sources are read as one state of the bucket, and with
    /// `deleteSourceObjects` deleted in the same change (each the generation read).
    private func composeObject(_ exchange: inout Exchange, to destination: ObjectName) async throws -> Answer {
        let conditions = try Conditions(exchange.query)
        let request = try ComposeRequest(
            try await body(&exchange, limit: limits.maximumJSONBytes, what: "compose request"))
        let sources = try request.sources.map {
            StorageService.ComposeSource(
                name: try objectName($0.name), generation: $0.generation, ifGenerationMatch: $0.ifGenerationMatch)
        }
        // Every source is read with the request's customer-supplied key, and the composite written with it.
        let key = try CustomerKey(exchange.request.headers)
        var options = request.destination.writeOptions
        if let predefined = try predefinedACL(exchange, parameter: "destinationPredefinedAcl") {
            options.cloudStorage.acl = predefined
        }
        let object: ObjectMetadata
        do {
            object = try await storage.compose(
                sources, into: destination, in: exchange.bucket, options: options, conditions: conditions, key: key,
                deletingSources: request.deletesSources)
        } catch StorageService.Refusal.tooLarge(let size) {
            throw objectTooLarge(size)
        } catch StorageService.Refusal.missingSource(let name, let generation) {
            // Named as the service names a missing object, the source's name (not the destination's).
            let at = generation.map { " (generation \($0))" } ?? ""
            throw HTTPFailure(
                .notFound, reason: "notFound",
                "No such object: \(exchange.bucket.name)/\(name)\(at); it cannot be composed, and nothing was changed.")
        }
        return Reply.json(objectResource(object, exchange))
    }

    // MARK: Uploads

    private func upload(_ exchange: inout Exchange) async throws -> Answer {
        if let id = exchange.query["upload_id"] {
            switch exchange.method {
            case .put, .post: return try await resumableChunk(&exchange, id: id)
            case .delete:
                do {
                    _ = try uploads.withSession(id) { session in try session.machine.cancel() }
                } catch let refusal as UploadMachine.Refusal {
                    throw failure(refusal, upload: id, firebase: false)
                }
                return Reply.empty(HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"))
            default:
                throw HTTPFailure.methodNotAllowed(
                    exchange.method, allowed: [.put, .post, .delete], what: "a resumable upload")
            }
        }
        guard exchange.method == .post else {
            throw HTTPFailure.methodNotAllowed(
                exchange.method, allowed: [.post], what: "uploads (a resumable upload's chunks go to its upload URL)")
        }
        let conditions = try Conditions(exchange.query)
        if exchange.query["kmsKeyName"] != nil {
            throw HTTPFailure.badRequest("kmsKeyName is not supported by storesh serve.")
        }
        switch exchange.query["uploadType"] {
        case "media":
            var upload = UploadRequest(
                bucket: exchange.bucket, name: try objectName(exchange.query["name"]), options: WriteOptions(),
                conditions: conditions, firebase: false)
            upload.options.cloudStorage.acl = try predefinedACL(exchange)
            if let type = exchange.request.headers[.contentType] { upload.options.properties[.contentType] = type }
            if let encoding = exchange.query["contentEncoding"] {
                upload.options.properties[.contentEncoding] = encoding
            }
            upload.options.cloudStorage.customerKeySHA256 = try CustomerKey(exchange.request.headers)?.sha256
            let content = try await receiveObject(&exchange)
            return Reply.json(objectResource(try await finishUpload(upload, content: content), exchange))
        case "multipart":
            let parts = try await receiveMultipart(&exchange)
            let metadata = try ObjectMetadataBody(json: parts.metadata, what: "upload's metadata part")
            var upload = try uploadRequest(metadata, exchange: exchange, conditions: conditions)
            if upload.options.properties[.contentType] == nil, let type = parts.contentType {
                upload.options.properties[.contentType] = type
            }
            return Reply.json(objectResource(try await finishUpload(upload, content: parts.content), exchange))
        case "resumable":
            let metadata = try await jsonBody(&exchange, what: "upload's metadata")
            var upload = try uploadRequest(metadata, exchange: exchange, conditions: conditions)
            if upload.options.properties[.contentType] == nil, let type = exchange.header("X-Upload-Content-Type") {
                upload.options.properties[.contentType] = type
            }
            let declared = try announcedSize(exchange, headers: ["X-Upload-Content-Length"])
            // As the service does, a condition that fails now fails before any byte is sent (it is checked again
            // when the last byte lands).
            if conditions.precondition != .none || conditions.hasNotMatch {
                let existing = try await exchange.bucket.reader().metadataIfPresent(of: upload.name)
                guard conditions.hold(for: existing) else {
                    throw StorageError.preconditionFailed(
                        upload.name.rawValue, conditions.precondition, actual: existing)
                }
            }
            let id = try uploads.start(upload, declaredSize: declared, spool: Spool(directory: spoolDirectory))
            let location =
                "\(exchange.baseURL)/upload/storage/v1/b/\(exchange.bucket.name)/o?uploadType=resumable&upload_id=\(id)"
            return Reply.empty(.ok, headers: [.location: location, HTTPField.Name("X-GUploader-UploadID")!: id])
        case nil:
            throw HTTPFailure.required("Required parameter: uploadType (media, multipart or resumable).")
        case let other?:
            throw HTTPFailure.badRequest("Invalid uploadType '\(other)': it is media, multipart or resumable.")
        }
    }

    /// The upload of the object a metadata body names (or the `name` parameter).
    private func uploadRequest(
        _ metadata: ObjectMetadataBody, exchange: Exchange, conditions: Conditions
    ) throws -> UploadRequest {
        if let given = exchange.query["name"], let named = metadata.name, given != named {
            throw HTTPFailure.badRequest("The name parameter '\(given)' and the metadata's name '\(named)' differ.")
        }
        try metadata.refuseRetention(unless: try exchange.bucket.settings())
        var options = metadata.writeOptions
        options.cloudStorage.customerKeySHA256 = try CustomerKey(exchange.request.headers)?.sha256
        if let predefined = try predefinedACL(exchange) { options.cloudStorage.acl = predefined }
        return UploadRequest(
            bucket: exchange.bucket, name: try objectName(metadata.name ?? exchange.query["name"]), options: options,
            expectedCRC32C: metadata.crc32c, conditions: conditions, firebase: false)
    }

    /// One chunk of a resumable upload (`Content-Range: bytes FIRST-LAST/TOTAL`, `TOTAL` may be `*`), or a status
    /// query (`bytes */TOTAL`). Answers 308 with the bytes received so far until the last byte, then the object.
    /// The chunk's place and size are checked before its bytes are read, which stream into the session's spool.
    func resumableChunk(_ exchange: inout Exchange, id: String) async throws -> Answer {
        let rangeHeader = exchange.request.headers[.contentRange]
        let declaredLength = exchange.request.headers[.contentLength].flatMap(Int64.init)
        let range = try ContentRange(rangeHeader, bodyLength: declaredLength)
        let hashHeader = exchange.header("X-Goog-Hash")
        // The Go client asks not to be sent a 308 (its HTTP stack would take it for a redirect): the step is then a
        // 200 that says 308 in X-Http-Status-Code-Override, as Cloud Storage answers it.
        let overridesIncomplete = exchange.header("X-GUploader-No-308")?.lowercased() == "yes"
        // The machine decides under the session's lock where this chunk goes; its bytes arrive outside it.
        let start: UploadMachine.ChunkStart
        let spool: Spool?
        do {
            (start, spool) = try uploads.withSession(id) { session in
                (
                    try session.machine.chunkBegins(
                        first: range.first, end: range.end, total: range.total, length: declaredLength), session.spool
                )
            }
        } catch let refusal as UploadMachine.Refusal {
            throw failure(refusal, upload: id, firebase: false)
        }
        switch start {
        case .replay(let final): return Self.replay(final)
        case .receive(let skip, let keep, let total):
            guard let spool else { throw UploadSessions.busy }
            let length = try await receiveChunk(
                &exchange, session: id, into: spool, limit: keep, skipping: skip,
                tooLarge: total.map {
                    HTTPFailure.badRequest("Content-Range ends past the object's size of \($0) bytes.")
                } ?? self.objectTooLarge(),
                check: { try range.check(bodyLength: $0, header: rangeHeader) })
            let end: UploadMachine.ChunkEnd
            let upload: UploadRequest
            do {
                (end, upload) = try uploads.withSession(id) { session in
                    (
                        try session.machine.chunkArrived(
                            length: length, ending: range.whole ? .wholeObject : .atDeclaredSize), session.request
                    )
                }
            } catch let refusal as UploadMachine.Refusal {
                throw failure(refusal, upload: id, firebase: false)
            }
            switch end {
            case .incomplete(let received):
                var headers = HTTPFields()
                if received > 0 { headers[.range] = "bytes=0-\(received - 1)" }
                if overridesIncomplete {
                    headers[HTTPField.Name("X-Http-Status-Code-Override")!] = "308"
                    return Reply.empty(.ok, headers: headers)
                }
                return Reply.empty(HTTPResponse.Status(code: 308, reasonPhrase: "Resume Incomplete"), headers: headers)
            case .land:
                var landing = upload
                if let hashHeader, let crc = Self.hash("crc32c", in: hashHeader) { landing.lastRequestCRC32C = crc }
                let baseURL = exchange.baseURL
                let answer = try await landUpload(
                    session: id, landing, spool: spool, firebase: false,
                    resource: {
                        ObjectResource.cloudStorage(
                            $0, baseURL: baseURL, customerKey: $0.cloudStorage.customerKeySHA256)
                    })
                return Reply.json(answer.body, status: answer.status)
            }
        }
    }

    /// The answer an ended upload gave, given again.
    static func replay(_ final: UploadMachine.Final?, headers: HTTPFields = [:]) -> Answer {
        guard let final else { return Reply.empty(.ok, headers: headers) }
        return Reply.json(final.body, status: HTTPResponse.Status(code: final.status), headers: headers)
    }

    /// One hash of an `X-Goog-Hash` header (`crc32c=…,md5=…`).
    static func hash(_ name: String, in header: String) -> String? {
        for piece in header.split(separator: ",") {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(name + "=") { return String(trimmed.dropFirst(name.count + 1)) }
        }
        return nil
    }
}

/// A resumable chunk's `Content-Range`: `bytes FIRST-LAST/TOTAL`, `bytes FIRST-LAST/*`, or `bytes */TOTAL` (a
/// status query, or the end of an upload whose bytes have all been sent). Read before the chunk's bytes, whose
/// count is checked against it once they have arrived.
struct ContentRange {
    var first: Int64?
    /// One past the last byte the chunk carries.
    var end: Int64?
    var total: Int64?
    /// No header: the whole object in this one request.
    var whole = false

    init(_ header: String?, bodyLength: Int64?) throws {
        guard let header else {
            first = 0
            whole = true
            return
        }
        let invalid = HTTPFailure.badRequest(
            "Invalid Content-Range '\(header)': it must be 'bytes FIRST-LAST/TOTAL', 'bytes FIRST-LAST/*' or 'bytes */TOTAL'."
        )
        guard header.hasPrefix("bytes ") else { throw invalid }
        let parts = header.dropFirst(6).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw invalid }
        if parts[1] != "*" {
            guard let total = Int64(parts[1]), total >= 0 else { throw invalid }
            self.total = total
        }
        if parts[0] == "*" {
            if let bodyLength, bodyLength > 0 {
                throw HTTPFailure.badRequest(
                    "Content-Range 'bytes */…' asks for the upload's status and carries no bytes, but this request has \(bodyLength)."
                )
            }
            end = nil
            return
        }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first,
            last < Int64.max
        else {
            throw invalid
        }
        if let bodyLength, last - first + 1 != bodyLength {
            throw HTTPFailure.badRequest(
                "Content-Range '\(header)' announces \(last - first + 1) bytes, but the request carries \(bodyLength).")
        }
        if let total, last >= total {
            throw HTTPFailure.badRequest("Content-Range '\(header)' ends past the object's size of \(total) bytes.")
        }
        self.first = first
        end = last + 1
    }

    /// Checks the count of bytes that arrived against the range (a body without a declared length).
    func check(bodyLength: Int64, header: String?) throws {
        if whole {
            return
        }
        let announced = first.flatMap { first in end.map { $0 - first } } ?? 0
        guard bodyLength == announced else {
            throw HTTPFailure.badRequest(
                "Content-Range '\(header ?? "")' announces \(announced) bytes, but the request carried \(bodyLength).")
        }
    }
}

/// A rewrite in progress, as its `rewriteToken` carries it: which copy it continues (each call must name the same
/// source and destination), the source's generation the first call found (the copy is of that generation or fails),
/// and the bytes counted so far. The server keeps nothing between calls.
struct RewriteToken {
    /// One call's share of a rewrite when the request gives no `maxBytesRewrittenPerCall`: an object larger than
    /// this is rewritten over several calls, as the service rewrites large objects, so that clients' continuation
    /// loops are exercised.
    static let defaultStep: Int64 = 32 << 20

    /// Compared as bytes, field by field (rule P7), never with `==` on its strings.
    struct Route {
        var sourceBucket: String
        var source: String
        var destinationBucket: String
        var destination: String
    }

    var route: Route
    var generation: Int64
    var bytesRewritten: Int64

    init(route: Route, generation: Int64, bytesRewritten: Int64) {
        (self.route, self.generation, self.bytesRewritten) = (route, generation, bytesRewritten)
    }

    /// Reads `text` (base64url of a JSON array) for a call on `expected`: a token of another copy, or one that is
    /// not this server's, is a 400.
    init(_ text: String, for expected: Route) throws {
        let invalid = HTTPFailure.badRequest(
            "Invalid rewriteToken: it is not one this server gave for this source and destination.")
        guard let data = Base64URL.decoded(text),
            let fields = try? JSONDecoder().decode([String].self, from: data), fields.count == 7,
            fields[0] == "storesh-rewrite-1",
            let generation = Int64(fields[5]), let bytes = Int64(fields[6]), bytes > 0
        else { throw invalid }
        let route = Route(
            sourceBucket: fields[1], source: fields[2], destinationBucket: fields[3], destination: fields[4])
        // Names compared as bytes (rule P7), as everywhere else.
        guard NameBytes.sameBytes(route.source, expected.source),
            NameBytes.sameBytes(route.destination, expected.destination),
            NameBytes.sameBytes(route.sourceBucket, expected.sourceBucket),
            NameBytes.sameBytes(route.destinationBucket, expected.destinationBucket)
        else { throw invalid }
        self.init(route: expected, generation: generation, bytesRewritten: bytes)
    }

    var text: String {
        let fields = [
            "storesh-rewrite-1", route.sourceBucket, route.source, route.destinationBucket, route.destination,
            String(generation), String(bytesRewritten),
        ]
        return Base64URL.encoded(Data(JSONValue.array(fields.map { .string($0) }).serialized.utf8))
    }
}
