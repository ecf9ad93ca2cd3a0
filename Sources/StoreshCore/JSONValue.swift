import Foundation

/// A JSON value with ordered object keys, for output whose shape people read and tests compare
/// (`--json` documents, archive lines). Foundation's serialisers do not keep key order.
public indirect enum JSONValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Equal when serialized alike, byte for byte: a value in NFC is not the same value in NFD (Swift's `String ==`
    /// would say so, and a plan's difference would then drop the change).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.serialized.utf8.elementsEqual(rhs.serialized.utf8)
    }

    /// Compact JSON on one line.
    public var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    public func write(to output: inout String) {
        switch self {
        case .string(let text): Self.writeQuoted(text, to: &output)
        case .integer(let number): output += String(number)
        case .bool(let flag): output += flag ? "true" : "false"
        case .null: output += "null"
        case .array(let items):
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                item.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { output += "," }
                Self.writeQuoted(key, to: &output)
                output += ":"
                value.write(to: &output)
            }
            output += "}"
        }
    }

    /// A JSON string literal (RFC 8259): quotes, backslashes and control characters escaped.
    public static func quoted(_ text: String) -> String {
        var output = ""
        writeQuoted(text, to: &output)
        return output
    }

    static func writeQuoted(_ text: String, to output: inout String) {
        output += "\""
        // Most strings (names, dates, hashes) need no escape: appended whole, not a scalar at a time (journals
        // of bulk edits write tens of thousands of metadata documents).
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output += text
            output += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

extension ObjectMetadata {
    /// The metadata document of the contract (`meta get --json`): the read-only properties always, the
    /// writable ones only when set. generation and metageneration are strings, size a number. An S3 object has
    /// `etag` (and `versionId` in a versioned bucket) instead of generations (rule S2).
    public var jsonDocument: JSONValue {
        var members: [(String, JSONValue)] = [("bucket", .string(bucket))]
        if hasGenerations {
            members += [
                ("generation", .string(String(generation))), ("metageneration", .string(String(metageneration))),
            ]
        }
        if let entityTag { members.append(("etag", .string(entityTag))) }
        if let versionID { members.append(("versionId", .string(versionID))) }
        members += [
            ("fullPath", .string(fullPath)),
            ("name", .string(name)),
            ("size", .integer(size)),
            ("timeCreated", .string(timeCreated.rfc3339)),
            ("updated", .string(updated.rfc3339)),
        ]
        // An S3 object uploaded in parts has no MD5 of its content (rule S2).
        if !md5Hash.isEmpty { members.append(("md5Hash", .string(md5Hash))) }
        for property in WritableProperty.allCases {
            if let value = self[property] { members.append((property.rawValue, .string(value))) }
        }
        if !customMetadata.isEmpty {
            members.append(
                ("customMetadata", .object(customMetadata.sortedByKeyBytes.map { ($0.key, .string($0.value)) })))
        }
        // Cloud Storage's own fields (rule M9) and a noncurrent generation's deletion (B5), where there are any.
        members += cloudStorage.documentMembers
        if let timeDeleted { members.append(("timeDeleted", .string(timeDeleted.rfc3339))) }
        return .object(members)
    }
}

extension Dictionary where Key == String {
    /// Entries in the byte order of their keys: a stable order for output.
    public var sortedByKeyBytes: [(key: String, value: Value)] {
        count < 2 ? map { $0 } : sorted { NameBytes.precedes($0.key, $1.key) }
    }
}

/// Reading JSON whose shape is checked member by member (a request's body, a file a user wrote): parsed whole, then
/// asked what each member is.
extension JSONValue {
    /// `data` parsed; a syntax error, or a number with a fraction or beyond 64 bits (none of the documents storesh
    /// reads has one), is `JSONValue.SyntaxError` saying where.
    public static func parse(_ data: Data) throws(SyntaxError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw SyntaxError(description: Self.describe(context))
        } catch {
            throw SyntaxError(description: "\(error)")
        }
    }

    public struct SyntaxError: Error, Sendable, CustomStringConvertible {
        /// What is wrong, without a final full stop: "Unexpected character 'x' around line 1, column 3".
        public var description: String
    }

    private static func describe(_ context: DecodingError.Context) -> String {
        let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
        var text = underlying ?? context.debugDescription
        if !context.codingPath.isEmpty, underlying == nil {
            text +=
                " (at "
                + context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
                + ")"
        }
        while text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// The text of a string; nil for anything else.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The flag of true or false; nil for anything else.
    public var bool: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// A whole number's value; nil for anything else.
    public var integer: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// An object's members, in the order read (by name bytes when parsed); nil for anything else.
    public var members: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// An array's items; nil for anything else.
    public var items: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The member `name` of an object (the last of that name); nil when absent or not an object.
    public subscript(member name: String) -> JSONValue? {
        members?.last { NameBytes.sameBytes($0.0, name) }?.1
    }

    /// The member `name` of an object unless it is absent or null.
    public subscript(present name: String) -> JSONValue? {
        guard let value = self[member: name], !value.isNull else { return nil }
        return value
    }
}

/// Read and written by `JSONDecoder` and `JSONEncoder`, for what a resource keeps as it was given (a bucket's CORS
/// and lifecycle rules). Numbers are whole, as the JSON APIs' are; an object's members come back in byte order of
/// their names (a decoder does not keep the order they were written in).
extension JSONValue: Codable {
    private typealias Key = JSONMemberKey

    public init(from decoder: any Decoder) throws {
        // Strings first, objects last: a probe that fails throws (an error made and dropped), and documents are
        // mostly strings.
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let text = try? single.decode(String.self) {
            self = .string(text)
        } else if let number = try? single.decode(Int64.self) {
            self = .integer(number)
        } else if let flag = try? single.decode(Bool.self) {
            self = .bool(flag)
        } else if let members = try? decoder.container(keyedBy: Key.self) {
            let keys = members.allKeys.sorted { $0.stringValue.utf8.lexicographicallyPrecedes($1.stringValue.utf8) }
            self = .object(try keys.map { ($0.stringValue, try members.decode(JSONValue.self, forKey: $0)) })
        } else if var items = try? decoder.unkeyedContainer() {
            var values: [JSONValue] = []
            while !items.isAtEnd { values.append(try items.decode(JSONValue.self)) }
            self = .array(values)
        } else {
            throw DecodingError.dataCorruptedError(
                in: single, debugDescription: "a number with a fraction or out of 64 bits")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in members { try container.encode(value, forKey: Key(stringValue: key)) }
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .integer(let number):
            var container = encoder.singleValueContainer()
            try container.encode(number)
        case .bool(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }
}

/// A member of a JSON object by its name, whatever it is (a decoder's key for members not known in advance).
public struct JSONMemberKey: CodingKey {
    public var stringValue: String
    public var intValue: Int? { nil }
    public init(stringValue: String) { self.stringValue = stringValue }
    public init(_ name: String) { stringValue = name }
    public init?(intValue: Int) { nil }
}
