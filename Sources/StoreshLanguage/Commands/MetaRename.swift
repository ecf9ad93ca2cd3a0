import StoreshCore

/// `meta rename custom.OLD custom.NEW [--where F]… [--] [TARGET…]`: moves a custom key, keeping each object's value.
package struct MetaRenameCommand: LanguageCommand, Equatable {
    /// The custom keys, without `custom.`.
    package var old: Word
    package var new: Word
    package var targets: [Word]
    package var filters: [MetadataFilter] = []

    package static let declaration = CommandDeclaration(
        "meta rename", group: .metadata, usage: "meta rename custom.OLD custom.NEW [--where F]… [--] [TARGET…]",
        summary: "move a custom key to a new name, keeping each object's value",
        details: [
            "Objects without custom.OLD are unchanged; one whose custom.NEW holds another value is an error",
            "(nothing is overwritten). One update per object, with a precondition.",
        ], example: "meta rename custom.reviewr custom.reviewer -- files/**",
        options: ["--where"], changesBucket: true, patterns: .targets, completion: .keysThenObjects,
        sdk: ["updateMetadata(_:)"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        guard let old = arguments.next(), let new = arguments.next() else {
            throw Diagnostic.syntax(
                "`meta rename` needs two keys: meta rename custom.OLD custom.NEW [--] TARGET…", at: arguments.afterName)
        }
        for key in [old, new] where !key.text.hasPrefix("custom.") || key.text.count == "custom.".count {
            throw Diagnostic.syntax(
                "`meta rename` moves a custom key: write it custom.NAME, not '\(key.text)'", at: key.location)
        }
        if old.text == new.text {
            // Moving a key onto itself would read its value, set it, then delete the same key: data lost.
            throw Diagnostic.syntax(
                "`meta rename` needs two different keys; \(old.text) and \(new.text) are the same", at: new.location)
        }
        self.old = Word(String(old.text.dropFirst("custom.".count)), at: old.location)
        self.new = Word(String(new.text.dropFirst("custom.".count)), at: new.location)
        (targets, filters) = try arguments.targetsAndFilters()
    }

    /// On each target that has OLD, NEW takes its value and OLD goes, in one update; an object whose NEW already
    /// holds another value is an error rather than a silent overwrite.
    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        try await session.updateEach(targets, filters: filters, at: here) { object, metadata in
            var update = MetadataUpdate()
            guard let value = metadata.customMetadata[old.text] else { return update }
            if let existing = metadata.customMetadata[new.text], !NameBytes.sameBytes(existing, value) {
                throw Diagnostic.running(
                    .invalidArgument(
                        "\(object.name.rawValue) has custom.\(new.text) already (\(existing.debugDescription)); renaming custom.\(old.text) would overwrite it. Unset one first."
                    ),
                    at: object.word?.location ?? here)
            }
            update.customMetadata[new.text] = .set(value)
            update.customMetadata[old.text] = .unset
            return update
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let bucket = session.target.name
        var update = MetadataUpdate()
        update.customMetadata[new.text] = .set("VALUE")
        update.customMetadata[old.text] = .unset
        return try await session.explainEach(
            targets, raw: false, filters: filters, at: here, wouldChange: { $0.customMetadata[old.text] != nil }
        ) {
            object, state in
            let name = object.name.rawValue
            // The object's own value moves, when storesh read it.
            var update = update
            if let value = state?.customMetadata[old.text] { update.customMetadata[new.text] = .set(value) }
            var request = Explainer.updateMetadata(bucket: bucket, name: name, update: update, state: state)
            request.purpose =
                "read the metadata of \(name), then move custom.\(old.text) to custom.\(new.text) (VALUE: the object's own)"
            return request
        }
    }
}
