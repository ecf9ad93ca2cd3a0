import StoreshCore

/// `meta unset KEY… [--where F]… [--] [TARGET…]`: deletes properties of each target; `custom` clears
/// customMetadata (rule M5).
package struct MetaUnsetCommand: MetadataUpdateCommand, Equatable {
    package var update: MetadataUpdate
    package var keys: [Word]
    package var targets: [Word]
    package var filters: [MetadataFilter] = []

    package static let declaration = CommandDeclaration(
        "meta unset", group: .metadata, usage: "meta unset KEY… [--where F]… [--] [TARGET…]",
        summary: "delete properties of each target; `custom` clears customMetadata",
        details: [
            "Keys come first; the first word that is not a key, or --, starts the targets. --where as in meta set.",
            "temporaryHold and eventBasedHold release a hold; context.KEY removes a context; retention removes an",
            "Unlocked retention (a Locked one stays). customTime cannot be removed.",
        ],
        example: "meta unset custom.stale contentLanguage -- docs/*",
        options: ["--where"],
        changesBucket: true, patterns: .targets, completion: .keysThenObjects,
        sdk: ["updateMetadata(_:)"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        update = MetadataUpdate()
        keys = []
        targets = []
        while let word = arguments.next() {
            if word.text == "--" && word.isBare {
                targets += arguments.rest(skippingDoubleDash: false)
                break
            }
            if word.text == "--where" && word.isBare {
                filters.append(try MetadataFilter.parse(try arguments.optionValue(for: word)))
                continue
            }
            try Parser.refuseStrayOption(word, for: name)
            if targets.isEmpty && Self.looksLikeKey(word, isFirst: keys.isEmpty) {
                do {
                    try update.unset(word.text)
                } catch {
                    throw Diagnostic.beforeRunning(error, at: word.location)
                }
                keys.append(word)
            } else {
                targets.append(word)
            }
        }
        guard !keys.isEmpty else {
            throw Diagnostic.syntax(
                "`meta unset` needs at least one KEY, e.g. meta unset cacheControl", at: arguments.afterName)
        }
    }

    /// A word is a key when it names a property (writable or not, so that read-only ones get their error),
    /// `custom`, `custom.NAME`, or one of Cloud Storage's own fields (rule M9); the first word is also taken as a key when it is a near miss of one, so that a
    /// typo is reported rather than taken for a target. (Tab completion offers keys by the same test.)
    package static func looksLikeKey(_ word: Word, isFirst: Bool) -> Bool {
        let text = word.text
        if MetadataProperty(rawValue: text) != nil || text == "custom"
            || MetadataKey.customPrefixes.contains(where: { text.hasPrefix($0) })
            || CloudStorageWritableField(key: text) != nil
        {
            return true
        }
        let keyNames = MetadataProperty.allCases.map(\.rawValue) + ["custom"] + CloudStorageWritableField.names
        return isFirst && !text.contains("/") && Suggestion.nearest(to: text, among: keyNames) != nil
    }
}
