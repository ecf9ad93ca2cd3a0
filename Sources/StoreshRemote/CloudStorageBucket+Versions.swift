import Foundation
import StoreshCore
import StoreshWire

/// A Cloud Storage bucket's generations (rules B5, B6), through the JSON API: every request names the generation, and
/// a change is guarded by the state it was decided on, as the live object's are.
extension CloudStorageBucket: ObjectVersions {
    package func generation(named text: String) -> ObjectGeneration? { .number(named: text) }

    package func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await generationMetadata(object, generation: try generation.numbered(object), softDeleted: false)
    }

    /// A soft-deleted generation's metadata (rule B6): its content is read once it is restored.
    package func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata
    {
        let generation = try generation.numbered(object)
        do {
            return try await generationMetadata(object, generation: generation, softDeleted: true)
        } catch let error as StorageError where error.code == .objectNotFound {
            throw StorageError.noSoftDeletedGeneration(object.rawValue, generation, bucketURL: url)
        }
    }

    private func generationMetadata(
        _ object: ObjectName, generation: Int64, softDeleted: Bool
    ) async throws -> ObjectMetadata {
        let request = CloudStorageWire.metadata(
            bucket: name, object: object.rawValue, generation: generation, softDeleted: softDeleted)
        let response = try await send(.GET, url(request), repeatable: true, object: object.rawValue)
        let answered = try CloudStorageJSON.metadata(response.body, bucket: name, what: "a generation's metadata")
        // A server that does not read by generation answers the live object: said, never shown as the one asked for.
        guard answered.generation == generation else {
            throw StorageError.internalError(
                "\(url) answered generation \(answered.generation) of \(MessageText.name(object.rawValue)) when asked for generation \(generation): it does not read objects by generation, so nothing was read as that generation."
            )
        }
        return answered
    }

    package func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata {
        let generation = try generation.numbered(object)
        let metadata = try await metadata(of: object, generation: generation)
        _ = try await send(
            .GET, objectURL(object.rawValue, [("alt", "media"), ("generation", String(generation))]), repeatable: true,
            object: object.rawValue, into: sink)
        return metadata
    }

    package func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        let generation = try generation.numbered(object)
        let before = try await metadata(of: object, generation: generation)
        guard precondition.isSatisfied(by: before) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: before)
        }
        let (planned, changed) = try before.applying(update, now: before.updated)
        guard changed else { return UpdateResult(metadata: before, previous: before, changed: false) }
        let body = CloudStorageJSON.patchBody(from: before, to: planned)
        let guarded = objectURL(
            object.rawValue,
            [("generation", String(generation))] + CloudStorageWire.conditions(guarding: before)
                + CloudStorageWire.retentionOverride(from: before, to: planned))
        let response = try await sendChange(
            .PATCH, guarded, headers: [("Content-Type", "application/json")], body: body, object: object.rawValue,
            precondition: .matches(before)
        ) { current in Self.metadataLanded(current, from: before, to: planned) }
        guard let response else {
            return UpdateResult(
                metadata: try await metadata(of: object, generation: generation), previous: before, changed: true)
        }
        let after = try CloudStorageJSON.metadata(response.body, bucket: name, what: "an update")
        return UpdateResult(metadata: after, previous: before, changed: true)
    }

    package func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws {
        let generation = try generation.numbered(object)
        // Named by its generation, the request is repeatable as a guarded one: the generation is its own precondition.
        var guarded = precondition
        guarded.generation = generation
        _ = try await sendChange(
            .DELETE,
            objectURL(object.rawValue, [("generation", String(generation))] + CloudStorageWire.conditions(guarded)),
            object: object.rawValue, precondition: guarded
        ) { _ in false }
    }

    package func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata {
        let generation = try generation.numbered(object)
        let soft = try await softDeletedMetadata(of: object, generation: generation)
        let request = CloudStorageWire.restore(
            bucket: name, object: object.rawValue, generation: generation, precondition: precondition)
        // Repeated only under a precondition (rule G4); a repeat refused because the first attempt landed finds the
        // object live with the restored content.
        let response = try await sendChange(.POST, url(request), object: object.rawValue, precondition: precondition) {
            current in
            current.md5Hash == soft.md5Hash && current.generation != soft.generation
                && current.generation != precondition.generation
        }
        guard let response else { return try await metadata(of: object) }
        return try CloudStorageJSON.metadata(response.body, bucket: name, what: "a restore")
    }

    /// Read from the bucket's resource (buckets.get, two fields): credentials that may read objects but not the
    /// bucket (a Firebase user's, often) leave it unknown, said so rather than guessed.
    package func deletionsKept() async throws -> DeletionKeeping {
        let response: RemoteResponse
        do {
            response = try await send(
                .GET, url(CloudStorageWire.bucketDeletionSettings(bucket: name)), repeatable: true)
        } catch let error as StorageError where error.code == .unauthorized || error.code == .unauthenticated {
            return .unknown("the credentials may not read the bucket's settings")
        }
        guard let settings = try? JSONDecoder().decode(CloudStorageJSON.DeletionSettings.self, from: response.body)
        else {
            return .unknown("its answer to buckets.get could not be read")
        }
        return settings.keeping
    }

    package func hasNoncurrentGenerations() async throws -> Bool { try await listsNoncurrentGeneration() }

    package func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool
    ) async throws -> ListPage {
        let maxResults = try options.validatedMaxResults()
        let page = try await listPage(
            CloudStorageWire.listGenerations(
                bucket: name, prefix: prefix, delimited: delimited, maxResults: maxResults,
                pageToken: options.pageToken, softDeleted: softDeleted))
        // The service's prefixes end in `/`; a page's are without it.
        return ListPage(
            prefixes: page.prefixes.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 },
            items: page.items.map(\.fullPath),
            nextPageToken: page.continuation, itemMetadata: page.items)
    }
}

/// `mv` on Cloud Storage: objects.move, one atomic request (the service renames; no copy is sent through here).
extension CloudStorageBucket: ObjectMoves {
    package var movesInOneStep: Bool { true }

    package func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        let request = CloudStorageWire.move(
            bucket: name, source: source.rawValue, destination: destination.rawValue,
            sourcePrecondition: sourcePrecondition,
            destinationPrecondition: destinationPrecondition)
        let seen = sourcePrecondition.seenState(of: source)
        let response = try await sendChange(
            .POST, url(request), object: source.rawValue, precondition: destinationPrecondition
        ) { current in
            // A repeat refused because the first attempt landed: the destination is a new object of the source's content.
            guard let seen else { return false }
            return current.md5Hash == seen.md5Hash && current.generation != destinationPrecondition.generation
                && current.generation != seen.generation
        }
        guard let response else { return try await metadata(of: destination) }
        return try CloudStorageJSON.metadata(response.body, bucket: name, what: "a move")
    }
}
