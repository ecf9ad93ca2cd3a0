import Foundation
import Testing

/// The built `storesh`, run as a user would: arguments, environment and standard input in; status and output out.
struct StoreshProcess {
    struct Result {
        var status: Int32
        /// True when the process was ended by a signal (then `status` is the signal number).
        var killedBySignal: Bool
        var stdout: String
        var stderr: String
    }

    /// `$STORESH_BINARY`, else `storesh` beside the test bundle in the build folder.
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["STORESH_BINARY"], !path.isEmpty { return path }
        let buildFolder = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).deletingLastPathComponent()
        return buildFolder.appendingPathComponent("storesh").path
    }()

    /// A home of its own: data directory, HOME and nothing of the developer's environment.
    let home: String

    init(home: String) {
        self.home = home
    }

    var environment: [String: String] {
        ["HOME": home, "XDG_DATA_HOME": home + "/data", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
    }

    /// Runs storesh; with `stdout`, its standard output is that handle instead of a pipe.
    func run(
        _ arguments: [String], environment extra: [String: String] = [:], stdin: Data? = nil,
        stdout: FileHandle? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        process.environment = environment.merging(extra) { $1 }
        let output = Pipe()
        let errors = Pipe()
        let input = Pipe()
        if let stdout {
            process.standardOutput = stdout
            try output.fileHandleForWriting.close()
        } else {
            process.standardOutput = output
        }
        process.standardError = errors
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a full pipe can never stall the child.
        let stdoutData = OutputBox()
        let readers = DispatchGroup()
        DispatchQueue.global().async(group: readers) {
            stdoutData.data = output.fileHandleForReading.readDataToEndOfFile()
        }
        let stderrData = errors.fileHandleForReading.readDataToEndOfFile()
        readers.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
            stdout: String(decoding: stdoutData.data, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self))
    }
}

/// Output read on another thread; the DispatchGroup's wait orders the write before the read.
private final class OutputBox: @unchecked Sendable {
    var data = Data()
}
