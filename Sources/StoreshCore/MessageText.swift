/// Text put into messages and human output.
public enum MessageText {
    /// A name or value as it can be shown on one line: as is, or quoted with escapes when it holds control
    /// characters, so that no object name can split a message or move a terminal's cursor.
    public static func oneLine(_ text: String) -> String {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control } ? text.debugDescription : text
    }

    /// `1 object`, `2 objects`.
    public static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}
