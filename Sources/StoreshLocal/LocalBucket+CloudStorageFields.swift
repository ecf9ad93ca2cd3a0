import Foundation
import StoreshCore

/// Cloud Storage's own fields in a bucket file (rule M9): holds that keep an object from being deleted or overwritten,
/// and what the bucket's settings give every new object (its default storage class, a default event-based hold),
/// kept beside the settings (`storeSettings`) so that a write reads two rows, not the settings' JSON.
extension LocalBucket {
    static let defaultStorageClassKey = "default_storage_class"
    static let defaultEventBasedHoldKey = "default_event_based_hold"

    /// An object under a hold is neither deleted nor overwritten, as on the service (403 on its APIs).
    static func refuseIfHeld(_ object: ObjectMetadata?, _ what: String) throws(StorageError) {
        guard let object, object.cloudStorage.isHeld else { return }
        let hold = object.cloudStorage.temporaryHold ? "a temporary hold" : "an event-based hold"
        throw StorageError(
            .unauthorized, "Object \(MessageText.name(object.fullPath)) is under \(hold) and cannot be \(what) until the hold is removed.")
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
        if fields.storageClass == nil { fields.storageClass = try BucketSchema.readInfo(Self.defaultStorageClassKey, connection: connection) }
        // STANDARD, the service's default, is kept as no class (objects written before classes were kept have none).
        if fields.storageClass == CloudStorageFields.defaultStorageClass { fields.storageClass = nil }
        if fields.storageClass == nil {
            fields.timeStorageClassUpdated = nil
        } else if fields.timeStorageClassUpdated == nil {
            fields.timeStorageClassUpdated = now
        }
        if try BucketSchema.readInfo(Self.defaultEventBasedHoldKey, connection: connection) == "on" { fields.eventBasedHold = true }
        return fields
    }

    /// Records what the settings give every write (inside the change that stores them).
    func storeWriteDefaults(_ settings: BucketSettings) throws {
        try storeVersioning(settings.versioning == true)
        try BucketSchema.writeInfo(Self.defaultStorageClassKey, settings.storageClass, connection: connection)
        try BucketSchema.writeInfo(Self.defaultEventBasedHoldKey, settings.defaultEventBasedHold == true ? "on" : "off", connection: connection)
        guard storesNoncurrent else {
            if (settings.softDeleteSeconds ?? 0) > 0 { throw StorageError.invalidArgument("\(path) is open for reading only: its soft delete policy cannot be set.") }
            return
        }
        try BucketSchema.writeInfo(Self.softDeleteSecondsKey, String(settings.softDeleteSeconds ?? 0), connection: connection)
    }
}
