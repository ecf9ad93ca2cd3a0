import Foundation

/// Text put into messages and human output.
public enum MessageText {
    /// A name or value as it can be shown on one line: as is, or quoted with escapes when it holds control
    /// characters, so that no object name can split a message or move a terminal's cursor.
    public static func oneLine(_ text: String) -> String {
        // Printable ASCII has no control character: most names are decided without Unicode's tables.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        return text.unicodeScalars.contains { $0.properties.generalCategory == .control } ? text.debugDescription : text
    }

    /// An object name as people read it: `oneLine`, and marked `(not NFC)` when it is not in Unicode's composed
    /// form, so that two names that look alike but are two objects (`café` typed, `café` from a Mac's file name,
    /// rule P7) can be told apart on a screen.
    public static func name(_ text: String) -> String {
        isComposed(text) ? oneLine(text) : oneLine(text) + " (not NFC)"
    }

    /// Whether `text` is in Normalization Form C, by its bytes.
    public static func isComposed(_ text: String) -> Bool {
        // ASCII is its own NFC: most names never reach Foundation.
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        return text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
    }

    /// A size as people read it: `512 B`, `1.2 KiB`, `3.4 MiB`.
    public static func byteCount(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let rounded = (value * 10).rounded() / 10
        return rounded.truncatingRemainder(dividingBy: 1) == 0
            ? "\(Int(rounded)) \(units[unit])" : "\(rounded) \(units[unit])"
    }

    /// `1 object`, `2 objects`, `4,812 objects`.
    public static func counted(_ count: Int, _ noun: String) -> String { "\(grouped(count)) \(noun)\(count == 1 ? "" : "s")" }

    /// A size or a count kept in 64 bits, grouped as `grouped(_:)` groups an `Int`.
    public static func grouped(_ count: Int64) -> String { grouped(Int(count)) }

    /// A count as people read it: digits in groups of three (`4,812`), whatever the locale, so that output is the
    /// same everywhere (transcripts are compared byte for byte).
    public static func grouped(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var output = count < 0 ? "-" : ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { output.append(",") }
            output.append(digit)
        }
        return output
    }
}
