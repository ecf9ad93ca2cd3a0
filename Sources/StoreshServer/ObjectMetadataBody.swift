import Foundation
import StoreshCore

/// The custom metadata key where Firebase keeps an object's download tokens (rule G7).
let downloadTokensKey = ObjectMetadata.downloadTokensKey

/// What a request's JSON body says of an object's writable metadata: an upload's metadata, a PATCH, a copy's
/// overrides. Every name is checked: a read-only property is ignored as the service ignores it, a property storesh
/// does not keep and an unknown name are refused, never dropped silently.
struct ObjectMetadataBody {
    var name: String?
    /// The writable properties and custom metadata the body gives: a value sets one, null unsets it, and
    /// `metadata: null` clears the custom map (rules M4, M5).
    var update = MetadataUpdate()
    var md5Hash: String?
    var crc32c: String?
    /// The storage class the body names: a new object's (an upload, a copy's or rewrite's destination); an update
    /// may only send the object's own back (a class is changed by a rewrite).
    var storageClass: String?
    /// Read-only properties the body gave, with their values as text: an update may send them back unchanged,
    /// but not change them (rule M7).
    var readOnly: [String: String] = [:]

    /// Names the service computes; a client may send them back (a whole resource read earlier), and they are ignored.
    static let readOnlyNames: Set<String> = [
        "kind", "id", "selfLink", "mediaLink", "bucket", "generation", "metageneration", "size", "etag", "timeCreated",
        "updated", "timeStorageClassUpdated", "timeDeleted", "owner", "componentCount", "fullPath", "downloadTokens",
        "contentEncryption", "hardDeleteTime", "softDeleteTime", "timeFinalized", "retentionExpirationTime",
    ]
    /// Properties of the service that storesh does not keep: refused, since accepting them would lose them.
    static let unsupportedNames: Set<String> = [
        "kmsKeyName", "customerEncryption", "restoreToken",
    ]

    init() {}

    /// Reads `body` (a JSON object, or nothing); `what` names it in messages.
    init(json body: Data, what: String) throws {
        let blanks: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
        let trimmed = body.drop { blanks.contains($0) }.reversed().drop { blanks.contains($0) }.reversed()
        // Nothing, or JSON's null, is no resource: the Go client sends a rewrite or copy without overrides so.
        guard !trimmed.isEmpty, !trimmed.elementsEqual("null".utf8) else {
            self.init()
            return
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(body)
        } catch {
            throw HTTPFailure.badRequest("The \(what) is not valid JSON: \(error).")
        }
        try self.init(resource: parsed, what: what)
    }

    /// Reads an object resource already parsed (a compose request's destination).
    init(resource: JSONValue, what: String) throws {
        guard let members = resource.members else { throw HTTPFailure.badRequest("The \(what) must be a JSON object.") }
        for (key, value) in members {
            if let property = WritableProperty(rawValue: key) {
                update.properties[property] = try Self.change(value, field: key)
                continue
            }
            switch key {
            case "name":
                guard let text = value.string else {
                    throw HTTPFailure.badRequest("Invalid value for 'name' in the \(what): it must be a string.")
                }
                name = text
            case "metadata":
                if value.isNull {
                    update.clearsCustomMetadata = true
                    continue
                }
                guard let map = value.members else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'metadata' in the \(what): it must be an object of strings, or null.")
                }
                var changes = update.customMetadata.map { ($0.key, $0.value) }
                for (key, value) in map {
                    if key.isEmpty { throw HTTPFailure.badRequest("Custom metadata keys must not be empty (rule M5).") }
                    changes.append((key, try Self.change(value, field: "metadata.\(key)")))
                }
                // Made in one sort: a body of many keys in any order costs n log n.
                update.customMetadata = ByteKeyedMap(changes)
            case "md5Hash":
                guard let text = value.string, ContentHash.isMD5Base64(text) else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'md5Hash' in the \(what): it must be the base64 of a 16-byte MD5 digest.")
                }
                md5Hash = text
            case "crc32c":
                guard let text = value.string, Data(base64Encoded: text)?.count == 4 else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'crc32c' in the \(what): it must be the base64 of a 4-byte CRC32C.")
                }
                crc32c = text
            case _ where Self.readOnlyNames.contains(key):
                switch value {
                case .string(let text): readOnly[key] = text
                case .integer(let number): readOnly[key] = String(number)
                case .null: break
                default: readOnly[key] = value.serialized
                }
            case "customTime":
                guard let time = value.string.flatMap(Timestamp.init(rfc3339:)) else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'customTime' in the \(what): it must be an RFC 3339 time; once set, it cannot be removed, only moved forward."
                    )
                }
                update.cloudStorage.customTime = time
            case "temporaryHold", "eventBasedHold":
                guard value.isNull || value.bool != nil else {
                    throw HTTPFailure.badRequest("Invalid value for '\(key)' in the \(what): it must be true or false.")
                }
                let hold = value.bool ?? false
                if key == "temporaryHold" {
                    update.cloudStorage.temporaryHold = hold
                } else {
                    update.cloudStorage.eventBasedHold = hold
                }
            case "storageClass":
                guard let text = value.string, StorageClasses.cloudStorage.contains(text.uppercased()) else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'storageClass' in the \(what): it must be one of \(StorageClasses.cloudStorage.names.joined(separator: ", "))."
                    )
                }
                storageClass = text.uppercased()
            case "acl":
                // Checked against the bucket's settings where they are known (ObjectMetadataBody.checkACL).
                switch value {
                case .null: update.cloudStorage.acl = .some(nil)
                case .array: update.cloudStorage.acl = .some(value.serialized)
                default:
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'acl' in the \(what): it must be an array of entries.")
                }
            case "retention":
                update.cloudStorage.retention = .some(try Self.retention(value, what: what))
            case "contexts":
                try readContexts(value, what: what)
                guard update.cloudStorage.contexts.count <= CloudStorageFields.maximumContexts else {
                    throw HTTPFailure.badRequest(
                        "An object has at most \(CloudStorageFields.maximumContexts) contexts, not \(update.cloudStorage.contexts.count)."
                    )
                }
            case _ where Self.unsupportedNames.contains(key):
                throw HTTPFailure.badRequest(
                    "'\(key)' is not supported by storesh serve (rule M9 lists the fields it keeps).")
            default:
                throw HTTPFailure.badRequest(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in the \(what): Cannot find field.")
            }
        }
    }

    /// `contexts: {"custom": {KEY: {"value": VALUE}}}`: a key whose payload (or value) is null is removed; `contexts: null`
    /// or `custom: null` removes them all.
    private mutating func readContexts(_ value: JSONValue, what: String) throws {
        if value.isNull {
            update.cloudStorage.clearsContexts = true
            return
        }
        guard let contexts = value.members else {
            throw HTTPFailure.badRequest("Invalid value for 'contexts' in the \(what): it must be an object.")
        }
        for (key, custom) in contexts {
            guard key == "custom" else {
                throw HTTPFailure.badRequest(
                    "Invalid JSON payload received. Unknown name \"\(key)\" in contexts: Cannot find field.")
            }
            if custom.isNull {
                update.cloudStorage.clearsContexts = true
                continue
            }
            guard let entries = custom.members else {
                throw HTTPFailure.badRequest(
                    "Invalid value for 'contexts.custom' in the \(what): it must be an object of keys.")
            }
            for (name, payload) in entries {
                guard !name.isEmpty, name.utf8.count <= CloudStorageFields.maximumContextBytes,
                    !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
                else {
                    throw HTTPFailure.badRequest(
                        "A context key is 1 to \(CloudStorageFields.maximumContextBytes) bytes, without control characters."
                    )
                }
                if payload.isNull {
                    update.cloudStorage.contexts[name] = .some(nil)
                    continue
                }
                guard payload.members != nil else {
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'contexts.custom.\(name)': it must be an object with a value.")
                }
                switch payload[member: "value"] {
                case nil, .null?: update.cloudStorage.contexts[name] = .some(nil)
                case .string(let text)?:
                    guard text.utf8.count <= CloudStorageFields.maximumContextBytes else {
                        throw HTTPFailure.badRequest(
                            "The value of context \(name) is longer than \(CloudStorageFields.maximumContextBytes) bytes."
                        )
                    }
                    update.cloudStorage.contexts[name] = .some(text)
                default:
                    throw HTTPFailure.badRequest(
                        "Invalid value for 'contexts.custom.\(name).value': it must be a string.")
                }
            }
        }
    }

    /// `retention: {"mode": "Unlocked" | "Locked", "retainUntilTime": RFC3339}`, or null (or a mode of null) for none.
    private static func retention(_ value: JSONValue, what: String) throws -> ObjectRetention? {
        if value.isNull { return nil }
        guard let members = value.members else {
            throw HTTPFailure.badRequest("Invalid value for 'retention' in the \(what): it must be an object.")
        }
        // `retentionExpirationTime` is the service's (the bucket's policy), sent back by clients that resend a resource.
        for (key, _) in members where !["mode", "retainUntilTime", "retentionExpirationTime"].contains(key) {
            throw HTTPFailure.badRequest(
                "Invalid JSON payload received. Unknown name \"\(key)\" in retention: Cannot find field.")
        }
        guard let mode = value[present: "mode"] else { return nil }
        guard let known = mode.string.flatMap(ObjectRetention.Mode.init(rawValue:)) else {
            throw HTTPFailure.badRequest("Invalid value for 'retention.mode' in the \(what): it is Unlocked or Locked.")
        }
        guard let until = value[member: "retainUntilTime"]?.string.flatMap(Timestamp.init(rfc3339:)) else {
            throw HTTPFailure.badRequest(
                "Invalid value for 'retention.retainUntilTime' in the \(what): it must be an RFC 3339 time.")
        }
        return ObjectRetention(mode: known, retainUntilTime: until)
    }

    /// Refuses a retention given for an object in a bucket made without object retention, as the service does.
    /// The settings are read only when the body gives a retention (an upload reads no settings for nothing).
    func refuseRetention(unless settings: @autoclosure () throws -> BucketSettings) throws {
        if case .some(.some) = update.cloudStorage.retention {
            try BucketSettings.refuseObjectRetention(of: name, under: try settings())
        }
    }

    private static func change(_ value: JSONValue, field: String) throws -> PropertyChange {
        switch value {
        case .null: return .unset
        case .string(let text): return .set(text)
        default:
            throw HTTPFailure.badRequest("Invalid value for '\(field)': it must be a string, or null to remove it.")
        }
    }

    /// Refuses a read-only property given with another value than `resource` (the object as this API writes it)
    /// has: such a property is the service's to set (rule M7). One sent back unchanged passes, as clients resend
    /// whole resources.
    func refuseReadOnlyChanges(against resource: JSONValue, object: ObjectMetadata) throws {
        guard case .object(let members) = resource else { return }
        var given = readOnly.filter { Self.checkedReadOnlyNames.contains($0.key) }
        if let md5Hash { given["md5Hash"] = md5Hash }
        if let name { given["name"] = name }
        for (key, value) in given.sorted(by: { $0.key < $1.key }) {
            let current = members.first { $0.0 == key }.flatMap { member -> String? in
                if case .string(let text) = member.1 { return text }
                if case .integer(let number) = member.1 { return String(number) }
                return nil
            }
            guard let current, Self.same(key, value, current) else { throw Self.readOnly(key) }
        }
    }

    /// Whether a read-only value sent back means the one the service has, whatever its spelling: a time in any
    /// RFC 3339 form (gsutil sends `…T11:04:25.215000+00:00` for `…T11:04:25.215Z`), a number as a number or text.
    static func same(_ key: String, _ sent: String, _ current: String) -> Bool {
        if sent == current { return true }
        switch key {
        case "timeCreated", "updated":
            guard let sent = Timestamp(rfc3339: sent), let current = Timestamp(rfc3339: current) else { return false }
            return sent == current
        case "generation", "metageneration", "size":
            guard let sent = Int64(sent.trimmingCharacters(in: .whitespaces)), let current = Int64(current) else {
                return false
            }
            return sent == current
        default:
            return false
        }
    }

    /// The read-only properties an update is held to: the object's identity, version and content. Links, kinds
    /// and the like are sent back as a client saw them (through another host name, say) and mean nothing here.
    static let checkedReadOnlyNames: Set<String> = [
        "bucket", "generation", "metageneration", "size", "md5Hash", "timeCreated", "updated", "etag",
    ]

    private static func readOnly(_ key: String) -> HTTPFailure {
        HTTPFailure(
            .badRequest, reason: "invalid",
            "'\(key)' is read-only: the service sets it, and an update may not change it (rule M7); nothing was changed."
        )
    }

    /// The metadata an upload sets.
    var writeOptions: WriteOptions {
        var options = WriteOptions(expectedMD5: md5Hash)
        for case (let property, .set(let value)) in update.properties { options.properties[property] = value }
        for case (let key, .set(let value)) in update.customMetadata { options.customMetadata[key] = value }
        options.cloudStorage = Self.newObjectFields(update.cloudStorage, storageClass: storageClass)
        return options
    }

    /// The fields a new object starts with when a body gives them (the contexts' times are the write's, set then).
    static func newObjectFields(_ given: CloudStorageFieldsUpdate, storageClass: String?) -> CloudStorageFields {
        var fields = CloudStorageFields()
        fields.customTime = given.customTime
        fields.temporaryHold = given.temporaryHold ?? false
        fields.eventBasedHold = given.eventBasedHold ?? false
        fields.storageClass = storageClass
        if case .some(let acl) = given.acl { fields.acl = acl }
        if case .some(let retention) = given.retention { fields.retention = retention }
        for case (let key, let value?) in given.contexts {
            fields.contexts[key] = ObjectContext(
                value: value, createTime: Timestamp(microseconds: 0), updateTime: Timestamp(microseconds: 0))
        }
        return fields
    }
}

/// A compose request's body (`storage#composeRequest`): its sources, at most 32, and the destination's resource.
struct ComposeRequest {
    struct Source {
        var name: String
        var generation: Int64?
        var ifGenerationMatch: Int64?
    }

    static let maximumSources = 32

    var sources: [Source] = []
    var destination = ObjectMetadataBody()
    /// Whether the sources are deleted once the composite is written, in the same change.
    var deletesSources = false

    init(_ body: Data) throws {
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            throw HTTPFailure.badRequest("The compose request is not valid JSON: \(error).")
        }
        guard let members = document.members else {
            throw HTTPFailure.badRequest("The compose request must be a JSON object.")
        }
        for (key, _) in members where !["kind", "sourceObjects", "destination", "deleteSourceObjects"].contains(key) {
            throw HTTPFailure.badRequest(
                "Invalid JSON payload received. Unknown name \"\(key)\" in the compose request: Cannot find field.")
        }
        guard let list = document[member: "sourceObjects"]?.items, !list.isEmpty else {
            throw HTTPFailure.badRequest(
                "A compose request needs sourceObjects: the objects to join, 1 to \(Self.maximumSources).")
        }
        guard list.count <= Self.maximumSources else {
            throw HTTPFailure.badRequest(
                "The number of source components provided (\(list.count)) exceeds the maximum (\(Self.maximumSources))."
            )
        }
        // Generations as JSON numbers or as strings (the JSON API's int64 habit).
        func generation(_ value: JSONValue?, _ field: String) throws -> Int64? {
            switch value {
            case nil, .null?: return nil
            case .string(let text)? where Int64(text).map({ $0 >= 0 }) == true: return Int64(text)
            case .integer(let number)? where number >= 0: return number
            default:
                throw HTTPFailure.badRequest(
                    "Invalid value for '\(field)' in the compose request: it must be a generation.")
            }
        }
        for (index, source) in list.enumerated() {
            guard let name = source[member: "name"]?.string, !name.isEmpty else {
                throw HTTPFailure.badRequest("sourceObjects[\(index)] of the compose request needs a name.")
            }
            sources.append(
                Source(
                    name: name,
                    generation: try generation(source[member: "generation"], "sourceObjects[\(index)].generation"),
                    ifGenerationMatch: try generation(
                        source[member: "objectPreconditions"]?[member: "ifGenerationMatch"],
                        "sourceObjects[\(index)].objectPreconditions.ifGenerationMatch")))
        }
        if let flag = document[present: "deleteSourceObjects"] {
            guard let flag = flag.bool else {
                throw HTTPFailure.badRequest("deleteSourceObjects in the compose request must be true or false.")
            }
            deletesSources = flag
        }
        if let resource = document[present: "destination"] {
            guard resource.members != nil else {
                throw HTTPFailure.badRequest("The compose request's destination must be an object resource.")
            }
            destination = try ObjectMetadataBody(resource: resource, what: "compose request's destination")
        }
    }
}
