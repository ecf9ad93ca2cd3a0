import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

/// The layouts `storesh export` writes and `storesh import` reads.
enum ArchiveFormat: String, ExpressibleByArgument, CaseIterable {
    /// storesh's own archive: one JSON file, one object per line.
    case json
    /// The Firebase Storage emulator's export directory (firebase-tools' `--import DIR`, `--export-on-exit DIR`).
    case firebase
}

struct Export: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the whole bucket, metadata and content, as readable JSON or as a Firebase emulator export.",
        discussion: """
            json (the default): the bucket's settings, then one object per line, in name order, then its noncurrent \
            and soft-deleted generations; the file is written whole or not at all. firebase: a directory as \
            `firebase emulators:export` writes it (firebase-export-metadata.json, storage_export/ with buckets.json, \
            blobs/ and metadata/), for `firebase emulators:start --import DIR`; only storage_export/ and the storage \
            entry of firebase-export-metadata.json are written (rule V9): the other emulators' exports and any other \
            file in the directory are left as they are.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp("json, or firebase for the Firebase emulator's export directory.", valueName: "format"))
    var format = ArchiveFormat.json

    @Argument(help: ArgumentHelp("Where to write; - or nothing for standard output (json only).", valueName: "file"))
    var file: String?

    func validate() throws {
        if format == .firebase, file == nil || file == "-" {
            throw ValidationError(
                "--format firebase writes a directory: give it, e.g. storesh export --format firebase ./emulator-data")
        }
    }

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions)
        let bucket = try context.openLocal()
        if format == .firebase, let file {
            let leftOut = try FirebaseEmulatorExport.write(bucket, to: file, counting: context.progressMeter)
            Diagnostics.summary(
                "exported \(MessageText.counted(try bucket.objectCount(), "object")) of gs://\(bucket.name) to \(file) (firebase emulators:start --only storage --import \(file) reads it)"
            )
            if let said = leftOut.described { Diagnostics.warning(said) }
            return .success
        }
        guard let file, file != "-" else {
            let output = CheckedOutput(descriptor: STDOUT_FILENO, name: "standard output")
            try BucketArchive.export(bucket) { try output.write($0) }
            try output.flush()
            return .success
        }
        var exported = BucketArchive.Exported()
        try writeFileAtomically(file) { output in
            exported = try BucketArchive.export(bucket, counting: context.progressMeter) { try output.write($0) }
        }
        Diagnostics.summary("exported \(exported.described) to \(file)")
        return .success
    }
}
