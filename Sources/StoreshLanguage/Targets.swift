import Foundation
import StoreshCore

/// Which objects a command's words name: paths resolved against the current reference (rules P1–P6), patterns
/// expanded by walking the bucket a page at a time, and errors placed at the word they concern, with a hint when
/// the likely mistake is known.
extension Session {
    /// Calls `body` with each object that targets name, in order, as they are found: each path as given (it must
    /// be a valid name), each pattern's matches in name order, read a page at a time, so that a pattern over
    /// millions of objects is never held whole. An object two targets name is passed once. No target means the
    /// current reference. With `filters`, only objects whose metadata pass every `--where` filter are passed (a
    /// named object is read for it; one that does not exist is passed, so that the command says so), and when
    /// none does, a note says so. Returns how many objects were passed.
    ///
    /// With `updatingPages`, a pattern's matches on a bucket that makes uniform updates are not passed: the bucket
    /// updates them a page at a time, and `updatingPages` is given each one's outcome with the pattern's word.
    @discardableResult
    ///
    /// With `generations`, a target NAME#GENERATION (`namedGeneration`) is passed as that generation, with its metadata.
    func forEachTarget(
        _ targets: [Word], raw: Bool, filters: [MetadataFilter] = [], at here: SourceLocation,
        generations: Bool = false,
        updatingPages: PageUpdate? = nil, _ body: (ExpandedTarget) async throws -> Void
    ) async throws -> Int {
        var passed = 0
        func offer(_ object: ExpandedTarget) async throws {
            guard let kept = try await admitted(object, filters: filters, at: here) else { return }
            passed += 1
            try await body(kept)
        }
        if targets.isEmpty {
            try await offer((try located(here) { try self.current.objectName() }, nil, nil))
        }
        // What earlier targets named, to pass each object once without remembering every object passed.
        var named = Set<ObjectName>()
        var patterns: [ObjectPattern] = []
        /// Whether an earlier target passed the object a pattern matches.
        func passedBefore(_ name: String) -> Bool {
            (!named.isEmpty && named.contains(ObjectName(stored: name)))
                || patterns.contains(where: { $0.matches(name) })
        }
        for word in targets {
            if !raw && ObjectPattern.isPattern(word) {
                let pattern = try located(word.location) {
                    try ObjectPattern(
                        resolving: word, from: self.current, bucket: self.target.name, scheme: self.target.scheme)
                }
                var after: String?
                var matched = 0
                if let updatingPages, filters.isEmpty, let bucket = target.uniformUpdates {
                    repeat {
                        try checkCancelled(at: here)
                        let page = try await located(word.location) {
                            try await bucket.updatePage(
                                prefix: pattern.literalPrefix, after: after, limit: Self.scanPageSize,
                                updatingPages.update
                            ) { name in
                                guard pattern.matches(name) else { return false }
                                matched += 1
                                return !passedBefore(name)
                            }
                        }
                        passed += page.outcomes.count
                        for outcome in page.outcomes { try updatingPages.outcome(outcome, word) }
                        after = page.resumeAfter
                    } while after != nil
                } else {
                    repeat {
                        try checkCancelled(at: here)
                        let page = try await located(word.location) {
                            try await self.target.scan(
                                prefix: pattern.literalPrefix, after: after, limit: Self.scanPageSize)
                        }
                        for metadata in page.objects where pattern.matches(metadata.fullPath) {
                            let name = try located(word.location) { try ObjectName(metadata.fullPath) }
                            matched += 1
                            if passedBefore(name.rawValue) { continue }
                            try checkCancelled(at: here)
                            try await offer((name, metadata, word))
                        }
                        after = page.resumeAfter
                    } while after != nil
                }
                if matched == 0 {
                    throw Diagnostic.running(
                        StorageError(.objectNotFound, "No object matches the pattern \(pattern.text)."),
                        at: word.location)
                }
                patterns.append(pattern)
            } else if generations, let generation = try await namedGeneration(word, raw: raw, at: here) {
                try await offer((generation.name, try await metadata(of: generation), word))
            } else {
                let name = try objectName(word, raw: raw, at: here)
                guard named.insert(name).inserted else { continue }
                // Passed already by an earlier pattern when it exists.
                if patterns.contains(where: { $0.matches(name.rawValue) }),
                    try await onTarget(
                        word, name: name, at: here, { try await self.target.metadataIfPresent(of: name) }) != nil
                {
                    continue
                }
                try await offer((name, nil, word))
            }
        }
        if passed == 0 && !filters.isEmpty {
            deliver(
                .note("(no target passes --where \(filters.map(\.text).joined(separator: " --where ")): nothing to do)")
            )
        }
        return passed
    }

    /// One update that every object a pattern matches gets, made by the bucket a page at a time where it can
    /// (`UniformUpdates`): what `forEachTarget` does instead of passing those objects one by one.
    struct PageUpdate {
        var update: MetadataUpdate
        /// Given each object's outcome, in order, with the word of the pattern that matched it (not awaited: a
        /// million of them would each cost a suspension point).
        var outcome: (UniformUpdateOutcome, Word) throws -> Void
    }

    /// The objects that targets name, in order (as `forEachTarget` passes them), gathered: for commands over a
    /// few objects (explain).
    func expand(_ targets: [Word], raw: Bool, at here: SourceLocation) async throws -> [ExpandedTarget] {
        var objects: [ExpandedTarget] = []
        try await forEachTarget(targets, raw: raw, at: here) { objects.append($0) }
        return objects
    }

    /// The objects whose metadata pass every filter, each with its metadata (as `admitted`).
    func passing(
        _ objects: [ExpandedTarget], filters: [MetadataFilter], at here: SourceLocation
    ) async throws -> [ExpandedTarget] {
        var kept: [ExpandedTarget] = []
        for object in objects {
            try checkCancelled(at: here)
            if let object = try await admitted(object, filters: filters, at: here) { kept.append(object) }
        }
        return kept
    }

    /// The object with its metadata when it passes every filter, else nil. Without filters, the object as it is;
    /// with them, a named object is read for them, and one that does not exist is kept, so that the command says so.
    func admitted(
        _ object: ExpandedTarget, filters: [MetadataFilter], at here: SourceLocation
    ) async throws -> ExpandedTarget? {
        guard !filters.isEmpty, let metadata = try await metadataIfPresent(of: object, at: here) else { return object }
        return filters.allSatisfy({ $0.admits(metadata) }) ? (object.name, metadata, object.word) : nil
    }

    /// The metadata of a target: as a pattern's scan found it, else read; nil when the object does not exist.
    func metadataIfPresent(of object: ExpandedTarget, at here: SourceLocation) async throws -> ObjectMetadata? {
        if let known = object.metadata { return known }
        return try await onTarget(object.word, name: object.name, at: here) {
            try await self.target.metadataIfPresent(of: object.name)
        }
    }

    /// The metadata of a target that must exist: object-not-found, with its hint, otherwise.
    func metadata(of object: ExpandedTarget, at here: SourceLocation) async throws -> ObjectMetadata {
        if let known = object.metadata { return known }
        return try await onTarget(object.word, name: object.name, at: here) {
            try await self.target.metadata(of: object.name)
        }
    }

    /// Runs a bucket call on one target. An object-not-found gets a hint when the likely mistake is known:
    /// quoted wildcards (literal), a name that normalising changed (rule P1), or a folder (a prefix).
    func onTarget<T>(
        _ word: Word?, name: ObjectName, at here: SourceLocation, _ body: () async throws -> T
    )
        async throws -> T
    {
        do {
            return try await body()
        } catch var error as StorageError {
            if error.code == .objectNotFound, let word { error.message += await notFoundHint(word, name: name) }
            throw Diagnostic.running(error, at: word?.location ?? here)
        }
    }

    func notFoundHint(_ word: Word, name: ObjectName) async -> String {
        // The hint's own requests are not the user's: `rules why` keeps explaining the failed one.
        rules?.recordsDecisions = false
        defer { rules?.recordsDecisions = true }
        if zip(word.text.unicodeScalars, word.literal).contains(where: { $1 && ($0 == "*" || $0 == "?" || $0 == "[") })
        {
            return " Its wildcards are quoted, so they are literal; unquote them to match a pattern."
        }
        if let generation = try? GenerationWord(word),
            (try? await target.metadata(of: ObjectName(generation.name.text))) != nil
        {
            return
                " \(MessageText.name(generation.name.text)) exists: NAME#GENERATION names one of its generations where the bucket gives them (ls -a lists them)."
        }
        let typed = word.text.hasPrefix("/") ? String(word.text.dropFirst()) : word.text
        if word.text.contains("//") || (typed.hasSuffix("/") && typed.count > 1) {
            if (try? await target.metadata(of: ObjectName(typed))) != nil {
                return " Paths are normalised (rule P1); to name '\(typed)' exactly, use --raw."
            }
        }
        if let page = try? await target.list(
            StoragePath(normalizing: name.rawValue), options: ListOptions(maxResults: 1)),
            !page.prefixes.isEmpty || !page.items.isEmpty
        {
            return
                " \(name.rawValue) is a folder (a prefix), not an object; its objects are \(name.rawValue)/* (directly in it) or \(name.rawValue)/** (all under it)."
        }
        if let near = await nearestSibling(of: StoragePath(normalizing: name.rawValue), items: true) {
            return " Did you mean \(near)?"
        }
        return ""
    }

    /// The name in the same folder nearest to `path`'s last segment (a typo's likely meaning), from one page of the
    /// folder; nil when none is near. `items` offers objects too, else folders only (cd). A read for a hint: it
    /// is not the user's request, and a failure only means no suggestion.
    func nearestSibling(of path: StoragePath, items: Bool) async -> String? {
        guard !path.isRoot else { return nil }
        rules?.recordsDecisions = false
        defer { rules?.recordsDecisions = true }
        guard
            let page = try? await target.list(path.parent, options: ListOptions(maxResults: ListOptions.maximumResults))
        else { return nil }
        let candidates = page.prefixes + (items ? page.items : [])
        // The name itself is no suggestion: a folder the parent lists but whose own listing is empty holds only
        // names no listing shows (`hiddenName`).
        let byLastSegment = Dictionary(candidates.map { (StoragePath(normalizing: $0).name, $0) }) { first, _ in first }
            .filter { $0.key != path.name }
        return Suggestion.nearest(to: path.name, among: Array(byLastSegment.keys)).flatMap { byLastSegment[$0] }
    }

    /// A name stored under `path` that no listing shows as an item (rule L3: `wrongPrefix//sadItem`, `lonelyItem/`),
    /// for an empty listing whose parent lists it as a folder. A read for a hint, as `nearestSibling`.
    func hiddenName(under path: StoragePath) async -> String? {
        guard !path.isRoot else { return nil }
        rules?.recordsDecisions = false
        defer { rules?.recordsDecisions = true }
        return try? await target.scan(prefix: path.listingPrefix, after: nil, limit: 1).objects.first?.fullPath
    }

    func resolve(_ word: Word) throws -> StoragePath {
        try located(word.location) {
            try StoragePath.resolve(word.text, from: self.current, bucket: self.target.name, scheme: self.target.scheme)
        }
    }

    /// The object a path word names (or, without one, the current reference); with `raw`, the word exactly.
    func objectName(_ word: Word?, raw: Bool = false, at here: SourceLocation) throws -> ObjectName {
        if raw, let word { return try located(word.location) { try ObjectName(word.text) } }
        if let word { try refusePattern(word) }
        let path = try word.map(resolve) ?? current
        return try located(word?.location ?? here) { try path.objectName() }
    }

    /// Where one name goes (put, get, cat), an unquoted * ? [ is a pattern typed by mistake: taken literally it
    /// would make an object named `images/*` that every later pattern matches.
    func refusePattern(_ word: Word) throws {
        guard ObjectPattern.isPattern(word) else { return }
        throw Diagnostic.running(
            .invalidArgument(
                "'\(word.text)' is a pattern, and this command takes one object's name; patterns work in \(Self.patternCommands) (quote * ? [, or use --raw, to put them in a name)."
            ),
            at: word.location)
    }

    /// The commands whose targets may be patterns, from their declarations.
    static var patternCommands: String { CommandCatalog.patternCommands }

    /// A path for cd and ls, which take no patterns.
    func navigationPath(_ word: Word, command: String) throws -> StoragePath {
        if ObjectPattern.isPattern(word) {
            throw Diagnostic.running(
                .invalidArgument(
                    "`\(command)` takes a path, not a pattern; patterns work in \(Self.patternCommands) (quote * ? [ to use them literally)."
                ),
                at: word.location)
        }
        return try resolve(word)
    }

    func checkCancelled(at location: SourceLocation) throws {
        if isCancelled() { throw Diagnostic.running(Self.interruption, at: location) }
    }

    func located<T>(_ location: SourceLocation, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: location)
        }
    }

    func located<T>(_ location: SourceLocation, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: location)
        }
    }
}

/// An object a command's targets name: its name, its metadata when a pattern's scan read it, and the word that
/// named it (for messages; nil for the current reference).
typealias ExpandedTarget = (name: ObjectName, metadata: ObjectMetadata?, word: Word?)

extension MessageText {
    /// Rules that come from no file have an origin in parentheses, a description ("(the open rules of a new
    /// bucket)"): that description, to be read in a sentence; nil for a file's name.
    static func rulesDescription(_ origin: String) -> String? {
        origin.hasPrefix("(") && origin.hasSuffix(")") ? String(origin.dropFirst().dropLast()) : nil
    }

    /// For an empty listing of a folder that holds names no listing shows (rule L3).
    static func hiddenName(_ name: String) -> String {
        "it holds \(oneLine(name)), a name no listing shows as an item (rule L3); meta get --raw '\(oneLine(name))' shows it"
    }
}
