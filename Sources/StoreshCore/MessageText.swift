/// Text put into messages and human output.
public enum MessageText {
    /// A name or value as it can be shown on one line: as is, or quoted with escapes when it holds control
    /// characters, so that no object name can split a message or move a terminal's cursor.
    public static func oneLine(_ text: String) -> String {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control } ? text.debugDescription : text
    }

    /// `1 object`, `2 objects`, `4,812 objects`.
    public static func counted(_ count: Int, _ noun: String) -> String { "\(grouped(count)) \(noun)\(count == 1 ? "" : "s")" }

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
