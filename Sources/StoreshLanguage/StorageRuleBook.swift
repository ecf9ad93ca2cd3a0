import Foundation

/// The storage rules (P1, L3, G5…) as the documentation catalog's article `StorageRules.md` writes them out, compiled
/// in: `help L3` prints a rule that a message or a test names, and a test checks that every rule cited anywhere in
/// the sources is defined there. The article is the one place a rule is written.
package enum StorageRuleBook {
    /// One rule: its identifier (`L3`), its family's title (`Listing`) and its words, as the article has them.
    package struct Rule: Sendable, Equatable {
        package var identifier: String
        package var family: String
        package var text: String
    }

    /// Every rule, in the article's order.
    package static let rules: [Rule] = parse(String(decoding: PackageResources.StorageRules_md, as: UTF8.self))

    /// The rule named `identifier` (`L3`, `l3`).
    package static func rule(_ identifier: String) -> Rule? {
        let wanted = identifier.uppercased()
        return rules.first { $0.identifier == wanted }
    }

    /// What `help TOPIC` prints for a rule (`L3`) or a family (`L`: each of its rules); nil for anything else.
    package static func helpText(for topic: String) -> String? {
        if let rule = rule(topic) { return "rule \(rule.identifier) (\(rule.family)):\n" + indented(rule.text) }
        let letter = topic.uppercased()
        guard letter.count == 1 else { return nil }
        let family = rules.filter {
            $0.identifier.hasPrefix(letter) && $0.identifier.dropFirst().allSatisfy(\.isNumber)
        }
        guard let first = family.first else { return nil }
        return
            (["rules \(letter) (\(first.family)):"]
            + family.map { "\($0.identifier). " + indented($0.text).dropFirst(2) })
            .joined(separator: "\n")
    }

    private static func indented(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : "  " + $0 }.joined(
            separator: "\n")
    }

    /// Whether a line of the article is part of a paragraph's text: not blank, not a table row, a list item or a
    /// code fence.
    static func continuesParagraph(_ line: Substring) -> Bool {
        !line.isEmpty && !line.hasPrefix("|") && !line.hasPrefix("- ") && !line.hasPrefix("* ")
            && !line.hasPrefix("```")
            && !line.hasPrefix(" ")
    }

    /// Reads the article: a family is a `## Title (L)` heading; a rule a `- **L3.** …` item, with the lines indented
    /// under it (a table, a second paragraph), each paragraph joined into one line. Markdown's emphasis and code marks are left as written: they read
    /// well in a terminal too.
    static func parse(_ article: String) -> [Rule] {
        var rules: [Rule] = []
        var family = ""
        var current: Rule?
        func finish() {
            guard var rule = current else { return }
            while rule.text.hasSuffix("\n") { rule.text.removeLast() }
            rules.append(rule)
            current = nil
        }
        for line in article.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                finish()
                family = String(line.dropFirst(3))
                if let open = family.lastIndex(of: "(") {
                    family = family[..<open].trimmingCharacters(in: .whitespaces)
                }
                continue
            }
            if line.hasPrefix("- **"), let close = line.range(of: ".** ") {
                finish()
                let identifier = String(line[line.index(line.startIndex, offsetBy: 4)..<close.lowerBound])
                current = Rule(identifier: identifier, family: family, text: String(line[close.upperBound...]))
                continue
            }
            guard current != nil else { continue }
            if line.hasPrefix("  ") {
                // A paragraph is kept as one line, wrapped where it is shown (to the terminal's width); a table's
                // rows and list items keep their lines.
                let text = line.dropFirst(2)
                let lastLine = current!.text.split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
                if Self.continuesParagraph(text) && Self.continuesParagraph(lastLine) {
                    current!.text += " " + text
                } else {
                    current!.text += "\n" + text
                }
            } else if line.isEmpty {
                current!.text += "\n"
            } else {
                finish()
            }
        }
        finish()
        return rules
    }
}
