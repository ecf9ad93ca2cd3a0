import Foundation
import Testing
import StoreshCore
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
            let parsed = try Parser.parse(SourceText(name: "example", text: declaration.example)).statements[0].command
            #expect(parsed.name == declaration.name, "the example of \(declaration.name) parses as \(parsed.name)")
            #expect(declaration.usage.hasPrefix(declaration.name), "\(declaration.usage)")
            #expect(!declaration.options.contains { !declaration.usage.contains($0) }, "\(declaration.name)'s usage names its options")
        }
        #expect(CommandCatalog.commands.map(\.name) == CommandCatalog.types.map { $0.declaration.name })
    }

    @Test("the README's command table names every command")
    func readmeTable() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let table = text.components(separatedBy: "### The command language")[1].components(separatedBy: "\n### ")[0]
        for declaration in CommandCatalog.commands {
            #expect(table.contains("`\(declaration.name)"), "README's command table lacks \(declaration.name)")
        }
    }

    @Test("help and the fuzzer know every command, from its declaration")
    func helpAndFuzzer() {
        for declaration in CommandCatalog.commands {
            #expect(CommandCatalog.overview.contains(declaration.subcommand ?? declaration.name), "\(declaration.name)")
            #expect(CommandCatalog.helpText(for: declaration.name)?.contains(declaration.usage) == true)
        }
    }
}
