import StoreshCore

/// `mv [--raw] SOURCE DEST`, `mv SOURCE… FOLDER/`: objects renamed in one step each (a bucket file's change,
/// Cloud Storage's objects.move), content and metadata kept, as a new generation.
package struct MvCommand: LanguageCommand, Equatable {
    /// Paths or patterns.
    package var sources: [Word]
    package var destination: Word
    package var raw: Bool

    package static let declaration = CommandDeclaration(
        "mv", group: .content, usage: "mv [--raw] SOURCE… DEST",
        summary: "move (rename) objects: one to DEST, or several into the folder DEST/",
        details: [
            "One SOURCE and a DEST that is not a folder: SOURCE is renamed DEST. A DEST that ends in /, or names a",
            "folder, takes each SOURCE under its last segment; a pattern's matches keep their names below the",
            "pattern's fixed folder (mv photos/** archive/ makes photos/a/b.jpg archive/a/b.jpg). Content,",
            "properties, custom metadata and Cloud Storage's fields move with the object, as a new generation",
            "(metageneration 1); the source goes without a noncurrent or soft-deleted generation. Each move is one",
            "step of the bucket (a bucket file's change, Cloud Storage's objects.move): the object is never in both",
            "places or in neither. S3 has no move: there it is a copy, then a delete of the source as copied, and",
            "the plan says so. An object at DEST is replaced, as it was read; a held or retained source or DEST is",
            "refused. The Firebase Storage API has no move (rule M10).",
        ],
        example: "mv reports/draft.pdf reports/final.pdf",
        options: ["--raw"], changesBucket: true, patterns: .targets, completion: .objects,
        sdk: [])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        var words: [Word] = []
        while let word = arguments.next() {
            if word.text == "--" && word.isBare { continue }
            try Parser.refuseStrayOption(word, for: Self.declaration.name)
            words.append(word)
        }
        guard words.count >= 2, let last = words.last else {
            throw Diagnostic.syntax(
                "`mv` needs a SOURCE and a DEST: \(Self.declaration.usage), e.g. \(Self.declaration.example)",
                at: arguments.afterName)
        }
        sources = Array(words.dropLast())
        destination = last
        if ObjectPattern.isPattern(destination) {
            throw Diagnostic.syntax(
                "DEST '\(destination.text)' is a pattern: mv moves to one name or into one folder (quote * ? [ to name them).",
                at: destination.location)
        }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let moves = try session.objectMoves(at: here)
        let plan = try await destinationPlan(in: session, at: here)
        var moved = 0
        try await session.forEachTarget(sources, raw: raw, at: here) { object in
            let destination = try plan.destination(of: object, in: session, at: here)
            let current = try await session.metadata(of: object, at: here)
            let replaced = try await session.onTarget(self.destination, name: destination, at: here) {
                try await session.target.metadataIfPresent(of: destination)
            }
            let result = try await session.onTarget(object.word, name: object.name, at: here) {
                try await moves.move(
                    object.name, to: destination, sourcePrecondition: .matches(current),
                    destinationPrecondition: replaced.map { .sameContent(as: $0) } ?? .doesNotExist)
            }
            moved += 1
            session.deliver(
                .moved(
                    from: object.name.rawValue, to: result, replaced: replaced != nil, inOneStep: moves.movesInOneStep,
                    dryRun: session.options.dryRun))
        }
        if moved > 1 { session.deliver(.note("\(session.options.dryRun ? "would move" : "moved") \(moved) objects")) }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let plan = try await destinationPlan(in: session, at: here)
        var requests: [ExplainedRequest] = []
        try await session.forEachTarget(sources, raw: raw, at: here) { object in
            let destination = try plan.destination(of: object, in: session, at: here)
            let current = try await session.metadataIfPresent(of: object, at: here)
            let replaced = try? await session.target.metadataIfPresent(of: destination)
            requests.append(
                Explainer.move(
                    bucket: session.target.name, source: object.name.rawValue, destination: destination.rawValue,
                    state: current, replaced: replaced))
        }
        return requests
    }

    /// Where the sources go: one name, or a folder.
    struct DestinationPlan {
        /// The name of a single move; nil when DEST is a folder.
        var name: ObjectName?
        /// The folder's prefix (ending in `/`, or empty for the root).
        var folder: String

        /// A source's destination: the one name, or the folder with the source's last segment (a named source) or
        /// its name below its pattern's fixed folder (a pattern's match), which must not match that pattern again.
        func destination(of object: ExpandedTarget, in session: Session, at here: SourceLocation) throws -> ObjectName {
            if let name { return name }
            guard let word = object.word, ObjectPattern.isPattern(word) else {
                return try session.located(object.word?.location ?? here) {
                    try ObjectName(folder + object.name.lastSegment)
                }
            }
            let pattern = try session.located(word.location) {
                try ObjectPattern(
                    resolving: word, from: session.current, bucket: session.target.name, scheme: session.target.scheme)
            }
            let fixedFolder =
                pattern.literalPrefix.utf8.lastIndex(of: UInt8(ascii: "/"))
                .map { String(pattern.literalPrefix[...$0]) } ?? ""
            let below = String(decoding: object.name.rawValue.utf8.dropFirst(fixedFolder.utf8.count), as: UTF8.self)
            let destination = try session.located(word.location) { try ObjectName(folder + below) }
            if pattern.matches(destination.rawValue) {
                throw Diagnostic.running(
                    .invalidArgument(
                        "\(MessageText.name(object.name.rawValue)) would move to \(MessageText.name(destination.rawValue)), which \(pattern.text) matches too: the move would find it again. Move into a folder the pattern does not match."
                    ),
                    at: word.location)
            }
            return destination
        }
    }

    /// DEST read once: a folder when it ends in `/`, when several sources or a pattern go to it, or when it names
    /// no object but a folder that has objects; else the one name SOURCE takes.
    func destinationPlan(in session: Session, at here: SourceLocation) async throws -> DestinationPlan {
        let path = try session.resolve(destination)
        let named = raw ? try session.objectName(destination, raw: true, at: here) : nil
        let intoFolder =
            destination.text.hasSuffix("/") || sources.count > 1
            || (!raw && sources.contains(where: ObjectPattern.isPattern))
        if intoFolder { return DestinationPlan(name: nil, folder: path.listingPrefix) }
        let name = try named ?? session.objectName(destination, at: here)
        if try await session.onTarget(
            destination, name: name, at: here, { try await session.target.metadataIfPresent(of: name) }) == nil,
            let page = try? await session.target.list(path, options: ListOptions(maxResults: 1)),
            !page.prefixes.isEmpty || !page.items.isEmpty
        {
            return DestinationPlan(name: nil, folder: path.listingPrefix)
        }
        return DestinationPlan(name: name, folder: "")
    }
}
