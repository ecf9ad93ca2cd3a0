import StoreshCore

/// `get [--raw] OBJECT [LOCAL_FILE]`: downloads an object's content into a local file, whole or not at all.
package struct GetCommand: LanguageCommand, Equatable {
    package var object: Word
    package var file: Word?
    package var raw: Bool

    package init(object: Word, file: Word? = nil, raw: Bool = false) {
        self.object = object
        self.file = file
        self.raw = raw
    }

    package static let declaration = CommandDeclaration(
        "get", group: .content, usage: "get [--raw] OBJECT [LOCAL_FILE]",
        summary: "download an object's content (default: its name, in the working directory)",
        details: [
            "A LOCAL_FILE that is a directory, or ends in /, gets the object's name in it.",
            "OBJECT#GENERATION downloads that generation, live or noncurrent, where the bucket gives generations",
            "(ls -a lists them); an object whose own name is that is still downloaded, and quoted ('a#1') the word is a",
            "name.",
        ],
        example: "get images/forest.jpg /tmp/forest.jpg",
        options: ["--raw"], completion: .objects,
        sdk: ["writeAsync(toFile:)", "write(toFile:)"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        object = try arguments.required("OBJECT")
        file = try arguments.optionalLast()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let generation = try await session.namedGeneration(object, raw: raw, at: here)
        let name = try generation?.name ?? session.objectName(object, raw: raw, at: here)
        // Like cp: a destination ending in / or naming a directory gets the object's own name.
        var path = file?.text ?? name.lastSegment
        if let given = file?.text, given.hasSuffix("/") || session.files.isDirectory(given) {
            path = (given.hasSuffix("/") ? given : given + "/") + name.lastSegment
        }
        guard !path.isEmpty, !path.hasSuffix("/") else {
            throw Diagnostic.running(
                .invalidArgument("Object \(name) has no last segment to name a local file after; give LOCAL_FILE."),
                at: object.location)
        }
        let size: Int64
        if let generation, session.options.dryRun {
            size = try await session.metadata(of: generation).size
        } else if session.options.dryRun {
            size = try await session.onTarget(object, name: name, at: here) {
                try await session.target.metadata(of: name)
            }.size
        } else {
            // Written a piece at a time, and into place only once whole.
            let fileLocation = file?.location ?? object.location
            let sink = try session.located(fileLocation) { try session.files.sink(writingTo: path) }
            do {
                if let generation {
                    size = try await session.read(generation, into: sink).size
                } else {
                    size = try await session.onTarget(object, name: name, at: here) {
                        try await session.target.read(name, into: sink)
                    }
                }
                try session.located(fileLocation) { try sink.commit() }
            } catch {
                sink.discard()
                throw error
            }
        }
        session.deliver(.saved(object: name.rawValue, file: path, size: size, dryRun: session.options.dryRun))
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        [try await session.explainDownload(of: object, raw: raw, toFile: { file?.text ?? $0.lastSegment }, at: here)]
    }
}
