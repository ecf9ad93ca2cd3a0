import StoreshCore

/// A command that makes one metadata update on each of its targets (`meta set`, `meta unset`): how it runs and how
/// it is explained, shared.
package protocol MetadataUpdateCommand: LanguageCommand {
    /// The update, checked when parsed (rule M7).
    var update: MetadataUpdate { get }
    /// Paths or patterns; none means the current reference.
    var targets: [Word] { get }
    /// `--where`: only the targets whose metadata pass every filter.
    var filters: [MetadataFilter] { get }
}

extension MetadataUpdateCommand {
    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        try await session.runUpdate(update, targets: targets, filters: filters, at: here)
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let bucket = session.target.name
        return try await session.explainEach(
            targets, raw: false, filters: filters, at: here, wouldChange: Session.changes(update)
        ) { object, state in
            Explainer.updateMetadata(bucket: bucket, name: object.name.rawValue, update: update, state: state)
        }
    }
}

extension Session {
    /// One update on every target, with the plan (old → new per property) in a dry run.
    func runUpdate(
        _ update: MetadataUpdate, targets: [Word], filters: [MetadataFilter] = [], at here: SourceLocation
    ) async throws {
        if let storageClass = update.cloudStorage.storageClass {
            // Before any object is read: a class of another service (GLACIER on gs://) is no object's fault.
            do {
                try target.storageClasses.check(storageClass, bucket: "\(target.scheme)://\(target.name)")
            } catch {
                throw Diagnostic.running(error, at: here)
            }
        }
        let results = BulkResults(.updates, output: output, options: options, progress: progress)
        // A pattern's matches get the same update each, unless rule G7 makes it depend on the object; a change of
        // storage class is a rewrite of each object (rule M9), not an update of its row.
        let uniform =
            update.clearsCustomMetadata || update.cloudStorage.storageClass != nil
            ? nil
            : PageUpdate(update: update) { outcome, word in
                switch outcome {
                case .updated(let name, let differences): results.updated(name, differences)
                case .unchanged(let name): results.unchanged(name)
                // As `onTarget` places it (an object the page found is never missing, so no hint is looked for).
                case .failed(_, let error): throw Diagnostic.running(error, at: word.location)
                }
            }
        try await forEachTarget(targets, raw: false, filters: filters, at: here, updatingPages: uniform) { object in
            let update = try await keepingDownloadTokens(update, of: object, at: here)
            // A named object is updated as it is (one `update` request, as the service makes it); one that a
            // pattern found must not have changed since.
            let result = try await onTarget(object.word, name: object.name, at: here) {
                try await self.target.updateMetadata(
                    of: object.name, update,
                    precondition: object.metadata.map {
                        $0.hasGenerations ? Precondition(metageneration: $0.metageneration, seen: $0) : .matches($0)
                    } ?? .none)
            }
            if result.changed {
                results.updated(object.name.rawValue, result.previous.differences(to: result.metadata))
            } else {
                results.unchanged(object.name.rawValue)
            }
        }
        if !options.dryRun { reportedChanges += results.updatedCount }
        results.finish(single: true)
        if options.dryRun, !options.json, results.updatedCount > 0, let storageClass = update.cloudStorage.storageClass,
            target.storageClasses == .s3, StorageClasses.s3Archived.contains(storageClass)
        {
            // Said before it is done: the journal's undo is a copy, which S3 refuses for an archived object.
            let them = results.updatedCount == 1 ? "it" : "them"
            deliver(
                .note(
                    "S3 archives \(storageClass) objects: once changed, storesh can neither read, change, move nor undo \(them) until \(them == "it" ? "it is" : "they are") restored (aws s3api restore-object)"
                ))
        }
    }

    /// An update made for each target from what it holds: `change` reads the object's metadata and says what to
    /// change (an empty update: nothing, counted as unchanged). Each update is guarded by the metadata it was made
    /// from (rule G5), so a concurrent change is refused, never overwritten.
    func updateEach(
        _ targets: [Word], filters: [MetadataFilter], at here: SourceLocation,
        _ change: (ExpandedTarget, ObjectMetadata) throws -> MetadataUpdate
    ) async throws {
        let results = BulkResults(.updates, output: output, options: options, progress: progress)
        try await forEachTarget(targets, raw: false, filters: filters, at: here) { object in
            let current = try await metadata(of: object, at: here)
            let update = try change(object, current)
            guard !update.isEmpty else {
                results.unchanged(object.name.rawValue)
                return
            }
            let result = try await onTarget(object.word, name: object.name, at: here) {
                try await self.target.updateMetadata(of: object.name, update, precondition: .matches(current))
            }
            results.updated(object.name.rawValue, result.previous.differences(to: result.metadata))
        }
        if !options.dryRun { reportedChanges += results.updatedCount }
        results.finish(single: targets.count == 1 && !ObjectPattern.isPattern(targets[0]))
    }

    /// Rule G7: `meta unset custom` clears the custom metadata but keeps the download tokens (the object's
    /// download URLs go on working); unsetting the key by name removes it.
    func keepingDownloadTokens(
        _ update: MetadataUpdate, of object: ExpandedTarget, at here: SourceLocation
    ) async throws -> MetadataUpdate {
        guard update.clearsCustomMetadata, update.customMetadata[ObjectMetadata.downloadTokensKey] == nil else {
            return update
        }
        return Self.keepingDownloadTokens(update, of: try await metadataIfPresent(of: object, at: here))
    }

    /// The update sent to an object in `state` (rule G7, above); `explain` shows the same.
    static func keepingDownloadTokens(_ update: MetadataUpdate, of state: ObjectMetadata?) -> MetadataUpdate {
        let key = ObjectMetadata.downloadTokensKey
        guard update.clearsCustomMetadata, update.customMetadata[key] == nil, let tokens = state?.customMetadata[key]
        else { return update }
        var kept = update
        kept.customMetadata[key] = .set(tokens)
        return kept
    }

    /// Whether `update` would change an object (rule M4: an update that changes nothing is no change).
    static func changes(_ update: MetadataUpdate) -> (ObjectMetadata) throws -> Bool {
        { metadata in try metadata.applying(keepingDownloadTokens(update, of: metadata), now: metadata.updated).changed
        }
    }
}
