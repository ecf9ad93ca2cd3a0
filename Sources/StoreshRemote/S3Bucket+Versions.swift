import Foundation
import StoreshCore
import StoreshWire

/// An S3 bucket's versions (rules B5, S2): where versioning is on, each write and delete leaves the version it
/// replaces, named by its version id (`NAME#VERSIONID`), listed by ListObjectVersions (a key's versions newest first),
/// read with `?versionId=`, deleted for good by id, and brought back as the live object by a copy of it (`restore`),
/// which is also how `storesh undo` puts back what a run deleted or replaced. A delete marker is no version of
/// content: it is not listed, and the version below it is noncurrent since the marker's time. S3 keeps no
/// soft-deleted versions (rule B6 is Cloud Storage's).
extension S3Bucket: ObjectVersions {
    /// S3's version ids: printable ASCII without spaces, up to 1,024 bytes (`null` names the version written while
    /// versioning was off).
    package func generation(named text: String) -> ObjectGeneration? {
        guard !text.isEmpty, text.utf8.count <= 1024, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return nil
        }
        return .version(text)
    }

    package func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await headVersion(object, generation).metadata
    }

    /// HEAD with `versionId`: the version's metadata, and how it is encrypted (which a copy of it names again).
    private func headVersion(
        _ object: ObjectName, _ generation: ObjectGeneration
    ) async throws
        -> (metadata: ObjectMetadata, encryption: [(String, String)])
    {
        let response = try await send(
            .HEAD, objectPath(object.rawValue), query: [("versionId", generation.description)], repeatable: true,
            object: object.rawValue,
            acceptFailure: true)
        guard (200..<300).contains(response.status) else {
            if response.header("x-amz-delete-marker") == "true" || response.status == 404 || response.status == 400 {
                throw Self.noVersion(object, generation, bucket: name)
            }
            throw failure(response, object: object.rawValue, precondition: .none)
        }
        let encryption = Self.encryptionHeaders(response.headers.map { ($0.0.lowercased(), $0.1) })
        return (try headMetadata(response, key: object.rawValue, keepsHeaders: false), encryption)
    }

    package func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata {
        let version = try await metadata(of: object, generation: generation)
        try Self.refuseIfArchived(version, at: "s3://\(name)/\(object.rawValue)#\(generation)")
        let counter = CountingSink(sink)
        // A version never changes: read whole, its length checked.
        _ = try await send(
            .GET, objectPath(object.rawValue), query: [("versionId", generation.description)], repeatable: true,
            object: object.rawValue,
            into: counter)
        guard counter.count == version.size else {
            throw StorageError(
                .unavailable,
                "The download of \(object.rawValue)#\(generation) ended after \(counter.count) of \(version.size) bytes."
            )
        }
        return version
    }

    /// Only the live version's metadata changes (a copy onto itself, as `meta set NAME` makes it); an older
    /// version's is fixed.
    package func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        let live = try await metadataIfPresent(of: object)
        guard let live, live.versionID == generation.description else {
            throw StorageError.invalidArgument(
                "\(MessageText.name(object.rawValue))#\(generation) is not the live version: S3 changes no older version's metadata (restore it first, or change the live object by its name)."
            )
        }
        return try await updateMetadata(
            of: object, update, precondition: precondition.isConditional ? precondition : .matches(live))
    }

    /// Deletes one version for good (DeleteObject with its `versionId`): when it is the live one, the version below
    /// it becomes live, as on S3. A version under a hold or retention is refused first.
    package func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws {
        let version = try await metadata(of: object, generation: generation)
        guard precondition.isSatisfied(by: version) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: version)
        }
        try version.refuseIfProtected(.deleted, now: Timestamp(date: Date()))
        _ = try await send(
            .DELETE, objectPath(object.rawValue), query: [("versionId", generation.description)], repeatable: true,
            object: object.rawValue)
        completions.forget()
    }

    package func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata
    {
        throw StorageError(
            .objectNotFound,
            "s3://\(name) keeps no soft-deleted versions (S3 has no soft delete); ls -a lists the versions it keeps.")
    }

    /// Brings an older version back as the live object: CopyObject of `?versionId=` onto the key (a new version of
    /// the same content, metadata and class), if the live object (or its absence) satisfies `precondition`.
    package func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata {
        let (version, encryption) = try await headVersion(object, generation)
        let live = try await metadataIfPresent(of: object)
        if let live, live.versionID == version.versionID {
            throw StorageError(
                .objectNotFound,
                "\(MessageText.name(object.rawValue))#\(generation) is the live version: there is nothing to restore.")
        }
        guard precondition.isSatisfied(by: live) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: live)
        }
        try live?.refuseIfProtected(.overwritten, now: Timestamp(date: Date()))
        guard version.size <= Self.largestCopy else {
            throw StorageError.invalidArgument(
                "\(object.rawValue)#\(generation) is \(version.size) bytes; S3 copies objects of up to 5 GiB in one request (CopyObject's limit), so it was not restored."
            )
        }
        try Self.refuseIfArchived(version, at: "s3://\(name)/\(object.rawValue)#\(generation)")
        var headers: [(String, String)] = [
            ("x-amz-copy-source", copySource(object.rawValue, version: generation.description)),
            ("x-amz-metadata-directive", "COPY"),
        ]
        // A copy names the class and the encryption again, or it is STANDARD, encrypted as the bucket's default.
        if let storageClass = version.cloudStorage.storageClass {
            headers.append(("x-amz-storage-class", storageClass))
        }
        let guarded = live.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
        headers += encryption + Self.conditions(guarded)
        let response = try await send(
            .PUT, objectPath(object.rawValue), headers: headers, repeatable: true, object: object.rawValue,
            precondition: guarded,
            acceptFailure: true)
        completions.forget()
        guard (200..<300).contains(response.status), try S3XML.error(response.body) == nil else {
            throw failure(response, object: object.rawValue, precondition: guarded)
        }
        return try await metadata(of: object)
    }

    package func hasNoncurrentGenerations() async throws -> Bool { try await listsNoncurrentGeneration() }

    /// GetBucketVersioning: Enabled keeps what a delete or a write replaces, as noncurrent versions that a restore
    /// (and `storesh undo`) copies back; Suspended or never set, nothing.
    package func deletionsKept() async throws -> DeletionKeeping {
        let response: RemoteResponse
        do {
            response = try await send(.GET, "", query: [("versioning", "")], repeatable: true)
        } catch let error as StorageError where error.code == .unauthorized || error.code == .unauthenticated {
            return .unknown("the credentials may not read the bucket's versioning")
        }
        return try S3XML.value("Status", in: response.body) == "Enabled" ? .noncurrentRestorable : .notKept
    }

    /// One page of ListObjectVersions: the versions of content (not the delete markers) under `prefix`, a key's
    /// newest first; each with what a listing says of it (no content type or custom metadata: `meta get NAME#ID`
    /// reads those), and the noncurrent ones with `timeDeleted`, the time of the version or marker above them.
    /// storesh's token carries S3's markers and that time across pages.
    package func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool
    ) async throws -> ListPage {
        if softDeleted { return ListPage(itemMetadata: []) }
        let maxResults = try options.validatedMaxResults()
        let resume = try options.pageToken.map(VersionPageToken.init(parsing:))
        var query: [(String, String?)] = [
            ("versions", ""), ("encoding-type", "url"), ("prefix", prefix.isEmpty ? nil : prefix),
            ("delimiter", delimited ? "/" : nil),
            ("max-keys", String(maxResults)),
        ]
        if let resume { query += [("key-marker", resume.keyMarker), ("version-id-marker", resume.versionMarker)] }
        let response = try await send(.GET, "", query: query, repeatable: true)
        let listed = try S3XML.versions(response.body)
        var page = ListPage(prefixes: listed.prefixes.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        var metadata: [ObjectMetadata] = []
        // The entry above each one, by key: what makes a version noncurrent, and since when.
        var above: (key: String, time: Timestamp)? = resume.flatMap { token in
            token.aboveTime.map { (token.keyMarker, $0) }
        }
        for entry in listed.entries {
            defer { above = (entry.key, entry.lastModified) }
            guard !entry.isDeleteMarker else { continue }
            var version = ObjectMetadata(
                bucket: name, fullPath: entry.key, generation: 0, metageneration: 0, size: entry.size,
                timeCreated: entry.lastModified,
                updated: entry.lastModified, md5Hash: Self.md5(fromEntityTag: entry.etag), entityTag: entry.etag,
                versionID: entry.versionID)
            if let storageClass = entry.storageClass, storageClass != CloudStorageFields.defaultStorageClass {
                version.cloudStorage.storageClass = storageClass
            }
            if !entry.isLatest {
                // The first of its key on a page that follows one ending in the same key has the time the token kept.
                version.timeDeleted =
                    above.map { NameBytes.sameBytes($0.key, entry.key) ? $0.time : entry.lastModified }
                    ?? entry.lastModified
            }
            page.items.append(entry.key)
            metadata.append(version)
        }
        page.itemMetadata = metadata
        if listed.truncated, let keyMarker = listed.nextKeyMarker {
            let last = listed.entries.last
            page.nextPageToken =
                VersionPageToken(
                    keyMarker: keyMarker, versionMarker: listed.nextVersionMarker ?? "",
                    aboveTime: last.flatMap { NameBytes.sameBytes($0.key, keyMarker) ? $0.lastModified : nil }
                ).text
        }
        return page
    }

    static func noVersion(_ object: ObjectName, _ generation: ObjectGeneration, bucket: String) -> StorageError {
        StorageError(
            .objectNotFound,
            "s3://\(bucket) has no version \(generation) of \(MessageText.name(object.rawValue)) (or it is a delete marker): ls -a lists the versions it keeps."
        )
    }
}

/// storesh's page token of a ListObjectVersions walk: S3's two markers, and the time of the last entry when the
/// next page may start with an older version of the same key (its `timeDeleted`).
struct VersionPageToken {
    var keyMarker: String
    var versionMarker: String
    var aboveTime: Timestamp?

    static let mark = "s3v1:"

    var text: String {
        var fields = [keyMarker, versionMarker]
        if let aboveTime { fields.append(String(aboveTime.microseconds)) }
        return Self.mark + Base64URL.encoded(Data(fields.joined(separator: "\n").utf8))
    }

    init(keyMarker: String, versionMarker: String, aboveTime: Timestamp?) {
        self.keyMarker = keyMarker
        self.versionMarker = versionMarker
        self.aboveTime = aboveTime
    }

    init(parsing text: String) throws {
        guard text.hasPrefix(Self.mark), let data = Base64URL.decoded(text.dropFirst(Self.mark.count)),
            let decoded = String(data: data, encoding: .utf8)
        else {
            throw StorageError.invalidArgument(
                "'\(text)' is not a page token of ls -a on S3 (they start with \(Self.mark)).")
        }
        let fields = decoded.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 2 || fields.count == 3, fields.count == 2 || Int64(fields[2]) != nil else {
            throw StorageError.invalidArgument("'\(text)' is not a page token of ls -a on S3: it is damaged.")
        }
        keyMarker = fields[0]
        versionMarker = fields[1]
        aboveTime = fields.count == 3 ? Int64(fields[2]).map { Timestamp(microseconds: $0) } : nil
    }
}
