import StoreshWire

/// HTML that escapes by default, as the page writes it. The text of a literal is markup (it is storesh's own source
/// code); every value interpolated into it is text, escaped for element content and attribute values alike
/// (`MarkupText.escaped`: `&`, `<`, `>`, `"` and `'`), unless it is itself `HTML` built the same way. A name, a value
/// or a rule from a bucket therefore cannot become markup by being forgotten: there is no way to put a `String` in
/// unescaped.
struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var markup: String

    init(stringLiteral literal: String) {
        markup = literal
    }

    init(stringInterpolation: StringInterpolation) {
        markup = stringInterpolation.markup
    }

    var description: String { markup }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var markup = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            markup.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) {
            markup += literal
        }

        /// Text: escaped.
        mutating func appendInterpolation(_ text: String) {
            markup += MarkupText.escaped(text)
        }

        mutating func appendInterpolation(_ text: Substring) {
            markup += MarkupText.escaped(String(text))
        }

        /// A number (no escaping needed: digits and a sign).
        mutating func appendInterpolation<Number: BinaryInteger>(_ number: Number) {
            markup += String(number)
        }

        /// Markup built the same way.
        mutating func appendInterpolation(_ fragment: HTML) {
            markup += fragment.markup
        }

        /// Fragments one after the other.
        mutating func appendInterpolation(_ fragments: [HTML]) {
            for fragment in fragments { markup += fragment.markup }
        }

        /// A fragment only when `condition` holds.
        mutating func appendInterpolation(_ fragment: HTML, if condition: Bool) {
            if condition { markup += fragment.markup }
        }
    }

    static func += (fragment: inout HTML, next: HTML) {
        fragment.markup += next.markup
    }

    static func + (fragment: HTML, next: HTML) -> HTML {
        var joined = fragment
        joined += next
        return joined
    }

    /// Lines of text, escaped, with a line break between them.
    static func lines(_ text: String) -> HTML {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "\($0)" as HTML }.joined(separator: "<br>")
    }
}

extension Array where Element == HTML {
    func joined(separator: HTML = "") -> HTML {
        var result: HTML = ""
        for (index, fragment) in enumerated() {
            if index > 0 { result += separator }
            result += fragment
        }
        return result
    }
}
