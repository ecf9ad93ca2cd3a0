import StoreshCore

/// `restore NAME#GENERATION…`: soft-deleted generations brought back as the live objects (rule B6).
package struct RestoreCommand: LanguageCommand, Equatable {
    package var targets: [GenerationWord]

    package static let declaration = CommandDeclaration(
        "restore", group: .content, usage: "restore NAME#GENERATION…",
        summary: "bring soft-deleted generations back as the live objects",
        details: [
            "Each NAME#GENERATION is a soft-deleted generation, as ls --soft-deleted lists it (the # unquoted).",
            "It becomes the live object again, as a new generation with its content and metadata (Cloud Storage's",
            "objects.restore); the object as it is now, or its absence, is the precondition, so a change made",
            "meanwhile is never overwritten. A live object it replaces is deleted as any overwrite deletes it.",
            "A bucket keeps soft-deleted generations while its soft delete policy says (rule B6).",
            "On s3:// (no soft delete) NAME#VERSIONID is an older version, as ls -a lists it, copied back",
            "as the live object (rule S2).",
        ],
        example: "restore reports/q3.pdf#1795869510943896",
        changesBucket: true, completion: .objects,
        sdk: [])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        targets = []
        while let word = arguments.next() {
            if word.text == "--" && word.isBare { continue }
            try Parser.refuseStrayOption(word, for: name)
            targets.append(try GenerationWord(word))
        }
        guard !targets.isEmpty else {
            throw Diagnostic.syntax(
                "`restore` needs at least one NAME#GENERATION, e.g. restore a.txt#1795869510943896",
                at: arguments.afterName)
        }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let versions = try session.generations(at: here)
        for target in targets {
            let name = try session.objectName(target.name, at: here)
            let generation = try session.generation(target, in: versions)
            // The precondition is the object as it is now: a change made after this read is not overwritten.
            let live = try await session.onTarget(target.name, name: name, at: here) {
                try await session.target.metadataIfPresent(of: name)
            }
            let restored: ObjectMetadata
            do {
                restored = try await versions.restore(
                    name, generation: generation, precondition: live.map { .sameContent(as: $0) } ?? .doesNotExist)
            } catch var error as StorageError {
                // No soft-deleted generation of that number (every bucket says so as not found): one named by `ls -a`
                // perhaps, live or noncurrent, is said to be so.
                if error.code == .objectNotFound,
                    let kept = try? await versions.metadata(of: name, generation: generation)
                {
                    error.message =
                        kept.timeDeleted == nil
                        ? "\(MessageText.name(name.rawValue))#\(generation) is the live generation: there is nothing to restore."
                        : "\(MessageText.name(name.rawValue))#\(generation) is a noncurrent generation (versioning keeps it), not a soft-deleted one: restore brings back soft-deleted generations (ls --soft-deleted lists them)."
                }
                throw Diagnostic.running(error, at: target.word.location)
            }
            session.deliver(.restored(restored, generation: generation, dryRun: session.options.dryRun))
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let versions = try session.generations(at: here)
        return try targets.map { target in
            let name = try session.objectName(target.name, at: here)
            let generation = try session.generation(target, in: versions)
            do throws(StorageError) {
                return Explainer.restore(
                    bucket: session.target.name, name: name.rawValue, generation: try generation.numbered(name))
            } catch {
                throw Diagnostic.running(error, at: target.word.location)
            }
        }
    }
}

/// `NAME#GENERATION`: one generation of an object, as gsutil and gcloud write it (rules B5, B6). The `#` is unquoted;
/// the generation is what the bucket names its generations by (`ObjectVersions.generation(named:)`: a whole number,
/// or an S3 version id); `'a#1'` quoted is the object named `a#1`.
package struct GenerationWord: Sendable, Equatable {
    /// The object's name, as typed before the `#`.
    package var name: Word
    /// The generation, as typed after the `#`.
    package var generation: String
    package var word: Word

    package init(_ word: Word) throws(Diagnostic) {
        let scalars = Array(word.text.unicodeScalars)
        guard let hash = scalars.lastIndex(of: "#"), !(word.literal.indices.contains(hash) && word.literal[hash]),
            hash > 0, hash + 1 < scalars.count
        else {
            throw Diagnostic.syntax(
                "'\(word.text)' names no generation: write NAME#GENERATION, the # unquoted (ls -a and ls --soft-deleted list them)",
                at: word.location)
        }
        self.word = word
        self.generation = String(String.UnicodeScalarView(scalars[(hash + 1)...]))
        self.name = Word(
            String(String.UnicodeScalarView(scalars[..<hash])),
            literal: word.literal.isEmpty ? nil : Array(word.literal.prefix(hash)),
            at: word.location)
    }
}
