import Foundation
import StoreshCore

/// Cloud Storage's own fields in a bucket file (rule M9): holds that keep an object from being deleted or overwritten,
/// and what the bucket's settings give every new object (its default storage class, a default event-based hold),
/// kept beside the settings (`storeSettings`) so that a write reads two rows, not the settings' JSON.
extension LocalBucket {
    static let defaultStorageClassKey = "default_storage_class"
    static let defaultEventBasedHoldKey = "default_event_based_hold"
    static let retentionSecondsKey = "retention_seconds"
    /// The encryption types new objects may not use (`BucketSettings.restrictedEncryption`), comma-separated.
    static let restrictedEncryptionKey = "restricted_encryption"

    /// Refuses a new object encrypted in a way the bucket's encryption enforcement restricts, as the service does (a
    /// 412 on its APIs): one with a customer-supplied key where those are restricted, one without where
    /// Google-managed encryption is.
    func refuseRestrictedEncryption(of fields: CloudStorageFields, name: String) throws {
        guard let text = try BucketSchema.readInfo(Self.restrictedEncryptionKey, connection: connection), !text.isEmpty
        else { return }
        let restricted = Set(
            text.split(separator: ",").compactMap { BucketSettings.EncryptionType(rawValue: String($0)) })
        let type: BucketSettings.EncryptionType = fields.customerKeySHA256 == nil ? .googleManaged : .customerSupplied
        guard restricted.contains(type) else { return }
        throw StorageError(
            .preconditionFailed,
            "gs://\(self.name) restricts new objects' encryption (encryption.\(type.rawValue) is FullyRestricted): \(MessageText.name(name)) would use \(type.described). Nothing was written."
        )
    }

    /// Refuses to delete or overwrite an object that a hold, its own retention or the bucket's retention policy keeps
    /// (rule M9), as the service does (403 on its APIs).
    func refuseIfProtected(_ metadata: ObjectMetadata?, _ change: HeldChange) throws {
        guard var metadata else { return }
        // A held object is refused whatever the policy: the policy is read only for one that is not.
        if !metadata.cloudStorage.isHeld, let period = try retentionPeriod() {
            metadata.cloudStorage.retentionExpirationTime = Self.retentionExpiration(of: metadata, period: period)
        }
        try metadata.refuseIfProtected(change, now: options.clock.now())
    }

    /// `objects` with the time the bucket's retention policy lets each go, as the service answers it
    /// (`retentionExpirationTime`); as they are without a policy. One read of the policy for all.
    public func withRetentionExpiration(_ objects: [ObjectMetadata]) throws(StorageError) -> [ObjectMetadata] {
        try read {
            guard !objects.isEmpty, let period = try retentionPeriod() else { return objects }
            return objects.map { object in
                var object = object
                object.cloudStorage.retentionExpirationTime = Self.retentionExpiration(of: object, period: period)
                return object
            }
        }
    }

    /// The bucket's retention period in seconds; nil without a policy.
    func retentionPeriod() throws -> Int64? {
        guard let seconds = Int64(try BucketSchema.readInfo(Self.retentionSecondsKey, connection: connection) ?? ""),
            seconds > 0
        else {
            return nil
        }
        return seconds
    }

    /// When a retention policy of `period` seconds lets `object` go: its creation plus the period (the end of time
    /// when that is past what a timestamp holds).
    static func retentionExpiration(of object: ObjectMetadata, period seconds: Int64) -> Timestamp {
        let (period, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (end, past) = object.timeCreated.microseconds.addingReportingOverflow(period)
        return Timestamp(microseconds: overflowed || past ? .max : end)
    }

    /// A new object's fields: those given, contexts made now; its storage class the bucket's default when none is given, set now; an
    /// event-based hold when the bucket puts one on every new object.
    func newObjectFields(_ given: CloudStorageFields, now: Timestamp) throws -> CloudStorageFields {
        var fields = given
        // Contexts given with a write are made by it.
        for key in fields.contexts.keys {
            fields.contexts[key]?.createTime = now
            fields.contexts[key]?.updateTime = now
        }
        if fields.storageClass == nil {
            fields.storageClass = try BucketSchema.readInfo(Self.defaultStorageClassKey, connection: connection)
        }
        // STANDARD, the service's default, is kept as no class (objects written before classes were kept have none).
        if fields.storageClass == CloudStorageFields.defaultStorageClass { fields.storageClass = nil }
        if fields.storageClass == nil {
            fields.timeStorageClassUpdated = nil
        } else if fields.timeStorageClassUpdated == nil {
            fields.timeStorageClassUpdated = now
        }
        if try BucketSchema.readInfo(Self.defaultEventBasedHoldKey, connection: connection) == "on" {
            fields.eventBasedHold = true
        }
        return fields
    }

    /// Records what the settings give every write (inside the change that stores them).
    func storeWriteDefaults(_ settings: BucketSettings) throws {
        try storeVersioning(settings.versioning == true)
        try BucketSchema.writeInfo(Self.defaultStorageClassKey, settings.storageClass, connection: connection)
        try BucketSchema.writeInfo(
            Self.defaultEventBasedHoldKey, settings.defaultEventBasedHold == true ? "on" : "off", connection: connection
        )
        try BucketSchema.writeInfo(
            Self.retentionSecondsKey, String(settings.retentionPeriod ?? 0), connection: connection)
        try BucketSchema.writeInfo(
            Self.restrictedEncryptionKey, settings.restrictedEncryption.map(\.rawValue).sorted().joined(separator: ","),
            connection: connection)
        guard storesNoncurrent else {
            if (settings.softDeleteSeconds ?? 0) > 0 {
                throw StorageError.invalidArgument(
                    "\(path) is open for reading only: its soft delete policy cannot be set.")
            }
            return
        }
        try BucketSchema.writeInfo(
            Self.softDeleteSecondsKey, String(settings.softDeleteSeconds ?? 0), connection: connection)
    }
}
