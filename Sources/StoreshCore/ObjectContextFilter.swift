/// A listing's `filter` on object contexts (rule M9), as the JSON API takes it: `contexts."KEY"="VALUE"` (the object
/// has the context KEY with that value), `contexts."KEY":*` (it has the context KEY), each negated by a leading `-`.
/// Keys and values are compared as their bytes, and hold no double quote.
public struct ObjectContextFilter: Sendable, Equatable {
    public var key: String
    /// Nil: any value (`:*`).
    public var value: String?
    public var negated: Bool

    /// The forms, as an error lists them.
    public static let forms = #"contexts."KEY"="VALUE", contexts."KEY":* or either negated with a leading -"#

    public init(parsing text: String) throws(StorageError) {
        var rest = Substring(text)
        negated = rest.hasPrefix("-")
        if negated { rest = rest.dropFirst() }
        func quoted() -> String? {
            guard rest.hasPrefix("\""), let end = rest.dropFirst().firstIndex(of: "\"") else { return nil }
            let inside = String(rest[rest.index(after: rest.startIndex)..<end])
            rest = rest[rest.index(after: end)...]
            return inside
        }
        let malformed = StorageError.invalidArgument(
            "Invalid filter '\(text)': storesh serve filters listings by \(Self.forms).")
        guard rest.hasPrefix("contexts.") else { throw malformed }
        rest = rest.dropFirst("contexts.".count)
        guard let key = quoted(), !key.isEmpty else { throw malformed }
        self.key = key
        if rest == ":*" {
            value = nil
        } else if rest.hasPrefix("=") {
            rest = rest.dropFirst()
            guard let value = quoted(), rest.isEmpty else { throw malformed }
            self.value = value
        } else {
            throw malformed
        }
    }

    /// Whether the object passes.
    public func admits(_ object: ObjectMetadata) -> Bool {
        let context = object.cloudStorage.contexts.first { NameBytes.sameBytes($0.key, key) }?.value
        let matches = context.map { found in value.map { NameBytes.sameBytes(found.value, $0) } ?? true } ?? false
        return matches != negated
    }
}
