import StoreshCore

/// `meta copy SRC [--where F]… [--] DEST…`: makes each DEST's writable metadata SRC's — its five properties and
/// its custom metadata, keys SRC lacks removed — keeping each DEST's own download tokens (rule G7: a token opens
/// one object; copying it would open DEST with SRC's token).
package struct MetaCopyCommand: LanguageCommand, Equatable {
    package var source: Word
    /// Paths or patterns.
    package var targets: [Word]
    package var filters: [MetadataFilter] = []

    package static let declaration = CommandDeclaration(
        "meta copy", group: .metadata, usage: "meta copy SRC [--where F]… [--] DEST…",
        summary: "make each DEST's metadata the same as SRC's (properties and custom metadata)",
        details: [
            "contentType, cacheControl, contentDisposition, contentEncoding, contentLanguage and the custom",
            "metadata become SRC's: what SRC lacks is removed from DEST. Content, names and DEST's download",
            "tokens are kept. DEST may be a pattern; --where as in meta set. One update per object, with a",
            "precondition: a DEST changed since it was read is refused, not overwritten.",
        ], example: "meta copy images/forest.jpg -- images/mountains/*.jpg",
        options: ["--where"], changesBucket: true, patterns: .destinations, completion: .objects,
        sdk: ["getMetadata()", "updateMetadata(_:)"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        while let word = arguments.peek(), word.text == "--where", word.isBare {
            _ = arguments.next()
            filters.append(try MetadataFilter.parse(try arguments.optionValue(for: word)))
        }
        let source = try arguments.required("SRC, the object whose metadata is copied")
        try Parser.refuseStrayOption(source, for: Self.declaration.name)
        self.source = source
        let (targets, moreFilters) = try arguments.targetsAndFilters()
        guard !targets.isEmpty else {
            throw Diagnostic.syntax(
                "`meta copy` needs a DEST after SRC: \(Self.declaration.usage)", at: Parser.afterEnd(of: source))
        }
        self.targets = targets
        filters += moreFilters
    }

    /// `current`'s metadata as SRC's would make it.
    static func copying(_ source: ObjectMetadata, onto current: ObjectMetadata) -> ObjectMetadata {
        var copied = current
        for property in WritableProperty.allCases { copied[property] = source[property] }
        copied.customMetadata = source.customMetadata
        copied.customMetadata[ObjectMetadata.downloadTokensKey] =
            current.customMetadata[ObjectMetadata.downloadTokensKey]
        return copied
    }

    /// SRC's metadata, read once (a missing SRC is an error at its word, with the usual hint).
    func sourceMetadata(in session: Session, at here: SourceLocation) async throws -> ObjectMetadata {
        if ObjectPattern.isPattern(source) {
            throw Diagnostic.running(
                .invalidArgument(
                    "meta copy copies from one object: SRC '\(source.text)' is a pattern (DEST may be one: meta copy images/forest.jpg -- images/*.jpg)."
                ),
                at: source.location)
        }
        let name = try session.objectName(source, raw: false, at: here)
        return try await session.onTarget(source, name: name, at: here) { try await session.target.metadata(of: name) }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let copied = try await sourceMetadata(in: session, at: here)
        try await session.updateEach(targets, filters: filters, at: here) { _, current in
            MetadataUpdate(from: current, to: Self.copying(copied, onto: current))
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let bucket = session.target.name
        let copied = try await sourceMetadata(in: session, at: here)
        var requests = [Explainer.getMetadata(bucket: bucket, name: copied.fullPath)]
        requests[0].purpose += " (SRC: what is copied)"
        requests += try await session.explainEach(
            targets, raw: false, filters: filters, at: here,
            wouldChange: { !MetadataUpdate(from: $0, to: Self.copying(copied, onto: $0)).isEmpty }
        ) { object, state in
            let name = object.name.rawValue
            // A DEST that does not exist: the request is shown as it would go out (and explainEach says it fails).
            let update = state.map { MetadataUpdate(from: $0, to: Self.copying(copied, onto: $0)) } ?? MetadataUpdate()
            var request = Explainer.updateMetadata(bucket: bucket, name: name, update: update, state: state)
            request.purpose =
                "read the metadata of \(name), then make it \(copied.fullPath)'s: what differs is set, what \(copied.fullPath) lacks is removed"
            return request
        }
        return requests
    }
}
