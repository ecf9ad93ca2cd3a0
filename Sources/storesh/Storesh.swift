import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal

let storeshVersion = "0.1.0"

/// The process's entry: synchronous, so that a local script can run on the main thread alone
/// (`ThisThreadExecutor`); everything else waits for Swift's executors.
@main
enum StoreshProcess {
    static func main() { Storesh.start() }
}

struct Storesh: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "storesh",
        abstract: "A scriptable shell for cloud-storage buckets with the semantics of Cloud Storage for Firebase.",
        // Written out: no subcommand is needed (a prompt, -c, standard input), which the generated usage would
        // show as a required <subcommand>.
        usage: """
            storesh [--bucket <location>] [--json] [--clock <rfc3339>] [--quiet] [--trace] [--dry-run] [--summary] [--keep-going]
            storesh [OPTIONS] -c <text>
            storesh [OPTIONS] run <file> [--echo] [--explain] [--snapshot <name>] [--resume <journal>]
            storesh [OPTIONS] --dry-run --plan <file> -c <text>      (then: storesh apply <file>)
            storesh <subcommand> [ARGUMENTS]      (see SUBCOMMANDS below; storesh help <subcommand>)
            """,
        discussion: """
            On a terminal storesh opens a prompt; with -c TEXT, `run FILE`, or a script on standard input, it runs \
            the script and exits. On a bucket file a script is one transaction: all its changes land, or none. On \
            gs://NAME (Google Cloud Storage, Firebase) a script is planned, then applied with preconditions, in \
            parallel, with a journal (run --resume JOURNAL finishes it, undo JOURNAL puts it back). A dry run's plan \
            can be kept (--dry-run --plan FILE) and applied later as reviewed (storesh apply FILE). Type `help` at \
            the prompt (or storesh -c help) for the commands; s3://NAME buckets work the same way.

            The default bucket lives in $XDG_DATA_HOME/storesh (or ~/.local/share/storesh) and starts as the \
            teaching sample. Exit status: 0 everything ran, 1 a command failed, 2 usage or syntax error \
            (nothing ran), 130 interrupted.
            """,
        version: "storesh \(storeshVersion)",
        subcommands: [
            Run.self, Apply.self, Undo.self, Copy.self, Reset.self, Serve.self, Check.self, Backup.self, Export.self,
            Import.self,
        ]
    )

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Option(name: .customShort("c"), help: ArgumentHelp("Run TEXT as a script, then exit.", valueName: "text"))
    var command: String?

    @OptionGroup var planOptions: PlanOptions

    func execute() async throws -> Session.Status {
        try await RootInvocation(self).run()
    }

    /// Every way out: the buckets this process opened are closed first, so that each is left as one file
    /// (SQLite folds the log into it and removes it) and no later process replays a log.
    static func leave(_ status: Int32) -> Never {
        OpenBuckets.shared.closeAll()
        Foundation.exit(status)
    }

    /// Reads the arguments once, runs what they ask, and leaves with its exit status: the status a command
    /// returns, or the one `Diagnostics` gives the error it throws.
    static func start() -> Never {
        // Large transient buffers (the chunks of a streamed upload or download) are mapped and given back when
        // freed, instead of glibc's moving threshold keeping them in the heap: memory stays near one chunk.
        storesh_map_large_buffers()
        let arguments = ProcessArguments.current.words
        // `storesh help listAll`, `storesh help meta set`: the language's help, where no subcommand has that name
        // (argument-parser's own `help` would print the overview and say nothing of the topic).
        if arguments.count > 1, arguments[0] == "help",
            !configuration.subcommands.contains(where: { $0._commandName == arguments[1] })
        {
            let topic = arguments.dropFirst().joined(separator: " ")
            guard let text = CommandCatalog.helpText(for: topic) else {
                leave(
                    Diagnostics.report(
                        UsageError(
                            "storesh help \(topic): no subcommand, command or topic has that name; storesh --help lists the subcommands, storesh -c help the commands."
                        )))
            }
            printForPeople(text)
            leave(0)
        }
        if let everyday = EverydayInvocation.parse(arguments) {
            if everyday.runsOnThisThread {
                leave(ThisThreadExecutor.run { await exitStatus { try await everyday.run() } })
            }
            leave(waitingForSwiftsExecutors { await exitStatus { try await everyday.run() } })
        }
        leave(
            waitingForSwiftsExecutors {
                await exitStatus {
                    var command = try parseAsRoot(arguments)
                    if let storeshCommand = command as? any StoreshCommand { return try await storeshCommand.execute() }
                    // argument-parser's own commands (`help SUBCOMMAND`) end by throwing what Diagnostics reports.
                    try command.run()
                    return .success
                }
            })
    }

    /// The exit status of `body`: the status it returns, or its error's (reported).
    static func exitStatus(_ body: () async throws -> Session.Status) async -> Int32 {
        do {
            return try await body().rawValue
        } catch {
            return Diagnostics.report(error)
        }
    }
}

/// What the root command was asked (the prompt, or a script from -c or standard input, with the root's options),
/// as plain values: argument-parser's `Storesh` and the everyday parse (`EverydayInvocation`) both make one, and
/// this runs it.
struct RootInvocation: Equatable {
    var context = RunContext()
    /// `-c TEXT`.
    var command: String?

    init() {}

    init(_ root: Storesh) {
        context = RunContext(
            bucket: root.bucketOptions, output: root.outputOptions, apply: root.applyOptions, plan: root.planOptions)
        command = root.command
    }

    /// A script (`-c`, standard input) on a local bucket file: it awaits nothing but SQLite, and runs on the main
    /// thread alone (`ThisThreadExecutor`).
    var runsOnThisThread: Bool {
        guard command != nil || isatty(STDIN_FILENO) == 0,
            let location = try? BucketLocation.resolve(flag: context.bucket), case .file = location.kind
        else { return false }
        return true
    }

    func run() async throws -> Session.Status {
        if let command {
            // argument-parser keeps the last of a repeated option: a script given twice would run one and drop one.
            let given = ProcessArguments.current.occurrences(ofOption: "-c")
            if given > 1 {
                throw UsageError(
                    "-c is given \(given) times; give one script, its commands on separate lines or separated by ; (-c 'pwd; ls'). Nothing was run."
                )
            }
            // Swift's arguments replace invalid UTF-8 with U+FFFD: the bytes as given are decoded instead, so that
            // a bad byte is a positioned error, as it is in a script file.
            let bytes = ProcessArguments.current.rawValue(ofOption: "-c") ?? Array(command.utf8)
            return try await runScript(named: "-c", bytes: ScriptText(bytes), in: context) { try await context.open() }
        }
        if isatty(STDIN_FILENO) == 0 {
            return try await runScript(named: "-", bytes: standardInputScript(), in: context) {
                try await context.open()
            }
        }
        if context.plan != nil {
            throw UsageError(
                "--plan keeps the plan of a script (-c TEXT, run FILE or standard input), not of the prompt's lines.")
        }
        let shell = try Shell(
            context: context, opened: try await context.open(), historyPath: BucketLocation.historyPath())
        return await shell.run()
    }
}
