import StoreshCore

/// `page next`: the page after the last paginated `ls`, with its page token.
package struct PageNextCommand: LanguageCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "page next", group: .navigate, usage: "page next", summary: "the next page of the last paginated ls",
        example: "page next",
        sdk: ["list(maxResults:pageToken:)", "pageToken"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let last = try session.continuedListing(at: here)
        let page = try await session.located(here) {
            try await session.target.list(
                last.reference,
                options: ListOptions(maxResults: last.maxResults, pageToken: last.token, includeMetadata: last.long))
        }
        session.lastListing?.nextPageToken = page.nextPageToken
        try await session.deliverPage(page, of: last.reference, long: last.long, at: here)
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let last = try session.continuedListing(at: here)
        return try session.located(here) {
            try Explainer.list(
                bucket: session.target.name, path: last.reference, maxResults: last.maxResults, pageToken: last.token,
                all: false,
                long: false, tokens: session.target.pageTokens)
        }
    }
}
