import Foundation
import StoreshCore

/// What `explain` says of the `rules` commands: the SDKs have no request for them.
private let rulesExplanation = Explainer.local(
    "security rules: no request of the SDKs",
    note:
        "A project's rules are deployed with the Firebase CLI (firebase deploy --only storage) or the console; the emulator takes them at PUT /internal/setRules. storesh keeps them in the bucket file and checks every command against them, as the service checks every v0 request."
)

/// `rules show`: the rules in force and where they came from.
package struct RulesShowCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "rules show", group: .rules, usage: "rules show",
        summary: "the security rules in force and where they came from", example: "rules show")

    package static var explanation: ExplainedRequest { rulesExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let (source, origin) = try session.requireRules(here).currentRules()
        session.deliver(.rules(source: source, origin: origin))
        return .next
    }
}

/// `rules load FILE | rules load --sample NAME`: checks rules and puts them in force, kept in the bucket.
package struct RulesLoadCommand: LocalCommand, Equatable {
    package enum Source: Sendable, Equatable {
        case file(Word)
        /// One of the sample rules compiled in.
        case sample(Word)
    }

    package var source: Source

    package init(_ source: Source) { self.source = source }

    package static let declaration = CommandDeclaration(
        "rules load", group: .rules, usage: "rules load FILE | rules load --sample NAME",
        summary: "check and put in force the rules of a file",
        details: [
            "The rules are kept in the bucket. Errors name FILE:LINE:COLUMN. New buckets have open",
            "rules_version 2 rules; under rules_version 1 every listing fails (rule L12).",
            "--sample NAME loads a sample compiled into storesh: owner-only (the teaching bucket's users",
            "and images), version1 (rules_version 1: no listing), open.",
        ], example: "rules load --sample owner-only",
        options: ["--sample"], changesBucket: true, requires: .rulesAdministration,
        optionCompletions: ["--sample": .ruleSamples])

    package static var explanation: ExplainedRequest { rulesExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        let file = try arguments.required("FILE")
        if file.text == "--sample" && file.isBare {
            let sample = try arguments.required(
                "a sample's name (owner-only, version1, open)", for: "rules load --sample", after: file)
            try arguments.expectEnd(for: "rules load --sample")
            source = .sample(sample)
        } else {
            try arguments.expectEnd()
            source = .file(file)
        }
    }

    package var header: String {
        switch source {
        case .file(let file): "rules load \(file.text)"
        case .sample(let sample): "rules load --sample \(sample.text)"
        }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        switch source {
        case .file(let file):
            let data = try session.located(file.location) { try session.files.readDocument(file.text) }
            guard let text = String(data: data, encoding: .utf8) else {
                throw Diagnostic.running(.invalidArgument("\(file.text) is not UTF-8 text."), at: file.location)
            }
            try session.loadRules(text, origin: file.text, at: file.location)
            session.deliver(.rulesLoaded(file: file.text, dryRun: session.options.dryRun))
        case .sample(let sample):
            let samples = try session.requireRules(here).samples
            guard let text = samples.first(where: { $0.name == sample.text })?.source else {
                var message =
                    "There are no sample rules named \(sample.text); the samples are \(samples.map(\.name).joined(separator: ", "))"
                if let near = Suggestion.nearest(to: sample.text, among: samples.map(\.name)) {
                    message += " (did you mean \(near)?)"
                }
                throw Diagnostic.running(.invalidArgument(message + "."), at: sample.location)
            }
            // Named as the file it is built from, so that `rules show` and `rules why` (FILE:LINE) read naturally.
            let origin = "samples/rules/\(sample.text).rules"
            try session.loadRules(text, origin: origin, at: sample.location)
            session.deliver(
                .rulesLoaded(file: origin + " (the sample built into storesh)", dryRun: session.options.dryRun))
        }
        return .next
    }
}

/// `rules reset`: the open rules of a new bucket again.
package struct RulesResetCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "rules reset", group: .rules, usage: "rules reset", summary: "put back the open rules of a new bucket",
        details: ["The same as rules load --sample open: anyone may read and write."], example: "rules reset",
        changesBucket: true, requires: .rulesAdministration)

    package static var explanation: ExplainedRequest { rulesExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let open = try session.requireRules(here).openRules
        try session.loadRules(open.source, origin: open.origin, at: here)
        session.deliver(.rulesReset(dryRun: session.options.dryRun))
        return .next
    }
}

/// `rules why`: which allow granted the last request, or why none did.
package struct RulesWhyCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "rules why", group: .rules, usage: "rules why",
        summary: "which allow (file:line) granted the last request, or why none did",
        example: "rules why")

    package static var explanation: ExplainedRequest { rulesExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        // On a real bucket the service decides, never storesh's own rules: say what it answered, and why when the
        // server says (storesh serve does), rather than what local rules would have said.
        if session.target.accessDescription != nil {
            guard let signIn = session.target.endUserSignIn else {
                session.deliver(
                    .decision(
                        allowed: nil,
                        explanation:
                            "\(session.bucket.url) has no security rules: its requests go with the bucket's credentials, which the service alone decides on."
                    ))
                return .next
            }
            guard let answer = signIn.lastAnswer else {
                session.deliver(
                    .decision(
                        allowed: nil,
                        explanation:
                            "on \(session.bucket.url) the service decides each request, not storesh: signed out, requests go with the bucket's credentials (IAM decides, no security rules apply); after login, the project's security rules decide, and rules why says what the service answered the last request."
                    ))
                return .next
            }
            let allowed: Bool? =
                (200..<300).contains(answer.status) ? true : answer.status == 403 || answer.status == 401 ? false : nil
            let said = answer.decision.map { ": \($0)" } ?? " (the service does not say which rule decided)"
            session.deliver(
                .decision(
                    allowed: allowed, explanation: "the service answered \(answer.request) with \(answer.status)\(said)"
                ))
            return .next
        }
        let last = try session.requireRules(here).lastDecision
        let text = last.map { $0.decision.explanation(for: $0.request) } ?? "no request has been decided yet"
        session.deliver(.decision(allowed: last?.decision.allowed, explanation: text))
        return .next
    }
}

extension Session {
    func requireRules(_ here: SourceLocation) throws -> RulesControl {
        guard let rules else {
            throw Diagnostic.running(.invalidArgument("This bucket has no security rules to show or change."), at: here)
        }
        return rules
    }

    /// Checks rules and puts them in force in the bucket (`rules load`, `rules reset`).
    func loadRules(_ source: String, origin: String, at location: SourceLocation) throws {
        let rules = try requireRules(location)
        guard let store = target.rulesStore else {
            throw Diagnostic.running(
                .invalidArgument("\(target.url) keeps no security rules that storesh may change."), at: location)
        }
        try located(location) { try rules.loadRules(source: source, origin: origin, into: store) }
    }
}
