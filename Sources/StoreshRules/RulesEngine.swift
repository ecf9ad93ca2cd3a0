import Foundation
import StoreshCore

/// The pure part of security rules: the rules of a new bucket, parsing, and a decision as a function of the
/// request (which carries its identity), the ruleset and the resource.
package enum RulesEngine {
    /// What a new bucket gets, so that a newcomer is never blocked.
    package static let openRules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /{allPaths=**} {
              allow read, write: if true;
            }
          }
        }

        """
    package static let openRulesOrigin = "(the open rules of a new bucket)"
    static let openRuleset = CompiledRuleset(try! RulesParser.parse(openRules), origin: openRulesOrigin)
    /// Rules that grant nothing: what stands for stored rules that cannot be used.
    static let denyingRuleset = CompiledRuleset(Ruleset(version: "2", functions: [], matches: []), origin: "(no rules)")
    /// What the open rules (from `origin`) decide for every request, without parsing them: their one allow, at
    /// line 5, grants it.
    static func openDecision(origin: String) -> AccessDecision {
        AccessDecision(
            allowed: true, grantedBy: AccessGrant(statement: "allow read, write: if true;", origin: origin, line: 5))
    }

    /// The exact error of rule L12.
    package static let listingNeedsVersion2 = StorageError(
        .unauthorized,
        "Listing objects in a bucket is disallowed for rules_version = \"1\". Please update storage security rules to rules_version = \"2\" to use list."
    )

    /// Checks a ruleset's text without putting it in force; the error names ORIGIN:LINE:COLUMN.
    package static func check(_ source: String, origin: String) throws(StorageError) {
        _ = try parse(source, origin: origin)
    }

    static func parse(_ source: String, origin: String) throws(StorageError) -> CompiledRuleset {
        do {
            return CompiledRuleset(try RulesParser.parse(source), origin: origin)
        } catch {
            throw StorageError(.invalidArgument, "\(origin):\(error.line):\(error.column): \(error.message)")
        }
    }

    static func decide(_ request: AccessRequest, ruleset: CompiledRuleset, auth: RulesValue) -> AccessDecision {
        if ruleset.version == "1" && request.method == .list {
            return AccessDecision(
                allowed: false, denial: listingNeedsVersion2, reasons: ["listing needs rules_version 2 (rule L12)"])
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
            _ = route.matches(
                bucket: request.bucket, name: request.path, version: ruleset.version, binding: &scope.variables)
            for candidate in route.allows {
                let allow = candidate.allow
                guard let condition = allow.condition else {
                    return AccessDecision(allowed: true, grantedBy: candidate.grant)
                }
                do throws(EvaluationError) {
                    if case .bool(true) = try evaluator.evaluate(condition, scope) {
                        return AccessDecision(allowed: true, grantedBy: candidate.grant)
                    }
                    reasons.append("`\(allow.text)` at \(candidate.grant.origin):\(allow.line): the condition is false")
                } catch {
                    reasons.append(
                        "`\(allow.text)` at \(candidate.grant.origin):\(allow.line): \(error.message) (line \(error.line)), so it grants nothing"
                    )
                }
            }
        }
        if reasons.isEmpty { reasons = ["no allow statement for \(request.method.rawValue) matches the path"] }
        return AccessDecision(
            allowed: false, denial: .unauthorized(bucket: request.bucket, path: request.path), reasons: reasons)
    }
}
