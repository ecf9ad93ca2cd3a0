/// A token claim's value, typed as the token's JSON has it: `"admin": true` is a bool and `"admin": "true"` a
/// string, so that a rule's `== true` or `== '7'` decides as it would on the service.
public enum ClaimValue: Sendable, Equatable, CustomStringConvertible {
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case float(Double)

    /// A claim given as text (`login ada admin=true level=3`): a bool or a number when it reads as one.
    public init(text: String) {
        if text == "true" || text == "false" {
            self = .bool(text == "true")
        } else if let number = Int64(text) {
            self = .integer(number)
        } else {
            self = .string(text)
        }
    }

    /// As the `login` command writes it.
    public var description: String {
        switch self {
        case .string(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .integer(let number): String(number)
        case .float(let number): String(number)
        }
    }
}

/// Who makes requests (rule R4's `request.auth`): a user id and the token's claims.
public struct Identity: Sendable, Equatable {
    public var uid: String
    public var claims: [String: ClaimValue]

    public init(uid: String, claims: [String: ClaimValue] = [:]) {
        self.uid = uid
        self.claims = claims
    }
}

/// The fine-grained methods of security rules (rule R2): `read` is get + list, `write` is create + update +
/// delete.
public enum AccessMethod: String, Sendable, CaseIterable {
    case get, list, create, update, delete
}

/// An object's metadata shared by reference: a request is copied as it is decided and recorded, and copying
/// the metadata itself (a dozen strings and a map) for every object of a bulk edit cost more than the rules.
public final class ObjectSnapshot: Sendable {
    public let metadata: ObjectMetadata

    public init(_ metadata: ObjectMetadata) {
        self.metadata = metadata
    }
}

/// One request as rules see it (rule R4). Shared by reference: it is passed down to the evaluator and kept as
/// the last request for `rules why`, once per object of a bulk edit.
public final class AccessRequest: Sendable {
    public let method: AccessMethod
    public let bucket: String
    /// The object's name, or for a list the listed reference's full path (rule R4: a list is checked at the
    /// listed path).
    public let path: String
    public let time: Timestamp
    /// The object as it would be after a create or update (`request.resource`).
    public let newResource: ObjectSnapshot?
    /// The existing object (`resource`), nil when there is none.
    public let existingResource: ObjectSnapshot?
    /// Who makes the request (`request.auth`); nil is signed out.
    public let auth: Identity?

    public init(
        method: AccessMethod, bucket: String, path: String, time: Timestamp, newResource: ObjectSnapshot? = nil,
        existingResource: ObjectSnapshot? = nil, auth: Identity? = nil
    ) {
        self.method = method
        self.bucket = bucket
        self.path = path
        self.time = time
        self.newResource = newResource
        self.existingResource = existingResource
        self.auth = auth
    }
}

/// The allow statement that granted a request, and where it is; made once per statement when rules are loaded.
public final class AccessGrant: Sendable {
    public let statement: String
    /// The rules file.
    public let origin: String
    public let line: Int

    public init(statement: String, origin: String, line: Int) {
        self.statement = statement
        self.origin = origin
        self.line = line
    }
}

/// A rules verdict and, for `rules why`, what decided it. It holds the parts of its explanation, made into
/// words only when asked: a bulk edit decides many requests and explains at most one.
public struct AccessDecision: Sendable {
    public var allowed: Bool
    /// The error to raise when denied (unauthorized, or the listing error of rule L12).
    public var denial: StorageError?
    /// The allow statement that granted the request.
    public var grantedBy: AccessGrant?
    /// For a denial: why no allow granted it, one reason per candidate, or the one reason there was.
    public var reasons: [String]

    public init(allowed: Bool, denial: StorageError? = nil, grantedBy: AccessGrant? = nil, reasons: [String] = []) {
        self.allowed = allowed
        self.denial = denial
        self.grantedBy = grantedBy
        self.reasons = reasons
    }

    /// Which allow granted the request (file:line), or why none did.
    public func explanation(for request: AccessRequest) -> String {
        let target = "\(request.method.rawValue) on gs://\(request.bucket)/\(request.path)"
        if let grantedBy {
            return "allowed \(target) by `\(grantedBy.statement)` at \(grantedBy.origin):\(grantedBy.line)"
        }
        return "denied \(target): "
            + (reasons.count == 1 ? reasons[0] : "no allow granted it:\n  " + reasons.joined(separator: "\n  "))
    }
}

/// What the language's `rules` and `login` commands work with: the security rules of one session (a shell, a
/// script, a server's request), which wrap any bucket so that they decide every request made through it.
public protocol RulesControl: AnyObject {
    /// Who requests are made as; nil is signed out (`request.auth == null`).
    var identity: Identity? { get set }
    /// The rules in force: their text and where they came from.
    func currentRules() -> (source: String, origin: String)
    /// Checks the rules (errors name FILE:LINE:COLUMN in the rules text), keeps them in `store` (a transaction's,
    /// so that they land with the script or not at all) and puts them in force.
    func loadRules(source: String, origin: String, into store: any RulesStore) throws
    /// The sample rules there are to load by name (`rules load --sample NAME`), with their text.
    var samples: [(name: String, source: String)] { get }
    /// The open rules of a new bucket, and how `rules show` names them.
    var openRules: (source: String, origin: String) { get }
    /// The last decision, for `rules why`.
    var lastDecision: (request: AccessRequest, decision: AccessDecision)? { get }
    /// False while requests that are not the user's (an error's hint, Tab completion) are decided, so that
    /// `rules why` still explains the user's own request.
    var recordsDecisions: Bool { get set }
    /// Reads the stored rules again (a rolled-back script may have undone a `rules load`).
    func reloadRules(from store: any RulesStore) throws
    /// `bucket` with these rules deciding every request made through it, before the object is looked for
    /// (rule R3). Snapshots and rules administration pass through: rules do not apply to them.
    func guarding(_ bucket: any Bucket) -> any Bucket
}

/// Where a bucket keeps its rules (the local bucket: inside its file, so they travel with it).
public protocol RulesStore: AnyObject {
    func storedRules() throws -> (source: String, origin: String)?
    func storeRules(source: String, origin: String) throws
}
