import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

struct Import: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the objects of a JSON archive, or of a Firebase emulator export, to the bucket, all of them or none.",
        discussion: """
            Objects already in the bucket with the same names are replaced; with --replace, the bucket holds             exactly the archive's objects afterwards. The archive is checked whole before anything is written.             --format firebase reads a directory that `firebase emulators:export` (or --export-on-exit) wrote:             contents, metadata, custom metadata, download tokens, generations and times.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp("json, or firebase for the Firebase emulator's export directory.", valueName: "format"))
    var format = ArchiveFormat.json

    @Argument(help: ArgumentHelp("The archive to read (- for standard input), or with --format firebase the export's directory.", valueName: "file"))
    var file: String

    @Flag(help: "Remove every object that is not in the archive.")
    var replace = false

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions)
        if format == .firebase {
            let contents = try FirebaseEmulatorExport.read(directory: file)
            // A new bucket file is named after the export's bucket, as the emulator served it.
            let bucket = try context.openLocal(nameForNewBucket: FirebaseExportImport.bucketName(of: contents))
            let (objects, from) = try FirebaseExportImport.objects(of: contents, for: bucket.name, directory: file)
            try FirebaseExportImport.load(objects, into: bucket, replacingEverything: replace, counting: context.progressMeter)
            Diagnostics.summary(FirebaseExportImport.summary(count: objects.count, from: from, into: bucket.name, replace: replace))
            return .success
        }
        let archive = try BucketArchive.parse(try readInputFile(file), source: file)
        let bucket = try context.openLocal()
        try bucket.importObjects(archive.objects, replacingEverything: replace, counting: context.progressMeter)
        let objects = MessageText.counted(archive.objects.count, "object")
        let summary =
            replace ? "gs://\(bucket.name) now holds exactly the archive's \(objects)" : "imported \(objects) into gs://\(bucket.name)"
        Diagnostics.summary(summary)
        return .success
    }
}

