import Foundation
import StoreshCore

/// Storage semantics under the HTTP routes (issue 55): what a request asks of the served buckets, as calls that know
/// nothing of HTTP — which object, which generation, which conditions, which key — answering the object they made or
/// the refusal, which each API words in its own shape. A route parses its request, calls the service, and renders
/// what it answers; the service reads and changes the buckets, each change one change of its bucket
/// (`ServedBucket.change`), content through spools a piece at a time, so that no object is held in memory whole.
struct StorageService: Sendable {
    /// Where spools go (beside the bucket files).
    let spoolDirectory: String
    /// The most bytes an object may have.
    let maximumObjectBytes: Int64

    /// Why the service refuses, where an API must say it in its own words.
    enum Refusal: Error {
        /// The object would have `size` bytes, more than the server's limit.
        case tooLarge(size: Int64)
        /// A compose source does not exist (at the generation named).
        case missingSource(name: String, generation: Int64?)
    }

    // MARK: Reads

    /// An object's metadata, live or at the generation named (rule B5).
    func metadata(of name: ObjectName, generation: Int64?, in bucket: ServedBucket) throws -> ObjectMetadata {
        guard let generation else { return try bucket.reader().currentMetadata(of: name) }
        return try bucket.reader().generationMetadata(of: name, generation: generation)
    }

    /// An object, live or at the generation named, read into a spool of its own as one state of its bucket: whole
    /// (its MD5 checked as it was read), or only the bytes `range` picks from the size the read finds (`partial`:
    /// which bytes of the object the content is), so that a range costs its own size and not the object's.
    func read(
        _ name: ObjectName, generation: Int64?, in bucket: ServedBucket, range: (Int64) -> Range<Int64>? = { _ in nil }
    ) throws -> (object: ObjectMetadata, content: SpooledContent, partial: Range<Int64>?) {
        let spool = Spool(directory: spoolDirectory)
        let keep = { (piece: Data) throws(StorageError) in
            do { try spool.append(piece) } catch let error as StorageError { throw error } catch {
                throw .internalError("\(error)")
            }
        }
        let reader = try bucket.reader()
        let (object, partial) =
            try generation.map { generation throws(StorageError) in
                try reader.generation(name, generation, bytes: range, contentPieces: keep)
            } ?? reader.currentObject(name, bytes: range, contentPieces: keep)
        guard let partial else {
            // Its MD5 was checked as it was read: the pass over the spool computes only its CRC32C.
            return (object, try spool.content(0..<spool.size, knownMD5: object.md5Hash), nil)
        }
        // A range carries no hash of its own (nor of the whole, which was not read).
        return (object, SpooledContent(spool: spool, range: 0..<spool.size, md5Base64: "", crc32cBase64: ""), partial)
    }

    // MARK: Copies

    /// A copy: the source as it is, or at `generation`, checked by `check` (the request's source conditions, its
    /// key, the generation a rewrite began with) before anything is written; the destination gets its content and
    /// `options(original)` under `conditions`, in one change of `target`.
    struct Copy: Sendable {
        var source: ObjectName
        var generation: Int64?
        var destination: ObjectName
        var conditions: Conditions
        var check: @Sendable (ObjectMetadata) throws -> Void
        var options: @Sendable (ObjectMetadata) throws -> WriteOptions
    }

    func copy(_ copy: Copy, from origin: ServedBucket, to target: ServedBucket) async throws -> ObjectMetadata {
        if target === origin {
            let spoolDirectory = self.spoolDirectory
            return try await target.change { transaction in
                // Through a spool (a file past a small size), a piece at a time: a 999 MB copy once held the object
                // in memory twice over. A source generation named is read as that generation (rule B5).
                let spool = Spool(directory: spoolDirectory)
                let original: ObjectMetadata
                if let versions = try Self.objectVersions(transaction, generation: copy.generation),
                    let generation = copy.generation
                {
                    original = try await versions.metadata(of: copy.source, generation: generation)
                    try copy.check(original)
                    _ = try await versions.read(copy.source, generation: generation, into: SpoolSink(spool))
                } else {
                    original = try await transaction.metadata(of: copy.source)
                    try copy.check(original)
                    _ = try await transaction.read(copy.source, into: SpoolSink(spool))
                }
                let existing = try await transaction.metadataIfPresent(of: copy.destination)
                return try await transaction.write(
                    from: try spool.content(), to: copy.destination, options: try copy.options(original),
                    precondition: try copy.conditions.precondition(given: existing, name: copy.destination.rawValue))
            }
        }
        // Another bucket is another file: the source is read (into a spool) as one state, then written.
        let (original, content, _) = try read(copy.source, generation: copy.generation, in: origin)
        try copy.check(original)
        let options = try copy.options(original)
        return try await target.change { transaction in
            let existing = try await transaction.metadataIfPresent(of: copy.destination)
            return try await transaction.write(
                from: content, to: copy.destination, options: options,
                precondition: try copy.conditions.precondition(given: existing, name: copy.destination.rawValue))
        }
    }

    /// A copy's metadata: the source's, with `overrides` laid over them. Of Cloud Storage's own fields (rule M9)
    /// the copy keeps the custom time and the contexts; the holds are the request's, and the storage class the
    /// request's or the destination bucket's default.
    static func copiedOptions(
        _ original: ObjectMetadata, overrides: MetadataUpdate, storageClass: String?
    ) throws -> WriteOptions {
        var kept = original
        kept.cloudStorage = CloudStorageFields()
        kept.cloudStorage.customTime = original.cloudStorage.customTime
        kept.cloudStorage.contexts = original.cloudStorage.contexts
        let merged = overrides.isEmpty ? kept : try kept.applying(overrides, now: original.updated).metadata
        var options = WriteOptions(customMetadata: merged.customMetadata)
        for property in WritableProperty.allCases { options.properties[property] = merged[property] }
        options.cloudStorage = merged.cloudStorage
        options.cloudStorage.storageClass = storageClass
        return options
    }

    // MARK: Compose

    /// One source of a compose: its name, the generation named (else the live one), and the generation it must
    /// be at.
    struct ComposeSource: Sendable {
        var name: ObjectName
        var generation: Int64?
        var ifGenerationMatch: Int64?
    }

    /// `destination` gets the sources' contents one after another, each as it is now or at the generation named, if
    /// its condition holds, with `options` (its component count the sources'), under `conditions`; with
    /// `deletingSources`, the sources go in the same change (each the generation read, for good). One change: the
    /// sources are read as one state of the bucket. `keySHA256`: the customer-supplied key every source is read
    /// with and the composite written with.
    func compose(
        _ sources: [ComposeSource], into destination: ObjectName, in bucket: ServedBucket, options given: WriteOptions,
        conditions: Conditions, key: CustomerKey?, deletingSources: Bool
    ) async throws -> ObjectMetadata {
        let (spoolDirectory, limit) = (self.spoolDirectory, maximumObjectBytes)
        return try await bucket.change { transaction in
            // The sources' contents one after another in a spool (a file past a small size), a piece at a time: two
            // sources of 499.5 MB once peaked at 2.96 GB.
            let content = Spool(directory: spoolDirectory)
            var composed: [(name: ObjectName, generation: Int64)] = []
            // A composite counts the objects it was made of, its composite sources' components included.
            var componentCount: Int64 = 0
            for source in sources {
                // A source generation named is read as that generation, live or noncurrent (rule B5).
                let versions = try Self.objectVersions(transaction, generation: source.generation)
                let named: ObjectMetadata?
                if let versions, let generation = source.generation {
                    named = try? await versions.metadata(of: source.name, generation: generation)
                } else {
                    named = try await transaction.metadataIfPresent(of: source.name)
                }
                guard let current = named else {
                    throw Refusal.missingSource(name: source.name.rawValue, generation: source.generation)
                }
                if let required = source.ifGenerationMatch, required != current.generation {
                    throw StorageError(
                        .preconditionFailed,
                        "Object \(source.name.rawValue) is at generation \(current.generation), not \(required) as the compose request requires. Nothing was changed."
                    )
                }
                guard current.size <= limit - content.size else {
                    throw Refusal.tooLarge(size: content.size + current.size)
                }
                try CustomerKey.check(key, reading: current)
                if let versions, let generation = source.generation {
                    _ = try await versions.read(source.name, generation: generation, into: SpoolSink(content))
                } else {
                    _ = try await transaction.read(source.name, into: SpoolSink(content))
                }
                composed.append((source.name, current.generation))
                componentCount += current.cloudStorage.componentCount ?? 1
            }
            var options = given
            // No MD5 is checked on a compose (a composite has none): clients send the destination resource as they
            // last read it, stale md5Hash and all (the Python client; gcloud's parallel composite uploads).
            options.expectedMD5 = nil
            options.guessesContentType = false
            options.cloudStorage.componentCount = componentCount
            options.cloudStorage.customerKeySHA256 = key?.sha256
            let existing = try await transaction.metadataIfPresent(of: destination)
            let written = try await transaction.write(
                from: try content.content(), to: destination, options: options,
                precondition: try conditions.precondition(given: existing, name: destination.rawValue))
            if deletingSources {
                // Each source once (a source named twice is deleted once), never the composite itself; the generation
                // read, for good (in a versioned bucket too, as on the service).
                var deleted: [ObjectName] = []
                for (name, generation) in composed where name != destination && !deleted.contains(name) {
                    if let versions = transaction.objectVersions {
                        try await versions.delete(name, generation: generation, precondition: .none)
                    } else {
                        try await transaction.delete(name, precondition: Precondition(generation: generation))
                    }
                    deleted.append(name)
                }
            }
            return written
        }
    }

    // MARK: Moves and restores

    /// The object renamed in its bucket, in one change (the bucket's own move, rule M10): the destination gets the
    /// source's content and metadata as a new generation, and the source goes (as the generation read), or nothing
    /// happens. `sourceConditions` guard the source, `conditions` the destination.
    func move(
        _ source: ObjectName, to destination: ObjectName, in bucket: ServedBucket, sourceConditions: Conditions,
        conditions: Conditions
    ) async throws -> ObjectMetadata {
        try await bucket.change { transaction in
            guard let moves = transaction.objectMoves else {
                throw StorageError.internalError("The bucket moves no objects.")
            }
            let original = try await transaction.metadata(of: source)
            guard sourceConditions.hold(for: original) else {
                throw StorageError(
                    .preconditionFailed,
                    "Object \(source.rawValue) does not meet the request's source conditions. Nothing was moved.")
            }
            let existing = try await transaction.metadataIfPresent(of: destination)
            return try await moves.move(
                source, to: destination, sourcePrecondition: .matches(original),
                destinationPrecondition: try conditions.precondition(given: existing, name: destination.rawValue))
        }
    }

    /// A soft-deleted generation live again, as a new generation, under `conditions` on the live object it replaces
    /// (rule B6).
    func restore(
        _ name: ObjectName, generation: Int64, in bucket: ServedBucket, conditions: Conditions
    ) async throws -> ObjectMetadata {
        try await bucket.change { transaction in
            guard let versions = transaction.objectVersions else {
                throw StorageError.internalError("The bucket keeps no generations.")
            }
            let existing = try await transaction.metadataIfPresent(of: name)
            return try await versions.restore(
                name, generation: generation,
                precondition: try conditions.precondition(given: existing, name: name.rawValue))
        }
    }

    /// The bucket's generations, when a request names one (rule B5).
    static func objectVersions(_ transaction: any BucketTransaction, generation: Int64?) throws -> (any ObjectVersions)?
    {
        guard generation != nil else { return nil }
        guard let versions = transaction.objectVersions else {
            throw StorageError.internalError("The bucket keeps no generations.")
        }
        return versions
    }
}
