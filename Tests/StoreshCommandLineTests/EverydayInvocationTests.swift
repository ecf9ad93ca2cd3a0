import ArgumentParser
import Foundation
import StoreshLanguage
import Testing

@testable import storesh

/// The everyday root parse must read exactly what argument-parser reads, and hand everything else to it.
@Suite("The everyday root parse agrees with argument-parser's declaration")
struct EverydayInvocationTests {
    /// What argument-parser makes of `arguments`, as the root command's plain values.
    func declared(_ arguments: [String]) throws -> RootInvocation {
        let command = try Storesh.parseAsRoot(arguments)
        let root = try #require(
            command as? Storesh, "argument-parser read \(arguments) as \(type(of: command)), not the root command")
        return RootInvocation(root)
    }

    /// The names argument-parser's declaration of the root command gives its options (its help dump), without
    /// the ones it adds itself.
    func declaredNames() throws -> Set<String> {
        struct Dump: Decodable {
            struct Command: Decodable { var arguments: [Argument] }
            struct Argument: Decodable {
                struct Name: Decodable {
                    var kind: String
                    var name: String
                }
                var names: [Name]?
            }
            var command: Command
        }
        let dump = try JSONDecoder().decode(Dump.self, from: Data(Storesh._dumpHelp().utf8))
        let names = dump.command.arguments.flatMap { $0.names ?? [] }.map {
            ($0.kind == "short" ? "-" : "--") + $0.name
        }
        return Set(names).subtracting(["--help", "-h", "--version"])
    }

    @Test("It knows every option the root command declares, and no other")
    func namesMatchTheDeclaration() throws {
        #expect(Set(EverydayInvocation.Argument.allCases.map(\.name)) == (try declaredNames()))
    }

    /// A value each option accepts, in the forms argument-parser takes.
    static func sample(_ argument: EverydayInvocation.Argument) -> String {
        switch argument {
        case .parallel: "7"
        case .rate: "500"
        case .batch: "10"
        case .command: "ls -n 100 users"
        case .clock: "2026-11-25T09:00:00Z"
        default: "some value/\(argument.rawValue)"
        }
    }

    @Test("Each option alone, and every option at once, reads as argument-parser reads it")
    func agreesOnEveryOption() throws {
        var cases: [[String]] = [[]]
        for argument in EverydayInvocation.Argument.allCases {
            guard argument.takesValue else {
                cases.append([argument.name])
                continue
            }
            cases.append([argument.name, Self.sample(argument)])
            if argument.name.hasPrefix("--") { cases.append([argument.name + "=" + Self.sample(argument)]) }
        }
        // --plan needs --dry-run: alone it is argument-parser's to refuse (checked below).
        cases = cases.filter { !$0.contains(where: { $0.hasPrefix("--plan") }) }
        cases.append(["--dry-run", "--plan", "fix.plan", "-c", "meta set a=b -- x"])
        // Every option at once, in the declaration's order and in the reverse one.
        func words(_ argument: EverydayInvocation.Argument) -> [String] {
            argument.takesValue ? [argument.name, Self.sample(argument)] : [argument.name]
        }
        cases.append(EverydayInvocation.Argument.allCases.flatMap(words))
        cases.append(EverydayInvocation.Argument.allCases.reversed().flatMap(words))
        for arguments in cases {
            let everyday = try #require(EverydayInvocation.parse(arguments), "\(arguments) was left to argument-parser")
            #expect(everyday == (try declared(arguments)), "\(arguments)")
        }
    }

    @Test(
        "Anything else is left to argument-parser: subcommands, help, version, repeats, unknown or odd words, refused values",
        arguments: [
            ["run", "fix.store"], ["apply", "fix.plan"], ["help"], ["help", "ls"], ["--help"], ["-h"], ["--version"],
            ["-c", "ls", "-c", "cd x"], ["--json", "--json"], ["--bucket", "a", "--bucket=b"], ["--unknown"], ["ls"],
            ["-c"], ["-c", "-x"], ["-cls"], ["--", "-c", "ls"], ["--json=yes"], ["--parallel", "many"],
            ["--parallel", "0"], ["--parallel", "-3"], ["--rate", "0"], ["--rate", "fast"], ["--batch", "101"],
            ["--plan", "fix.plan", "-c", "ls"], ["--dry-run", "--plan="], ["--bucket=", "-c", "ls"],
            ["--generate-completion-script", "bash"], ["--experimental-dump-help"],
        ])
    func leavesTheRestToArgumentParser(_ arguments: [String]) {
        #expect(EverydayInvocation.parse(arguments) == nil)
    }
}

@Suite("The language knows the command line's subcommands")
struct SubcommandListTests {
    /// `storesh -c check` is told to run `storesh check`: the language's list must be the declaration's.
    @Test("CommandCatalog.commandLineSubcommands names Storesh's subcommands, in their order")
    func sameList() {
        #expect(Storesh.configuration.subcommands.map { $0._commandName } == CommandCatalog.commandLineSubcommands)
    }
}
