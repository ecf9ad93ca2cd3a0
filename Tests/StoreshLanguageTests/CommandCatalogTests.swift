import Foundation
import StoreshCore
import Testing

@testable import StoreshLanguage

@Suite("The command table: one type per command")
struct CommandCatalogTests {
    @Test("each command's example parses to its own type; words and aliases name one command each")
    func examplesParse() throws {
        var seen = Set<String>()
        for type in CommandCatalog.types {
            let declaration = type.declaration
            for name in [declaration.name] + declaration.aliases {
                #expect(seen.insert(name).inserted, "\(name) is declared twice")
            }
            let parsed = try Parser.parse(SourceText(name: "example", text: declaration.example)).allStatements[0]
                .command
            #expect(parsed.name == declaration.name, "the example of \(declaration.name) parses as \(parsed.name)")
            // Wrapped, an example is two lines, and the first pasted alone is a broken command.
            #expect(
                TerminalCells.width(of: "example: " + declaration.example) <= 80,
                "the example of \(declaration.name) is wider than 80 columns")
            #expect(declaration.usage.hasPrefix(declaration.name), "\(declaration.usage)")
            #expect(
                !declaration.options.contains { !declaration.usage.contains($0) },
                "\(declaration.name)'s usage names its options")
        }
        #expect(CommandCatalog.commands.map(\.name) == CommandCatalog.types.map { $0.declaration.name })
    }

    @Test("help keeps an option table's rows apart while it joins the lines of a sentence")
    func optionRows() {
        let text = CommandCatalog.text(for: ListCommand.declaration)
        for row in ["-n N ", "--all ", "--token T ", "-l ", "-a ", "--soft-deleted "] {
            #expect(
                text.split(separator: "\n").contains { $0.hasPrefix("  " + row) }, "\(row) starts no line of\n\(text)")
        }
        #expect(
            CommandCatalog.paragraphs(["a sentence", "goes on.", "-x  an option", "-y  another"]) == [
                "a sentence goes on.", "-x  an option", "-y  another",
            ])
    }

    @Test("the documentation's command table is the one the declarations make")
    func documentationTable() throws {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/storesh/Documentation.docc/CommandLanguage.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let marker = "<!-- The table below is made from the commands' declarations: CommandCatalog.markdownTable. -->\n"
        let table = text.components(separatedBy: marker).dropFirst().first?.components(separatedBy: "\n\n").first
        #expect(
            table == CommandCatalog.markdownTable,
            "CommandLanguage.md's command table differs from the declarations'; put this one after its marker:\n\(CommandCatalog.markdownTable)"
        )
    }

    @Test("the commands whose words may be patterns are said from their declarations")
    func patternCommands() {
        #expect(
            CommandCatalog.patternCommands
                == "meta get, meta set, meta unset, meta rename, rm, mv and the DEST of meta copy")
    }

    @Test("help and the fuzzer know every command, from its declaration")
    func helpAndFuzzer() {
        for declaration in CommandCatalog.commands {
            #expect(CommandCatalog.overview.contains(declaration.subcommand ?? declaration.name), "\(declaration.name)")
            #expect(CommandCatalog.helpText(for: declaration.name)?.contains(declaration.usage) == true)
        }
    }
}

@Suite("The guide to adding a command")
struct AddingACommandGuideTests {
    @Test("the guide shows Cat.swift as it is")
    func catIsShownAsItIs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let guide = try String(
            contentsOf: root.appendingPathComponent("Sources/storesh/Documentation.docc/AddingACommand.md"),
            encoding: .utf8)
        let file = try String(
            contentsOf: root.appendingPathComponent("Sources/StoreshLanguage/Commands/Cat.swift"), encoding: .utf8)
        let shown = guide.components(separatedBy: "<!-- Cat.swift, shown whole -->\n```swift\n").dropFirst().first?
            .components(separatedBy: "```\n").first
        #expect(shown == file, "AddingACommand.md no longer shows Cat.swift as it is")
    }
}
