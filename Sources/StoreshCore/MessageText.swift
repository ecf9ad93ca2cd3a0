import Foundation

/// Text put into messages and human output.
public enum MessageText {
    /// Items as a sentence lists them: "a", "a and b", "a, b and c" (nothing for none).
    public static func listed(_ items: [String]) -> String {
        guard let last = items.last else { return "" }
        return items.count == 1 ? last : items.dropLast().joined(separator: ", ") + " and " + last
    }

    /// Seconds as people say them: "7 days", "36 hours", "90 minutes", "45 seconds".
    public static func duration(seconds: Int64) -> String {
        if seconds != 0 && seconds % 86_400 == 0 { return counted(Int(seconds / 86_400), "day") }
        if seconds != 0 && seconds % 3_600 == 0 { return counted(Int(seconds / 3_600), "hour") }
        if seconds != 0 && seconds % 60 == 0 { return counted(Int(seconds / 60), "minute") }
        return counted(Int(clamping: seconds), "second")
    }

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

    /// A request's path and query as people read them in a log: the escapes of names decoded (`photos%2Fver%C3%A3o.jpg`
    /// reads `photos/verão.jpg`), and marked `(not NFC)` when a name decoded is not composed (rule P7). An escape
    /// stays one when what it stands for would change how the line is read: a space, a control or format
    /// character, a character of the URL's own syntax (`?`, `#`, `&`, `=`, `+`, `%`), or bytes that are not UTF-8.
    public static func readableTarget(_ target: String) -> String {
        let bytes = Array(target.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return target }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var decodedAny = false
        var index = 0
        while index < bytes.count {
            // A run of escapes, decoded together: a character's UTF-8 bytes are several escapes.
            var run: [UInt8] = []
            var end = index
            while end + 2 < bytes.count, bytes[end] == UInt8(ascii: "%"), let high = hex(bytes[end + 1]),
                let low = hex(bytes[end + 2])
            {
                run.append(high << 4 | low)
                end += 3
            }
            guard !run.isEmpty else {
                output.append(bytes[index])
                index += 1
                continue
            }
            // Each character of the run decoded when it is UTF-8 and reads as itself; the rest keep their escapes.
            var position = 0
            while position < run.count {
                let lead = run[position]
                let length =
                    lead < 0x80 ? 1 : lead >> 5 == 0b110 ? 2 : lead >> 4 == 0b1110 ? 3 : lead >> 3 == 0b11110 ? 4 : 1
                let character =
                    position + length <= run.count
                    ? String(validating: run[position..<(position + length)], as: UTF8.self) : nil
                if let character, let scalar = character.unicodeScalars.first, Self.readsAsItself(scalar) {
                    output += run[position..<(position + length)]
                    decodedAny = true
                    position += length
                } else {
                    // Not a character, or not one to show as itself: its first byte stays escaped.
                    output += bytes[(index + 3 * position)..<(index + 3 * position + 3)]
                    position += 1
                }
            }
            index = end
        }
        let text = String(decoding: output, as: UTF8.self)
        return decodedAny && !isComposed(text) ? text + " (not NFC)" : text
    }

    /// Whether a decoded character can stand in a log line for itself (see `readableTarget`).
    private static func readsAsItself(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "/-._~!$'()*,;:@".unicodeScalars.contains(scalar)
        }
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse,
            .unassigned:
            return false
        default: return true
        }
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
    public static func counted(_ count: Int, _ noun: String) -> String {
        "\(grouped(count)) \(noun)\(count == 1 ? "" : "s")"
    }

    /// `1 prefix`, `2 prefixes`: a noun whose plural is not its singular and an s.
    public static func counted(_ count: Int, _ singular: String, _ plural: String) -> String {
        "\(grouped(count)) \(count == 1 ? singular : plural)"
    }

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
