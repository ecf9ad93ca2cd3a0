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
    private static let openRuleset = CompiledRuleset(try! RulesParser.parse(openRules), origin: openRulesOrigin)

    /// The exact error of rule L12.
    public static let listingNeedsVersion2 = StorageError(
        .unauthorized,
        "Listing objects in a bucket is disallowed for rules_version = \"1\". Please update storage security rules to rules_version = \"2\" to use list.")

    private let lock = NSLock()
    /// Weak: the local bucket holds the engine as its authorizer, and a strong reference back would keep both
    /// alive for ever (the bucket file then never closed).
    private weak var store: RulesStore?
    private var ruleset: CompiledRuleset
    private var source: String
    private var origin: String
    private var signedIn: Identity?
    /// `request.auth` for the signed-in identity, made once per sign-in rather than once per request.
    private var authValue: RulesValue = .null
    private var last: (request: AccessRequest, decision: AccessDecision)?
    private var recording = true

    public init(store: RulesStore) throws {
        self.store = store
        (ruleset, source, origin) = (Self.openRuleset, Self.openRules, Self.openRulesOrigin)
        try reloadRules()
    }

    /// Reads the rules the store holds (after a script's transaction ended, they may have changed back).
    public func reloadRules() throws {
        guard let stored = try store?.storedRules() else {
            lock.withLock { (ruleset, source, origin) = (Self.openRuleset, Self.openRules, Self.openRulesOrigin) }
            return
        }
        // Every command and script ends with a reload: parse only when the stored rules changed.
        if lock.withLock({ source == stored.source && origin == stored.origin }) { return }
        let parsed = try Self.parse(stored.source, origin: stored.origin)
        lock.withLock { (ruleset, source, origin) = (parsed, stored.source, stored.origin) }
    }

    static func parse(_ source: String, origin: String) throws(StorageError) -> CompiledRuleset {
        do {
            return CompiledRuleset(try RulesParser.parse(source), origin: origin)
        } catch {
            throw StorageError(.invalidArgument, "\(origin):\(error.line):\(error.column): \(error.message)")
        }
    }

    // MARK: RulesControl

    public var identity: Identity? {
        get { lock.withLock { signedIn } }
        set {
            let value = RulesEvaluator.authValue(newValue)
            lock.withLock { (signedIn, authValue) = (newValue, value) }
        }
    }

    public var lastDecision: (request: AccessRequest, decision: AccessDecision)? { lock.withLock { last } }

    public var recordsDecisions: Bool {
        get { lock.withLock { recording } }
        set { lock.withLock { recording = newValue } }
    }

    public func currentRules() throws -> (source: String, origin: String) { lock.withLock { (source, origin) } }

    public func loadRules(source: String, origin: String) throws {
        let parsed = try Self.parse(source, origin: origin)
        guard let store else { throw StorageError.internalError("The bucket of these rules was closed.") }
        try store.storeRules(source: source, origin: origin)
        lock.withLock { (ruleset, self.source, self.origin) = (parsed, source, origin) }
    }

    // MARK: AccessAuthorizer

    public func decide(_ request: AccessRequest) -> AccessDecision {
        // One lock for the decision and its record: evaluating never calls back into the engine.
        lock.withLock {
            let decision = Self.decide(request, ruleset: ruleset, auth: authValue)
            if recording { last = (request, decision) }
            return decision
        }
    }

    static func decide(_ request: AccessRequest, ruleset: CompiledRuleset, auth: RulesValue) -> AccessDecision {
        if ruleset.version == "1" && request.method == .list {
            return AccessDecision(allowed: false, denial: listingNeedsVersion2, reasons: ["listing needs rules_version 2 (rule L12)"])
        }
        let evaluator = RulesEvaluator(request: request, auth: auth)
        var reasons: [String] = []
        // Every allow for the method in a match block that matches the whole path, in the order the service
        // reads them; each is evaluated as it is found, and the first that grants ends the search.
        let firstName = SegmentFingerprint(firstSegmentOf: request.path)
        for route in ruleset.routes(for: request.method) {
            if let routeFirstName = route.firstName, routeFirstName != firstName { continue }
            guard route.matches(bucket: request.bucket, name: request.path, version: ruleset.version) else { continue }
            var scope = Scope(variables: Variables(), functions: route.functions)
            _ = route.matches(bucket: request.bucket, name: request.path, version: ruleset.version, binding: &scope.variables)
            for candidate in route.allows {
                let allow = candidate.allow
                guard let condition = allow.condition else { return AccessDecision(allowed: true, grantedBy: candidate.grant) }
                do throws(EvaluationError) {
                    if case .bool(true) = try evaluator.evaluate(condition, scope) {
                        return AccessDecision(allowed: true, grantedBy: candidate.grant)
                    }
                    reasons.append("`\(allow.text)` at \(candidate.grant.origin):\(allow.line): the condition is false")
                } catch {
                    reasons.append("`\(allow.text)` at \(candidate.grant.origin):\(allow.line): \(error.message) (line \(error.line)), so it grants nothing")
                }
            }
        }
        if reasons.isEmpty { reasons = ["no allow statement for \(request.method.rawValue) matches the path"] }
        return AccessDecision(allowed: false, denial: .unauthorized(bucket: request.bucket, path: request.path), reasons: reasons)
    }
}
