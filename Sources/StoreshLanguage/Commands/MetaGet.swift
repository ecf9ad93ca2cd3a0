import StoreshCore

/// `meta get [--raw] [--where F]… [TARGET…]`: each target's metadata. `--raw` takes each path as the exact object
/// name (for names like `wrongPrefix//sadItem`) and shows download tokens (rule G7).
package struct MetaGetCommand: LanguageCommand, Equatable {
    package var targets: [Word]
    package var raw: Bool
    package var filters: [MetadataFilter]

    package init(targets: [Word], raw: Bool = false, filters: [MetadataFilter] = []) {
        self.targets = targets
        self.raw = raw
        self.filters = filters
    }

    package static let declaration = CommandDeclaration(
        "meta get", group: .metadata, usage: "meta get [--raw] [--where F]… [TARGET…]",
        summary: "all metadata of each target (default: the current one)",
        details: [
            "--raw takes each TARGET as the exact object name, e.g. meta get --raw wrongPrefix//sadItem.",
            "A TARGET may be a pattern (images/**.jpg); --where keeps the objects whose metadata pass it.",
            "NAME#GENERATION shows that generation: live, noncurrent or soft-deleted (ls -a, ls --soft-deleted).",
        ],
        example: "meta get --where 'custom.camera exists' images/**",
        options: ["--raw", "--where"], patterns: .targets, completion: .objects,
        sdk: ["getMetadata()", "StorageMetadata"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        (targets, filters) = try arguments.targetsAndFilters()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        var shown = 0
        try await session.forEachTarget(targets, raw: raw, filters: filters, at: here, generations: true) { object in
            let metadata = try await session.metadata(of: object, at: here)
            // Several objects: a blank line between them, for people (JSON has one document each).
            if shown > 0 && !session.options.json { session.deliver(.echo("")) }
            shown += 1
            // Rule G7: download tokens are credentials of a kind; shown only when asked for with --raw.
            session.deliver(.metadata(raw ? metadata : metadata.withoutDownloadTokens))
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let bucket = session.target.name
        var explained: [ExplainedRequest] = []
        var others: [Word] = []
        for word in targets {
            if let generation = try await session.namedGeneration(word, raw: raw, at: here) {
                explained.append(
                    Explainer.getMetadata(
                        bucket: bucket, name: generation.name.rawValue, generation: try session.numbered(generation)))
            } else {
                others.append(word)
            }
        }
        guard !others.isEmpty || targets.isEmpty else { return explained }
        return try await explained
            + session.explainEach(others, raw: raw, filters: filters, at: here) { object, _ in
                Explainer.getMetadata(bucket: bucket, name: object.name.rawValue)
            }
    }
}
