import StoreshCore

/// `ls [-n N] [--all] [--token T] [-l] [PATH]`: one page of a folder's prefixes and items (rules L1–L12).
public struct ListCommand: LanguageCommand, Equatable {
    /// `-n N`: checked against 1…1000 when it runs (rule L6).
    public var maxResultsWord: Word?
    public var all = false
    public var pageToken: Word?
    public var long = false
    public var path: Word?

    public init() {}

    /// The page size asked for with `-n`.
    public var maxResults: Int? { maxResultsWord.flatMap { Int($0.text) } }

    public static let declaration = CommandDeclaration(
        "ls", group: .navigate, usage: "ls [-n N] [--all] [--token T] [-l] [PATH]",
        summary: "list one page of prefixes and items under PATH (default: here)",
        details: [
            "-n N       at most N entries, 1 to 1000 (default 1000); prefixes and items count together",
            "--all      every page (listAll)",
            "--token T  continue from a page token",
            "-l         size, updated and contentType of each item",
            "Prefixes end in /. When more pages follow, `page next` shows the next one.",
        ], example: "ls -n 2 lessons/paging",
        options: ["-n", "--all", "--token", "-l"], completion: .folders,
        sdk: ["list(maxResults:)", "list(maxResults:pageToken:)", "listAll()", "StorageListResult", "pageToken", "prefixes", "items"])

    public init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        while let word = arguments.next() {
            if word.isOption {
                switch word.text {
                case "-n":
                    let value = try arguments.optionValue(for: word)
                    guard Int(value.text) != nil else {
                        throw Diagnostic.syntax("-n takes a whole number of entries (1 to 1000), not '\(value.text)'", at: value.location)
                    }
                    maxResultsWord = value
                case "--all": all = true
                case "--token": pageToken = try arguments.optionValue(for: word)
                case "-l": long = true
                case "--": if let path = arguments.next() { try setPath(path) }
                default: throw arguments.unknownOption(word)
                }
            } else {
                try setPath(word)
            }
        }
        if all, let pageToken {
            throw Diagnostic.syntax("--all lists every page from the start; it cannot take --token", at: pageToken.location)
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

    public func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? session.current
        let maxResults = pageSize(in: session)
        let errorLocation = maxResultsWord?.location ?? pageToken?.location ?? path?.location ?? here
        var page: ListPage
        if all {
            page = ListPage()
            var token: String?
            repeat {
                try session.checkCancelled(at: here)
                let next = try await session.located(errorLocation) {
                    try await session.target.list(
                        reference, options: ListOptions(maxResults: maxResults, pageToken: token, includeMetadata: long))
                }
                page.prefixes += next.prefixes
                page.items += next.items
                if let metadata = next.itemMetadata { page.itemMetadata = (page.itemMetadata ?? []) + metadata }
                token = next.nextPageToken
            } while token != nil
            session.lastListing = nil
        } else {
            page = try await session.located(errorLocation) {
                try await session.target.list(
                    reference, options: ListOptions(maxResults: maxResults, pageToken: pageToken?.text, includeMetadata: long))
            }
            session.lastListing = (reference, maxResults, long, page.nextPageToken)
        }
        try await session.deliverPage(page, of: reference, long: long, at: here)
        return .next
    }

    public func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? session.current
        return try session.located(here) {
            // The call a program makes names its own page size: explained with -n's, else the most a page holds,
            // never the prompt's screenful (which depends on the terminal's height).
            try Explainer.list(
                bucket: session.target.name, path: reference, maxResults: all ? maxResults : maxResults ?? ListOptions.maximumResults,
                pageToken: pageToken?.text, all: all, long: long, tokens: session.target.pageTokens,
                screenful: maxResults == nil && !all ? session.options.defaultPageSize : nil)
        }
    }
}
