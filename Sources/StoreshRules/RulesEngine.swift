import Foundation
import StoreshCore

/// Security rules for a bucket: the ruleset in force, who requests are made as, and the last decision.
/// The local engine asks it before every operation (`AccessAuthorizer`); the language's `rules`, `login`,
/// `logout` and `whoami` commands drive it (`RulesControl`).
public final class RulesEngine: AccessAuthorizer, RulesControl, @unchecked Sendable {
    /// What a new bucket gets, so that a newcomer is never blocked.
    public static let openRules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /{allPaths=**} {
              allow read, write: if true;
            }
          }
        }

        """
    public static let openRulesOrigin = "(the open rules of a new bucket)"

    /// The exact error of rule L12.
    public static let listingNeedsVersion2 = StorageError(
        .unauthorized,
        "Listing objects in a bucket is disallowed for rules_version = \"1\". Please update storage security rules to rules_version = \"2\" to use list.")

    private let lock = NSLock()
    private let store: RulesStore
    private var ruleset: Ruleset
    private var source: String
    private var origin: String
    private var signedIn: Identity?
    private var last: (request: AccessRequest, decision: AccessDecision)?
    private var recording = true

    public init(store: RulesStore) throws {
        self.store = store
        (ruleset, source, origin) = (try RulesParser.parse(Self.openRules), Self.openRules, Self.openRulesOrigin)
        try reloadRules()
    }

    /// Reads the rules the store holds (after a script's transaction ended, they may have changed back).
    public func reloadRules() throws {
        guard let stored = try store.storedRules() else {
            lock.withLock { (ruleset, source, origin) = (try! RulesParser.parse(Self.openRules), Self.openRules, Self.openRulesOrigin) }
            return
        }
        let parsed = try Self.parse(stored.source, origin: stored.origin)
        lock.withLock { (ruleset, source, origin) = (parsed, stored.source, stored.origin) }
    }

    static func parse(_ source: String, origin: String) throws(StorageError) -> Ruleset {
        do {
            return try RulesParser.parse(source)
        } catch {
            throw StorageError(.invalidArgument, "\(origin):\(error.line):\(error.column): \(error.message)")
        }
    }

    // MARK: RulesControl

    public var identity: Identity? {
        get { lock.withLock { signedIn } }
        set { lock.withLock { signedIn = newValue } }
    }

    public var lastDecision: (request: AccessRequest, decision: AccessDecision)? { lock.withLock { last } }

    public var recordsDecisions: Bool {
        get { lock.withLock { recording } }
        set { lock.withLock { recording = newValue } }
    }

    public func currentRules() throws -> (source: String, origin: String) { lock.withLock { (source, origin) } }

    public func loadRules(source: String, origin: String) throws {
        let parsed = try Self.parse(source, origin: origin)
        try store.storeRules(source: source, origin: origin)
        lock.withLock { (ruleset, self.source, self.origin) = (parsed, source, origin) }
    }

    // MARK: AccessAuthorizer

    public func decide(_ request: AccessRequest) -> AccessDecision {
        let (ruleset, origin, identity) = lock.withLock { (self.ruleset, self.origin, self.signedIn) }
        let decision = Self.decide(request, ruleset: ruleset, origin: origin, identity: identity)
        lock.withLock { if recording { last = (request, decision) } }
        return decision
    }

    static func decide(_ request: AccessRequest, ruleset: Ruleset, origin: String, identity: Identity?) -> AccessDecision {
        let target: @Sendable () -> String = { "\(request.method.rawValue) on gs://\(request.bucket)/\(request.path)" }
        if ruleset.version == "1" && request.method == .list {
            return AccessDecision(allowed: false, denial: listingNeedsVersion2) {
                "denied \(target()): listing needs rules_version 2 (rule L12)"
            }
        }
        let evaluator = RulesEvaluator(ruleset: ruleset, request: request, identity: identity)
        let candidates = evaluator.candidates()
        var reasons: [String] = []
        for candidate in candidates {
            let allow = candidate.allow
            let place: @Sendable () -> String = { "\(origin):\(allow.line)" }
            guard let condition = allow.condition else {
                return AccessDecision(allowed: true) { "allowed \(target()) by `\(allow.text)` at \(place())" }
            }
            do {
                let value = try evaluator.evaluate(condition, Scope(variables: candidate.variables, functions: candidate.functions))
                if case .bool(true) = value {
                    return AccessDecision(allowed: true) { "allowed \(target()) by `\(allow.text)` at \(place())" }
                }
                reasons.append("`\(allow.text)` at \(place()): the condition is false")
            } catch {
                reasons.append("`\(allow.text)` at \(place()): \(error.message) (line \(error.line)), so it grants nothing")
            }
        }
        let why =
            candidates.isEmpty
            ? "no allow statement for \(request.method.rawValue) matches the path"
            : "no allow granted it:\n  " + reasons.joined(separator: "\n  ")
        return AccessDecision(allowed: false, denial: .unauthorized(bucket: request.bucket, path: request.path)) {
            "denied \(target()): \(why)"
        }
    }
}
