import ArgumentParser
import StoreshLanguage

/// A command of the command line (the root and each subcommand, a file each in this folder): argument-parser reads
/// its options; `execute` runs it and says how it ended. A run that fails with an error throws it, and
/// `Diagnostics.report` says it and gives its exit status (usage 2, storage 1, interrupted 130), so that no command
/// decides an exit status by throwing one.
protocol StoreshCommand: AsyncParsableCommand {
    func execute() async throws -> Session.Status
}

extension StoreshCommand {
    /// argument-parser's entry, for its own `main()`. storesh does not take it: `Storesh.start` calls `execute`
    /// and leaves with the status itself.
    mutating func run() async throws {
        let status = try await execute()
        if status != .success { throw ExitCode(status.rawValue) }
    }
}
