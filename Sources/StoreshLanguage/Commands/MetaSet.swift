import StoreshCore

/// `meta set KEY=VALUE… [--where F]… [--] [TARGET…]`: a partial update of each target (rules M4, M5).
package struct MetaSetCommand: MetadataUpdateCommand, Equatable {
    package var update: MetadataUpdate
    package var assignments: [Assignment]
    package var targets: [Word]
    package var filters: [MetadataFilter] = []

    package static let declaration = CommandDeclaration(
        "meta set", group: .metadata, usage: "meta set KEY=VALUE… [--where F]… [--] [TARGET…]",
        summary: "update writable properties of each target (default: the current one)",
        details: [
            "KEY is contentType, cacheControl, contentDisposition, contentEncoding, contentLanguage,",
            "or custom.NAME for a key of customMetadata; or one of Cloud Storage's own fields (rule M9):",
            "customTime=RFC3339 (it only moves forward), temporaryHold=true|false,",
            "eventBasedHold=true|false (a held object is neither deleted nor overwritten),",
            "storageClass=STANDARD|NEARLINE|COLDLINE|ARCHIVE (a rewrite: the same content as a new",
            "generation; on s3:// STANDARD_IA, GLACIER_IR, GLACIER… as S3 names them),",
            "retention=\"Unlocked|Locked until RFC3339\" (in a bucket made with object",
            "retention: kept until then; a Locked one only lengthened) and context.KEY=VALUE. Words",
            "with = before -- are assignments;",
            "the rest are targets. A target may be a pattern: * within a segment, ** across segments,",
            "? one character, […] a set. A pattern that matches nothing is an error. Quoted, these",
            "characters are literal: 'a*b' names the object a*b.",
            "An update that would change nothing changes nothing and is counted as unchanged.",
            "--where F keeps the targets whose metadata pass F: KEY=GLOB, KEY!=GLOB, 'KEY exists',",
            "'KEY missing' (KEY a property, custom.NAME or a field of rule M9; GLOB a shell pattern: image/*).",
            "Several: all.",
        ], example: "meta set cacheControl=no-cache --where contentType=image/* -- images/**",
        options: ["--where"], changesBucket: true, patterns: .targets, completion: .assignmentsThenObjects,
        sdk: ["updateMetadata(_:)", "StorageMetadata", "customMetadata"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        update = MetadataUpdate()
        assignments = []
        targets = []
        var afterDoubleDash = false
        while let word = arguments.next() {
            if !afterDoubleDash && word.text == "--" && word.isBare {
                afterDoubleDash = true
            } else if !afterDoubleDash && word.text == "--where" && word.isBare {
                filters.append(try MetadataFilter.parse(try arguments.optionValue(for: word)))
            } else if !afterDoubleDash && word.isLongOption {
                try Parser.refuseStrayOption(word, for: name)
            } else if !afterDoubleDash, let equals = word.firstUnquoted("=") {
                let (key, value) = word.split(at: equals)
                do {
                    try update.set(key.text, to: value.text)
                } catch var error {
                    // `cacheControl=public, max-age=60`: the blank split one value into two words.
                    if let previous = assignments.last, error.code == .invalidArgument,
                        error.message.hasPrefix("Unknown metadata property")
                    {
                        error.message +=
                            " (a value with a blank in it is quoted: \(previous.key.text)=\"\(previous.value.text) \(word.text)\")"
                    }
                    throw Diagnostic.beforeRunning(error, at: key.location)
                }
                assignments.append(Assignment(key: key, value: value))
            } else {
                targets.append(word)
            }
        }
        guard !assignments.isEmpty else {
            throw Diagnostic.syntax(
                "`meta set` needs at least one KEY=VALUE, e.g. meta set contentType=image/jpeg", at: arguments.afterName
            )
        }
    }
}
