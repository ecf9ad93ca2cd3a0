import Foundation

/// The header in which `storesh serve` says a security rules decision (what `rules why` shows), and from which the
/// shell, on the other end, reads it: the decision's words in printable ASCII, as a header value can carry them.
package enum RulesDecisionHeader {
    /// The header's name.
    package static let name = "X-Storesh-Rules"

    /// The most of a decision's words a header carries (a decision that lists why each of many `allow`s failed
    /// can be long; clients refuse header lines past 64 KiB, and many past 8 KiB).
    package static let maximumBytes = 2048

    /// A decision's words as a header value: the bytes of characters outside printable ASCII, and `%`, as `%XX`;
    /// cut between characters at `maximumBytes`, with `…` (`%E2%80%A6`) saying so.
    package static func value(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            let encoded =
                scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F && scalar != "%"
                ? String(scalar)
                : String(scalar).utf8.map {
                    "%" + String($0 >> 4, radix: 16, uppercase: true) + String($0 & 0xF, radix: 16, uppercase: true)
                }.joined()
            if output.utf8.count + encoded.utf8.count > maximumBytes - 9 { return output + "%E2%80%A6" }
            output += encoded
        }
        return output
    }

    /// The words of a header value `value(_:)` made.
    package static func decision(from value: String) -> String {
        value.removingPercentEncoding ?? value
    }
}
