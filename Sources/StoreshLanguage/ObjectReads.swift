import Foundation
import StoreshCore

/// One generation of an object, named NAME#GENERATION as gsutil, gcloud and `ls -a` write it (rules B5, B6), for the
/// commands that read one: `cat`, `get` and `meta get`.
struct NamedGeneration {
    var name: ObjectName
    var generation: ObjectGeneration
    var versions: any ObjectVersions
    var word: Word

    /// For messages: `NAME#GENERATION`.
    var text: String { "\(MessageText.name(name.rawValue))#\(generation)" }
}

extension Session {
    /// The generation `word` names, or nil: when it is not NAME#GENERATION (the `#` unquoted, a whole number after it),
    /// when an object of that exact name exists (read as it always was: an object named `a#1` is still `a#1`, and
    /// quoted, `'a#1'` is always the name), with `raw`, or when the bucket gives no generations.
    func namedGeneration(_ word: Word, raw: Bool, at here: SourceLocation) async throws -> NamedGeneration? {
        guard !raw, let named = try? GenerationWord(word), let versions = target.objectVersions,
            let generation = versions.generation(named: named.generation)
        else { return nil }
        let literal = try objectName(word, raw: raw, at: here)
        if try await onTarget(word, name: literal, at: here, { try await self.target.metadataIfPresent(of: literal) })
            != nil
        {
            return nil
        }
        return NamedGeneration(
            name: try objectName(named.name, at: here), generation: generation, versions: versions, word: word)
    }

    /// The number of a generation `explain` shows Cloud Storage's request for; an S3 version is not one.
    func numbered(_ named: NamedGeneration) throws -> Int64 {
        do {
            return try named.generation.numbered(named.name)
        } catch {
            throw Diagnostic.running(error, at: named.word.location)
        }
    }

    /// The generation's metadata: the live or a noncurrent generation's (with `timeDeleted`), else a soft-deleted
    /// one's (with `softDeleteTime` and `hardDeleteTime`).
    func metadata(of named: NamedGeneration) async throws -> ObjectMetadata {
        do {
            return try await named.versions.metadata(of: named.name, generation: named.generation)
        } catch let error as StorageError where error.code == .objectNotFound {
            if let soft = try? await named.versions.softDeletedMetadata(of: named.name, generation: named.generation) {
                return soft
            }
            throw Diagnostic.running(missing(named), at: named.word.location)
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: named.word.location)
        }
    }

    /// Streams the generation's content into `sink` and answers its metadata. A soft-deleted generation's content is
    /// read once it is restored, as on the service.
    func read(_ named: NamedGeneration, into sink: any ContentSink) async throws -> ObjectMetadata {
        do {
            return try await named.versions.read(named.name, generation: named.generation, into: sink)
        } catch let error as StorageError where error.code == .objectNotFound {
            if (try? await named.versions.softDeletedMetadata(of: named.name, generation: named.generation)) != nil {
                throw Diagnostic.running(
                    StorageError(
                        .objectNotFound,
                        "\(named.text) is soft-deleted: its content is read once it is restored (restore \(named.text))."
                    ),
                    at: named.word.location)
            }
            throw Diagnostic.running(missing(named), at: named.word.location)
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: named.word.location)
        }
    }

    /// `cat`: the content of the object `word` names, or of the generation it names (NAME#GENERATION), printed as it
    /// arrives (whole, in one JSON document, with `--json`).
    func deliverContent(of word: Word, raw: Bool, at here: SourceLocation) async throws {
        if let generation = try await namedGeneration(word, raw: raw, at: here) {
            guard options.json else {
                _ = try await read(generation, into: ResultBytesSink(output))
                return
            }
            let gathered = GatheredContent()
            _ = try await read(generation, into: gathered)
            deliver(.content(object: generation.name.rawValue, gathered.data))
            return
        }
        let name = try objectName(word, raw: raw, at: here)
        try await onTarget(word, name: name, at: here) { try await self.deliverContent(of: name) }
    }

    /// The download of what `word` names, the object or one of its generations, as `explain` shows it: into the
    /// file `file` makes of the object's name (nil: printed).
    func explainDownload(
        of word: Word, raw: Bool, toFile file: (ObjectName) -> String?, at here: SourceLocation
    ) async throws
        -> ExplainedRequest
    {
        if let generation = try await namedGeneration(word, raw: raw, at: here) {
            return Explainer.download(
                bucket: target.name, name: generation.name.rawValue, generation: try numbered(generation),
                toFile: file(generation.name))
        }
        let name = try objectName(word, raw: raw, at: here)
        return Explainer.download(bucket: target.name, name: name.rawValue, toFile: file(name))
    }

    private func missing(_ named: NamedGeneration) -> StorageError {
        if case .version = named.generation {
            // S3's versions: no soft-deleted ones to look among.
            return StorageError(
                .objectNotFound,
                "\(target.url) has no version \(named.generation) of \(MessageText.name(named.name.rawValue)) (or it is a delete marker): ls -a lists the versions it keeps."
            )
        }
        return StorageError(
            .objectNotFound,
            "\(target.url) has no generation \(named.generation) of \(MessageText.name(named.name.rawValue)): ls -a lists the live and noncurrent generations, ls --soft-deleted the soft-deleted ones."
        )
    }
}

/// Content gathered whole (`cat --json` of a generation).
final class GatheredContent: ContentSink, @unchecked Sendable {
    private(set) var data = Data()

    func write(_ bytes: Data) throws { data.append(bytes) }
}
