import Foundation
import StoreshCore

/// The security rules one session works under (a shell, a script, later a server's request): the ruleset in
/// force, who requests are made as, and the last decision for `rules why`. It holds no bucket: the rules come
/// from a store when the session starts or reloads, and it wraps whatever bucket it is given
/// (`guarding(_:)`), so one session can guard a bucket, a transaction of it, or a plan over it.
package final class RulesSession: RulesControl, @unchecked Sendable {
    private let lock = NSLock()
    /// Where `request.time` comes from.
    let clock: any StorageClock
    /// The rules in force, compiled; nil for the open rules of a new bucket, which allow every request whatever
    /// the object: no request then needs the object read first, nothing is evaluated, and a run never pays for
    /// parsing them (the common case stays as cheap as no rules at all).
    private var ruleset: CompiledRuleset?
    private var source: String
    private var origin: String
    /// With the open rules: the decision for every request.
    private var openDecision: AccessDecision
    /// Why the stored rules cannot be used (kept before storesh bounded rules, or damaged), when they cannot:
    /// every request they would decide is then denied, and the bucket still opens so that `rules load` or
    /// `rules reset` can replace them.
    private var unusable: String?
    private var signedIn: Identity?
    /// `request.auth` for the signed-in identity, made once per sign-in rather than once per request.
    private var authValue: RulesValue = .null
    private var last: (request: AccessRequest, decision: AccessDecision)?
    private var recording = true
    /// Told of every decision, the unrecorded ones included (a server's request log).
    private var observer: (@Sendable (AccessRequest, AccessDecision) -> Void)?

    /// A session under the rules `store` keeps (the open rules of a new bucket when it keeps none, or there is
    /// no store).
    package init(store: (any RulesStore)?, clock: any StorageClock = SystemClock()) throws {
        self.clock = clock
        (ruleset, source, origin) = (nil, RulesEngine.openRules, RulesEngine.openRulesOrigin)
        openDecision = RulesEngine.openDecision(origin: RulesEngine.openRulesOrigin)
        if let store { try reloadRules(from: store) }
    }

    /// A session under the same rules for requests made as `identity` (one request of a server): the compiled
    /// rules are shared, not parsed again, and its decisions are not recorded for `rules why`; each is given to
    /// `observer`, when there is one.
    package func session(
        as identity: Identity?, observer: (@Sendable (AccessRequest, AccessDecision) -> Void)? = nil
    ) -> RulesSession {
        let copy = lock.withLock {
            RulesSession(
                clock: clock, ruleset: ruleset, source: source, origin: origin, openDecision: openDecision,
                unusable: unusable)
        }
        copy.identity = identity
        copy.recording = false
        copy.observer = observer
        return copy
    }

    private init(
        clock: any StorageClock, ruleset: CompiledRuleset?, source: String, origin: String,
        openDecision: AccessDecision,
        unusable: String?
    ) {
        (self.clock, self.ruleset, self.source, self.origin, self.openDecision) = (
            clock, ruleset, source, origin, openDecision
        )
        self.unusable = unusable
    }

    /// Why the stored rules cannot be used, when they cannot (see `unusable`).
    package var problem: String? { lock.withLock { unusable } }

    // MARK: RulesControl

    package var samples: [(name: String, source: String)] { SampleRules.all }

    package var openRules: (source: String, origin: String) { (RulesEngine.openRules, RulesEngine.openRulesOrigin) }

    package var identity: Identity? {
        get { lock.withLock { signedIn } }
        set {
            let value = RulesEvaluator.authValue(newValue)
            lock.withLock { (signedIn, authValue) = (newValue, value) }
        }
    }

    package var lastDecision: (request: AccessRequest, decision: AccessDecision)? { lock.withLock { last } }

    package var recordsDecisions: Bool {
        get { lock.withLock { recording } }
        set { lock.withLock { recording = newValue } }
    }

    package func currentRules() -> (source: String, origin: String) {
        lock.withLock {
            guard let unusable else { return (source, origin) }
            return (
                source,
                "\(origin), which cannot be used (\(unusable)): every request they would decide is denied until rules load or rules reset"
            )
        }
    }

    package func loadRules(source: String, origin: String, into store: any RulesStore) throws {
        let parsed = try RulesEngine.parse(source, origin: origin)
        try store.storeRules(source: source, origin: origin)
        put(parsed, source: source, origin: origin)
    }

    package func reloadRules(from store: any RulesStore) throws {
        guard let stored = try store.storedRules() else {
            put(nil, source: RulesEngine.openRules, origin: RulesEngine.openRulesOrigin)
            return
        }
        // Every command and script ends with a reload: parse only when the stored rules changed.
        if lock.withLock({ source == stored.source && origin == stored.origin }) { return }
        do throws(StorageError) {
            put(
                try RulesEngine.parse(stored.source, origin: stored.origin), source: stored.source,
                origin: stored.origin)
        } catch {
            // Never a reason not to open the bucket: the rules are what must be replaced.
            put(RulesEngine.denyingRuleset, source: stored.source, origin: stored.origin, unusable: error.message)
        }
    }

    private func put(_ parsed: CompiledRuleset?, source: String, origin: String, unusable: String? = nil) {
        // The open rules, loaded from a file or stored, are the open rules.
        let compiled = source == RulesEngine.openRules ? nil : parsed
        let decision = RulesEngine.openDecision(origin: origin)
        lock.withLock {
            (ruleset, self.source, self.origin, openDecision, self.unusable) = (
                compiled, source, origin, decision, unusable
            )
        }
    }

    package func guarding(_ bucket: any Bucket) -> any Bucket {
        if let transaction = bucket.asTransaction { return RulesLayerTransaction(transaction, session: self) }
        return RulesLayer(bucket, session: self)
    }

    // MARK: Decisions

    var isOpen: Bool { lock.withLock { ruleset == nil } }

    /// Whether each decision is reported as it is made (a server's trace).
    var isObserved: Bool { lock.withLock { observer != nil } }

    /// Decides a request made now by the signed-in identity, records it (unless `record` is false or recording is
    /// off), and throws its denial.
    func check(
        _ method: AccessMethod, bucket: String, path: String, new: ObjectMetadata? = nil,
        existing: ObjectMetadata? = nil,
        record: Bool = true
    ) throws {
        let time = clock.now()
        // One lock for the decision and its record: evaluating never calls back into the session.
        let (request, decision, observer) = lock.withLock {
            () -> (AccessRequest, AccessDecision, (@Sendable (AccessRequest, AccessDecision) -> Void)?) in
            let request = AccessRequest(
                method: method, bucket: bucket, path: path, time: time, newResource: new.map(ObjectSnapshot.init),
                existingResource: existing.map(ObjectSnapshot.init), auth: signedIn)
            let decision: AccessDecision
            if let unusable {
                decision = AccessDecision(
                    allowed: false, denial: .unauthorized(bucket: bucket, path: path),
                    reasons: ["the stored rules (\(origin)) cannot be used: \(unusable)"])
            } else {
                decision = ruleset.map { RulesEngine.decide(request, ruleset: $0, auth: authValue) } ?? openDecision
            }
            if record && recording { last = (request, decision) }
            return (request, decision, self.observer)
        }
        observer?(request, decision)
        if !decision.allowed { throw decision.denial ?? StorageError.unauthorized(bucket: bucket, path: path) }
    }

    /// `request.resource` as a write will make it; its generation is the bucket's to give.
    func prospective(
        _ object: ObjectName, in bucket: String, size: Int64, md5Hash: String, options: WriteOptions,
        existing: ObjectMetadata?
    ) -> ObjectMetadata {
        let now = clock.now()
        return ObjectMetadata.newObject(
            bucket: bucket, name: object, size: size, md5Hash: md5Hash,
            generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now,
            properties: options.properties,
            customMetadata: options.customMetadata)
    }

    /// Decides the `create` of an object of `size` bytes with `options` before its bytes arrive (an upload's
    /// start), on the resource as the write would make it; not recorded. Throws its denial.
    package func authorizeCreate(
        of object: ObjectName, in bucket: String, size: Int64, options: WriteOptions, existing: ObjectMetadata?
    ) throws {
        // The content is not there yet: its MD5 is the empty content's, as the service's is before any byte.
        let new = prospective(
            object, in: bucket, size: size, md5Hash: ContentHash.md5Base64(Data()), options: options, existing: existing
        )
        try check(.create, bucket: bucket, path: object.rawValue, new: new, existing: existing, record: false)
    }

    /// The bare decision, for the benchmark of one decision.
    package func decide(_ request: AccessRequest) -> AccessDecision {
        lock.withLock { RulesEngine.decide(request, ruleset: ruleset ?? RulesEngine.openRuleset, auth: authValue) }
    }
}
