import StoreshCore

/// `ls [-n N] [--all] [--token T] [-l] [-a | --soft-deleted] [PATH]`: one page of a folder's prefixes and items
/// (rules L1–L12), or of its generations (B5, B6).
package struct ListCommand: LanguageCommand, Equatable {
    /// `-n N`: checked against 1…1000 when it runs (rule L6).
    package var maxResultsWord: Word?
    package var all = false
    package var pageToken: Word?
    package var long = false
    package var path: Word?
    /// `-a`: every generation, live and noncurrent (rule B5); `--soft-deleted`: the soft-deleted ones (rule B6).
    package var generations: GenerationListing?

    package enum GenerationListing: Sendable, Equatable {
        case all
        case softDeleted
    }

    package init() {}

    /// The page size asked for with `-n`.
    package var maxResults: Int? { maxResultsWord.flatMap { Int($0.text) } }

    package static let declaration = CommandDeclaration(
        "ls", group: .navigate, usage: "ls [-n N] [--all] [--token T] [-l] [-a | --soft-deleted] [PATH]",
        summary: "list one page of prefixes and items under PATH (default: here)",
        details: [
            "-n N       at most N entries, 1 to 1000 (default 1000); prefixes and items count together",
            "--all      every page (listAll)",
            "--token T  continue from a page token",
            "-l         size, updated and contentType of each item",
            "-a         every generation of each item, live and noncurrent, as NAME#GENERATION (rule B5); with -l, its size",
            "--soft-deleted  the soft-deleted generations, restorable with restore NAME#GENERATION (rule B6)",
            "Prefixes end in /. When more pages follow, `page next` shows the next one.",
        ], example: "ls -n 2 lessons/paging",
        options: ["-n", "--all", "--token", "-l", "-a", "--soft-deleted"], completion: .folders,
        sdk: [
            "list(maxResults:)", "list(maxResults:pageToken:)", "listAll()", "StorageListResult", "pageToken",
            "prefixes", "items",
        ])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        while let word = arguments.next() {
            if word.isOption {
                switch word.text {
                case "-n":
                    let value = try arguments.optionValue(for: word)
                    guard Int(value.text) != nil else {
                        throw Diagnostic.syntax(
                            "-n takes a whole number of entries (1 to 1000), not '\(value.text)'", at: value.location)
                    }
                    maxResultsWord = value
                case "--all": all = true
                case "--token": pageToken = try arguments.optionValue(for: word)
                case "-l": long = true
                case "-a", "--soft-deleted":
                    let asked: GenerationListing = word.text == "-a" ? .all : .softDeleted
                    if let generations, generations != asked {
                        throw Diagnostic.syntax(
                            "-a lists every generation and --soft-deleted the deleted ones: give one of them",
                            at: word.location)
                    }
                    generations = asked
                case "--": if let path = arguments.next() { try setPath(path) }
                default: throw arguments.unknownOption(word)
                }
            } else {
                try setPath(word)
            }
        }
        if all, let pageToken {
            throw Diagnostic.syntax(
                "--all lists every page from the start; it cannot take --token", at: pageToken.location)
        }
    }

    private mutating func setPath(_ word: Word) throws(Diagnostic) {
        guard path == nil else {
            throw Diagnostic.syntax("`ls` lists one PATH; '\(word.text)' is a second one", at: word.location)
        }
        path = word
    }

    /// The page size asked: `-n`, else the session's screenful at the prompt, else the most a page holds (1,000, the
    /// JavaScript SDK's documented default; Swift's `list(maxResults:)` needs a number); none for `--all`, which asks
    /// page after page as `listAll()` does.
    func pageSize(in session: Session) -> Int? {
        all ? maxResults : maxResults ?? session.options.defaultPageSize ?? ListOptions.maximumResults
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? session.current
        let maxResults = pageSize(in: session)
        if let generations {
            return try await listGenerations(generations, of: reference, maxResults: maxResults, in: session, at: here)
        }
        let page = try await self.page(in: session, at: here) { token in
            try await session.target.list(
                reference, options: ListOptions(maxResults: maxResults, pageToken: token, includeMetadata: long))
        }
        session.lastListing = all ? nil : (reference, maxResults, long, page.nextPageToken)
        try await session.deliverPage(page, of: reference, long: long, at: here)
        return .next
    }

    /// `ls -a` and `ls --soft-deleted`: a page (or every page) of generations, each with its metadata.
    private func listGenerations(
        _ kind: GenerationListing, of reference: StoragePath, maxResults: Int?, in session: Session,
        at here: SourceLocation
    ) async throws -> Session.Flow {
        let versions = try session.generations(at: here)
        var shown = reference
        var page = try await self.page(in: session, at: here) { token in
            try await versions.listGenerations(
                prefix: reference.listingPrefix, delimited: true,
                options: ListOptions(
                    maxResults: maxResults ?? ListOptions.maximumResults, pageToken: token, includeMetadata: true),
                softDeleted: kind == .softDeleted)
        }
        if page.prefixes.isEmpty, page.items.isEmpty, !reference.isRoot, pageToken == nil {
            // Nothing under it as a folder: the path may name an object, whose own generations are listed (as
            // `gsutil ls -a gs://B/NAME` lists them), beside it in its folder.
            page = try await session.located(path?.location ?? here) {
                try await Self.generations(
                    of: reference.fullPath, in: versions, softDeleted: kind == .softDeleted, session: session, at: here)
            }
            if !page.items.isEmpty { shown = reference.parent }
        }
        session.lastListing = nil
        session.deliver(
            .listing(
                ListingResult(
                    page: page, reference: shown, bucket: session.target.name, scheme: session.target.scheme,
                    long: long,
                    metadata: (page.itemMetadata ?? []).map(\.withoutDownloadTokens), referenceIsObject: false,
                    generations: true, softDeleted: kind == .softDeleted)))
        return .next
    }

    /// Every generation of the object `name` (live, noncurrent, or soft-deleted ones): the listing of the names
    /// that start with it, a page at a time, until a name past it.
    private static func generations(
        of name: String, in versions: any ObjectVersions, softDeleted: Bool, session: Session, at here: SourceLocation
    ) async throws -> ListPage {
        var found = ListPage(itemMetadata: [])
        var token: String?
        // Bounded by the bucket's token, which must change at every page, and by the first name past `name`.
        while true {
            try session.checkCancelled(at: here)
            let page = try await versions.listGenerations(
                prefix: name, delimited: true,
                options: ListOptions(maxResults: ListOptions.maximumResults, pageToken: token, includeMetadata: true),
                softDeleted: softDeleted)
            for generation in page.itemMetadata ?? [] {
                guard NameBytes.sameBytes(generation.fullPath, name) else {
                    if name.utf8.lexicographicallyPrecedes(generation.fullPath.utf8) { return found }
                    continue
                }
                found.items.append(generation.fullPath)
                found.itemMetadata?.append(generation)
            }
            guard let next = page.nextPageToken, next != token else { return found }
            token = next
        }
    }

    /// The page `ls` shows: the one at `--token` (or the first), or with `--all` every page from the first, joined;
    /// `fetch` reads the page at a token.
    private func page(
        in session: Session, at here: SourceLocation, _ fetch: (String?) async throws -> ListPage
    ) async throws -> ListPage {
        let errorLocation = maxResultsWord?.location ?? pageToken?.location ?? path?.location ?? here
        guard all else { return try await session.located(errorLocation) { try await fetch(pageToken?.text) } }
        var page = ListPage()
        var token: String?
        repeat {
            try session.checkCancelled(at: here)
            let next = try await session.located(errorLocation) { try await fetch(token) }
            page.prefixes += next.prefixes
            page.items += next.items
            if let metadata = next.itemMetadata { page.itemMetadata = (page.itemMetadata ?? []) + metadata }
            token = next.nextPageToken
        } while token != nil
        return page
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? session.current
        if let generations {
            return [
                Explainer.listGenerations(
                    bucket: session.target.name, path: reference, maxResults: maxResults ?? ListOptions.maximumResults,
                    softDeleted: generations == .softDeleted)
            ]
        }
        return try session.located(here) {
            // The call a program makes names its own page size: explained with -n's, else the most a page holds,
            // never the prompt's screenful (which depends on the terminal's height).
            try Explainer.list(
                bucket: session.target.name, path: reference,
                maxResults: all ? maxResults : maxResults ?? ListOptions.maximumResults,
                pageToken: pageToken?.text, all: all, long: long, tokens: session.target.pageTokens,
                screenful: maxResults == nil && !all ? session.options.defaultPageSize : nil)
        }
    }
}
