import Foundation

/// Cloud Storage's own fields of an object (rule M9) as the JSON API's object resource writes them, and storesh's
/// metadata document too (`CloudStorageFields.jsonMembers` writes both): the one place they are read back.
public struct CloudStorageFieldsDocument: Decodable, Sendable {
    struct Retention: Decodable, Sendable {
        var mode: String?
        var retainUntilTime: String?
    }

    struct Context: Decodable, Sendable {
        var value: String?
        var createTime: String?
        var updateTime: String?
    }

    struct Contexts: Decodable, Sendable {
        var custom: [String: Context]?
    }

    struct Encryption: Decodable, Sendable {
        var keySha256: String?
    }

    var customTime: String?
    var temporaryHold: Bool?
    var eventBasedHold: Bool?
    var storageClass: String?
    var timeStorageClassUpdated: String?
    var componentCount: JSONInteger?
    var contexts: Contexts?
    var customerEncryption: Encryption?
    var acl: JSONValue?
    var retention: Retention?
    var retentionExpirationTime: String?
    var softDeleteTime: String?
    var hardDeleteTime: String?

    /// The names of the members it reads.
    public static let memberNames: [String] = CodingKeys.allCases.map(\.rawValue)

    /// The members it reads, by name.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case customTime, temporaryHold, eventBasedHold, storageClass, timeStorageClassUpdated, componentCount, contexts
        case customerEncryption, acl, retention, retentionExpirationTime, softDeleteTime, hardDeleteTime
    }

    /// The fields; nil when one is malformed (a time that is not RFC 3339, a retention or context without its
    /// members). STANDARD is no storage class, and the class's time is kept only with another.
    public var fields: CloudStorageFields? { try? checkedFields() }

    /// The fields, or an error naming the member that is malformed and what it must be.
    public func checkedFields() throws(StorageError) -> CloudStorageFields {
        var fields = CloudStorageFields()
        func time(_ text: String?, _ member: String) throws(StorageError) -> Timestamp? {
            guard let text else { return nil }
            guard let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument("\"\(member)\" must be an RFC 3339 time such as 2026-11-21T09:30:00.000Z.")
            }
            return time
        }
        fields.customTime = try time(customTime, "customTime")
        fields.softDeleteTime = try time(softDeleteTime, "softDeleteTime")
        fields.hardDeleteTime = try time(hardDeleteTime, "hardDeleteTime")
        fields.retentionExpirationTime = try time(retentionExpirationTime, "retentionExpirationTime")
        let classTime = try time(timeStorageClassUpdated, "timeStorageClassUpdated")
        fields.temporaryHold = temporaryHold ?? false
        fields.eventBasedHold = eventBasedHold ?? false
        if let storageClass, storageClass != CloudStorageFields.defaultStorageClass {
            fields.storageClass = storageClass
            fields.timeStorageClassUpdated = classTime
        }
        fields.componentCount = componentCount?.value
        if let retention {
            guard let mode = retention.mode.flatMap(ObjectRetention.Mode.init(rawValue:)) else {
                throw .invalidArgument("\"retention\" must have a \"mode\", Unlocked or Locked.")
            }
            guard let until = retention.retainUntilTime.flatMap(Timestamp.init(rfc3339:)) else {
                throw .invalidArgument("\"retention\" must have a \"retainUntilTime\", an RFC 3339 time.")
            }
            fields.retention = ObjectRetention(mode: mode, retainUntilTime: until)
        }
        for (key, context) in contexts?.custom ?? [:] {
            guard let value = context.value, let created = context.createTime.flatMap(Timestamp.init(rfc3339:)),
                let changed = context.updateTime.flatMap(Timestamp.init(rfc3339:))
            else {
                throw .invalidArgument(
                    "\"contexts\": the context \"\(MessageText.oneLine(key))\" must have a \"value\", a \"createTime\" and an \"updateTime\" (RFC 3339 times)."
                )
            }
            fields.contexts[key] = ObjectContext(value: value, createTime: created, updateTime: changed)
        }
        fields.customerKeySHA256 = customerEncryption?.keySha256
        // Kept as its text, keys in byte order (as JSONValue reads them): one list, one text.
        if let acl {
            guard case .array = acl else { throw .invalidArgument("\"acl\" must be a list of access controls.") }
            fields.acl = acl.serialized
        }
        return fields
    }
}

/// A whole number as JSON writes it in these APIs: a string of digits (the JSON API's int64s) or a number.
public struct JSONInteger: Decodable, Sendable, Equatable {
    public var value: Int64

    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let number = try? single.decode(Int64.self) {
            value = number
        } else if let number = Int64(try single.decode(String.self)) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(in: single, debugDescription: "not a whole number of 64 bits")
        }
    }
}
