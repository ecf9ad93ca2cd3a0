import Foundation
import StoreshLanguage
import Testing

@Suite("The storage rules, written out in the documentation catalog")
struct StorageRuleBookTests {
    /// The repository's root, from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("every family has its rules, each defined once, with words")
    func everyFamily() {
        let identifiers = StorageRuleBook.rules.map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count, "a rule defined twice")
        for family in ["P", "L", "M", "E", "R", "B", "G", "F", "S", "X", "V", "Q"] {
            #expect(identifiers.contains(family + "1"), "family \(family) has no rule 1")
        }
        #expect(StorageRuleBook.rules.allSatisfy { $0.text.count > 40 && !$0.family.isEmpty })
        #expect(StorageRuleBook.rule("L12")?.text.contains("rules_version") == true)
        #expect(
            StorageRuleBook.rule("M1")?.text.contains("| customMetadata |") == true, "a rule keeps its indented table")
    }

    @Test("help L3 prints the rule, help L its family; help of no rule is nothing")
    func help() {
        let l3 = CommandCatalog.helpText(for: "L3")
        #expect(l3?.hasPrefix("rule L3 (Listing):\n  Names that the SDK could not have made are hidden.") == true)
        #expect(CommandCatalog.helpText(for: "l3") == l3)
        let family = CommandCatalog.helpText(for: "L") ?? ""
        #expect(family.hasPrefix("rules L (Listing):\nL1. "))
        #expect(family.contains("\nL12. "))
        #expect(CommandCatalog.helpText(for: "Z9") == nil && CommandCatalog.helpText(for: "L" + "99") == nil)
    }

    /// Words that look like a rule and are not: `--md5 B64`, and the tests' name for the v0 API's path.
    static let notRules: Set<String> = ["B64", "V0"]

    @Test("every rule cited in the sources, tests, scripts, samples and documentation is defined")
    func everyCitedRuleIsDefined() throws {
        let defined = Set(StorageRuleBook.rules.map(\.identifier))
        // A letter of a family and a number, alone (not in `%E2`, `\u{E9}` or a longer word), or a range `L7–L9`.
        let citation = try NSRegularExpression(
            pattern: #"(?<![%{\w])([PLMERBGFSXVQ])([0-9]{1,2})(?:[–-][PLMERBGFSXVQ]?([0-9]{1,2}))?(?!\w)"#)
        var undefined: [String] = []
        var cited = 0
        for folder in ["Sources", "Tests", "scripts", "samples", "README.md"] {
            for path in files(under: Self.root.appendingPathComponent(folder)) {
                guard let text = try? String(contentsOf: path, encoding: .utf8) else { continue }
                let whole = NSRange(text.startIndex..., in: text)
                for match in citation.matches(in: text, range: whole) {
                    let letter = String(text[Range(match.range(at: 1), in: text)!])
                    let first = Int(text[Range(match.range(at: 2), in: text)!])!
                    let last = Range(match.range(at: 3), in: text).map { Int(text[$0])! } ?? first
                    for number in first...max(first, last) {
                        let identifier = letter + String(number)
                        guard !Self.notRules.contains(identifier) else { continue }
                        cited += 1
                        if !defined.contains(identifier) {
                            undefined.append("\(path.path.dropFirst(Self.root.path.count + 1)): \(identifier)")
                        }
                    }
                }
            }
        }
        #expect(cited > 200, "the scan found the citations")
        #expect(undefined.isEmpty, "cited but not defined in StorageRules.md: \(undefined.prefix(20))")
    }

    private func files(under url: URL) -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [url] }
        let found = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
        return (found?.compactMap { $0 as? URL } ?? []).filter { url in
            ["swift", "py", "md", "store", "json", "rules"].contains(url.pathExtension) || url.pathExtension.isEmpty
        }.filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
    }
}
