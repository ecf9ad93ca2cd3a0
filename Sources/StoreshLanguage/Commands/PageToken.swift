import StoreshCore

/// `page token [TOKEN]`: what a page token holds (default: the last listing's).
package struct PageTokenCommand: LocalCommand, Equatable {
    package var token: Word?

    package init(token: Word?) { self.token = token }

    package static let declaration = CommandDeclaration(
        "page token", group: .navigate, usage: "page token [TOKEN]",
        summary: "what a page token holds (default: the last page's)",
        details: [
            "A token holds where the next page starts: the last entry returned (its full name) in its",
            "listing. It carries no generation: the next page starts after the name, whatever became of it.",
        ], example: "page token",
        sdk: ["pageToken"])

    package static let explanation = Explainer.local(
        "read what a page token holds: no request",
        note: "To the SDKs a pageToken is opaque: list(maxResults:pageToken:) sends it back as it came.")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        token = try arguments.optionalLast()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        guard let text = token?.text ?? session.lastListing?.nextPageToken else {
            throw Diagnostic.running(
                .invalidArgument(
                    session.lastListing == nil
                        ? "There is no page token to show: no listing yet. List a page first (ls -n 2), or give one: page token TOKEN."
                        : "There is no page token to show: the last listing had no more pages. Give one: page token TOKEN."
                ),
                at: here)
        }
        let (bucket, position) = try session.located(token?.location ?? here) {
            try session.target.pageTokens.contents(of: text)
        }
        session.deliver(.pageToken(token: text, bucket: bucket, position: position, scheme: session.target.scheme))
        return .next
    }
}
