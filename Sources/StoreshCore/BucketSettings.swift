import Foundation

/// What a bucket is besides its objects and rules: Cloud Storage's bucket resource, as much of it as storesh keeps
/// (rule B4). Stored with the bucket and answered as it was given; what storesh does with each setting is in the
/// rule, and a setting it cannot honour (a hierarchical namespace, autoclass) is refused when given,
/// never kept and ignored.
public struct BucketSettings: Sendable, Equatable, Codable {
    /// Counts the changes of the settings, from 1 (preconditions on a bucket name it).
    public var metageneration: Int64
    public var timeCreated: Timestamp
    public var updated: Timestamp
    /// Where the bucket says it is: answered as given (a bucket file is where it is).
    public var location: String
    public var locationType: String
    /// The default storage class of new objects.
    public var storageClass: String
    public var rpo: String
    public var labels: [String: String]
    /// Kept as given and answered (`cors`, `lifecycle`, `website`, `logging`, `billing`): storesh serve does not act
    /// on them (a lifecycle rule deletes nothing; the service applies them within a day, on its own).
    public var kept: [String: JSONValue]
    public var uniformBucketLevelAccess: Bool
    public var publicAccessPrevention: String
    /// Whether `storesh serve` made the bucket's file for a client: only such a bucket may a client delete (a bucket
    /// file someone made by hand, or the shell, is theirs).
    public var madeByServer: Bool
    /// Whether an overwritten or deleted object is kept as a noncurrent generation (object versioning, rule B5); nil
    /// when it was never set (the resource then names no `versioning`, as the service's does not).
    public var versioning: Bool?
    /// Whether every new object starts under an event-based hold (rule M9); nil when never set.
    public var defaultEventBasedHold: Bool?
    /// How long deleted and replaced objects are kept soft-deleted (rule B6), in seconds; nil (none) or 0 when they are
    /// not. The service gives new buckets 7 days; storesh serve gives them none unless asked.
    public var softDeleteSeconds: Int64?
    /// When the soft delete policy took effect.
    public var softDeleteEffectiveTime: Timestamp?
    /// A retention policy (rule M9): no object is deleted or overwritten before it is this many seconds old; nil
    /// when there is none.
    public var retentionPeriod: Int64?
    /// When the retention policy took effect.
    public var retentionEffectiveTime: Timestamp?
    /// Whether the policy is locked: it can then be neither removed nor shortened, only lengthened.
    public var retentionLocked: Bool?
    /// Whether objects may carry a retention of their own (`objectRetention.mode` Enabled), chosen when the bucket is
    /// made (`enableObjectRetention`).
    public var objectRetentionEnabled: Bool?
    /// The bucket's access control lists and IAM policy (rule B7), kept as given and answered; nil for a new bucket's.
    /// storesh serve decides no request by them: every request on its JSON and XML APIs is the administrator's.
    public var acl: JSONValue?
    public var defaultObjectAcl: JSONValue?
    public var iamPolicy: JSONValue?
    /// Counts the IAM policy's changes: its etag.
    public var iamPolicyVersion: Int64?
    /// Which ways of encrypting new objects the bucket restricts (`encryption.*EncryptionEnforcementConfig`), by
    /// encryption type; nil when none was ever set.
    public var encryptionEnforcement: [EncryptionType: EncryptionEnforcement]?
    /// When the bucket was deleted, while its soft delete policy keeps it restorable (rule B6); nil while it is live.
    public var softDeleteTime: Timestamp?

    /// The bucket's generation: which of the buckets ever given its name it is (a soft-deleted one is restored by
    /// it), the microsecond it was made.
    public var generation: Int64 { timeCreated.microseconds }

    /// When a soft-deleted bucket goes for good: its deletion plus its soft delete policy's duration.
    public var hardDeleteTime: Timestamp? {
        guard let softDeleteTime else { return nil }
        let (span, spanOverflow) = (softDeleteSeconds ?? 0).multipliedReportingOverflow(by: 1_000_000)
        let (end, overflow) = softDeleteTime.microseconds.addingReportingOverflow(span)
        return Timestamp(microseconds: spanOverflow || overflow ? .max : end)
    }

    /// How an object is encrypted, as a bucket's enforcement names it.
    public enum EncryptionType: String, Codable, CodingKeyRepresentable, Sendable, CaseIterable {
        /// Google-managed keys (GMEK): every object written without a key of its own (all of storesh serve's).
        case googleManaged = "googleManagedEncryptionEnforcementConfig"
        /// Cloud KMS keys (CMEK), which storesh serve has none of.
        case customerManaged = "customerManagedEncryptionEnforcementConfig"
        /// A key the client gives with each request (CSEK, `x-goog-encryption-key`).
        case customerSupplied = "customerSuppliedEncryptionEnforcementConfig"

        /// How messages name it.
        public var described: String {
            switch self {
            case .googleManaged: "Google-managed encryption (no customer-supplied key)"
            case .customerManaged: "a Cloud KMS key (CMEK)"
            case .customerSupplied: "a customer-supplied key (CSEK)"
            }
        }
    }

    /// One type's enforcement: whether new objects may use it, and since when they may not.
    public struct EncryptionEnforcement: Codable, Sendable, Equatable {
        /// `FullyRestricted`: no new object may be encrypted this way; `NotRestricted`: any may.
        public var fullyRestricted: Bool
        /// When the restriction took effect; nil while not restricted (as the service answers it).
        public var effectiveTime: Timestamp?

        public init(fullyRestricted: Bool, effectiveTime: Timestamp?) {
            self.fullyRestricted = fullyRestricted
            self.effectiveTime = effectiveTime
        }
    }

    /// The encryption types new objects may not use.
    public var restrictedEncryption: Set<EncryptionType> {
        Set((encryptionEnforcement ?? [:]).filter { $0.value.fullyRestricted }.keys)
    }

    /// The settings of a bucket made at `time`, as the service gives a new bucket when nothing is asked for.
    public init(madeAt time: Timestamp, madeByServer: Bool = false) {
        metageneration = 1
        timeCreated = time
        updated = time
        location = "US-CENTRAL1"
        locationType = "region"
        storageClass = "STANDARD"
        rpo = "DEFAULT"
        labels = [:]
        kept = [:]
        uniformBucketLevelAccess = false
        publicAccessPrevention = "inherited"
        self.madeByServer = madeByServer
    }

    /// The settings kept as given, by the name the JSON API gives them.
    public static let keptFields = ["cors", "lifecycle", "website", "logging", "billing"]

    /// The longest retention period the service takes: 3,155,760,000 seconds (100 years).
    public static let longestRetentionPeriod: Int64 = 3_155_760_000
}

/// Where a bucket keeps its settings (a bucket file does; a remote bucket's are the service's).
extension BucketSettings {
    /// Whether these are a new bucket's settings, the times and count of changes aside: nothing was asked of it.
    public var areANewBucketsSettings: Bool {
        var new = BucketSettings(madeAt: timeCreated, madeByServer: madeByServer)
        (new.metageneration, new.updated) = (metageneration, updated)
        return self == new
    }

    /// Refuses an object's own retention (`object`'s, when named) where the bucket's settings do not enable object
    /// retention (nil: none stored), as the service does: it is chosen when the bucket is made (rule M9).
    public static func refuseObjectRetention(of object: String?, under settings: BucketSettings?) throws(StorageError) {
        guard settings?.objectRetentionEnabled != true else { return }
        let which = object.map { " (\(MessageText.name($0)) was not given one)" } ?? ""
        throw .invalidArgument(
            "Object retention is not enabled on this bucket\(which): a bucket made with enableObjectRetention=true takes one (rule M9). Nothing was changed."
        )
    }
}

public protocol BucketSettingsStore: AnyObject {
    /// The stored settings; nil when none were ever stored (a bucket file made before they were kept).
    func storedSettings() throws -> BucketSettings?
    func storeSettings(_ settings: BucketSettings) throws
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(microseconds: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(microseconds)
    }
}
