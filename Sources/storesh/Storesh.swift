import ArgumentParser
// libedit is linked now so that the set-up (libedit-dev) is settled before the interactive shell uses it.
import CLibEdit
import Foundation
import StoreshCore
import StoreshLocal

let storeshVersion = "0.1.0"

/// Options every command takes.
struct BucketOptions: ParsableArguments {
    @Option(
        name: .long, help: ArgumentHelp("The local bucket file (default: $STORESH_BUCKET, else the default bucket).",
            valueName: "location"))
    var bucket: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Start the clock at this RFC 3339 time and advance 1 ms per change (default: $STORESH_CLOCK, else real time).",
            valueName: "rfc3339"))
    var clock: String?

    func open() throws -> LocalBucket {
        if bucket?.isEmpty == true { throw CommandLineError("--bucket needs the path of a bucket file.") }
        let clock = try makeClock(flag: clock)
        return try BucketLocation.resolve(flag: bucket).open(clock: clock)
    }
}

@main
struct Storesh: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storesh",
        abstract: "A scriptable shell for cloud-storage buckets with the semantics of Cloud Storage for Firebase.",
        discussion: """
            Without a subcommand, storesh opens the bucket and shows its top level. The default bucket lives in \
            $XDG_DATA_HOME/storesh (or ~/.local/share/storesh) and starts as the teaching sample.
            """,
        version: "storesh \(storeshVersion)",
        subcommands: [Export.self, Import.self]
    )

    @OptionGroup var bucketOptions: BucketOptions

    func run() async throws {
        let bucket = try bucketOptions.open()
        let page = try bucket.listPage(.root, options: ListOptions())
        print("gs://\(bucket.name)/  \(try bucket.objectCount()) objects in \(bucket.path)")
        for prefix in page.prefixes { print("  \(prefix)/") }
        for item in page.items { print("  \(item)") }
        if page.nextPageToken != nil { print("  … (more than \(ListOptions.maximumResults) entries)") }
        print("The command language and the interactive shell come in the next versions; see README.md.")
    }

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as StorageError {
            FileHandle.standardError.write(Data("storesh: error: \(error.message) (\(error.code.name))\n".utf8))
            Foundation.exit(1)
        } catch let error as CommandLineError {
            FileHandle.standardError.write(Data("storesh: error: \(error.description)\n".utf8))
            Foundation.exit(2)
        } catch {
            // Help and --version exit 0; every usage error exits 2, as the contract says (not 64).
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                Foundation.exit(0)
            }
            // One error format for every error: `storesh: error: …`.
            let text = message.hasPrefix("Error: ") ? "storesh: error: " + message.dropFirst("Error: ".count) : message
            FileHandle.standardError.write(Data((text + "\n").utf8))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the whole bucket, metadata and content, as readable JSON.",
        discussion: "One object per line, in name order. The file is written whole or not at all.")

    @OptionGroup var bucketOptions: BucketOptions

    @Argument(help: ArgumentHelp("Where to write; - or nothing for standard output.", valueName: "file"))
    var file: String?

    func run() async throws {
        let bucket = try bucketOptions.open()
        guard let file, file != "-" else {
            let output = CheckedOutput(descriptor: STDOUT_FILENO, name: "standard output")
            try BucketArchive.export(bucket) { try output.write($0) }
            try output.flush()
            return
        }
        // Written beside the target and renamed over it, so a failure never leaves half a file.
        let temporary = file + ".partial-\(getpid())"
        let descriptor = Foundation.open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard descriptor >= 0 else {
            throw StorageError(.unknown, "Cannot write \(file): \(String(cString: strerror(errno))).")
        }
        do {
            defer { Foundation.close(descriptor) }
            let output = CheckedOutput(descriptor: descriptor, name: file)
            try BucketArchive.export(bucket) { try output.write($0) }
            try output.synchronize()
            guard rename(temporary, file) == 0 else {
                throw StorageError(.unknown, "Cannot write \(file): \(String(cString: strerror(errno))).")
            }
        } catch {
            unlink(temporary)
            throw error
        }
        FileHandle.standardError.write(Data("exported \(counted(try bucket.objectCount(), "object")) to \(file)\n".utf8))
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add the objects of a JSON archive to the bucket, all of them or none.",
        discussion: """
            Objects already in the bucket with the same names are replaced; with --replace, the bucket holds \
            exactly the archive's objects afterwards. The archive is checked whole before anything is written.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Argument(help: ArgumentHelp("The archive to read; - for standard input.", valueName: "file"))
    var file: String

    @Flag(help: "Remove every object that is not in the archive.")
    var replace = false

    func run() async throws {
        let archive = try BucketArchive.parse(try readInputFile(file), source: file)
        let bucket = try bucketOptions.open()
        try bucket.importObjects(archive.objects, replacingEverything: replace)
        let objects = counted(archive.objects.count, "object")
        let summary =
            replace ? "gs://\(bucket.name) now holds exactly the archive's \(objects)" : "imported \(objects) into gs://\(bucket.name)"
        FileHandle.standardError.write(Data("\(summary)\n".utf8))
    }
}
