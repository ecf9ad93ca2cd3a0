import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

struct Import: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Add the objects of a JSON archive, or of a Firebase emulator export, to the bucket, all of them or none.",
        discussion: """
            Objects already in the bucket with the same names are replaced; with --replace, the bucket holds exactly \
            the archive's objects (and noncurrent and soft-deleted generations) afterwards. The archive's bucket \
            settings (versioning, soft delete, retention…) are taken by a new bucket file and with --replace. The \
            archive is checked whole before anything is written. --format firebase reads a directory that `firebase \
            emulators:export` (or --export-on-exit) wrote: contents, metadata, custom metadata, download tokens, \
            generations and times.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp("json, or firebase for the Firebase emulator's export directory.", valueName: "format"))
    var format = ArchiveFormat.json

    @Argument(
        help: ArgumentHelp(
            "The archive to read (- for standard input), or with --format firebase the export's directory.",
            valueName: "file"))
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
            try FirebaseExportImport.load(
                objects, into: bucket, replacingEverything: replace, counting: context.progressMeter)
            Diagnostics.summary(
                FirebaseExportImport.summary(count: objects.count, from: from, into: bucket.name, replace: replace))
            return .success
        }
        let archive = try BucketArchive.parse(try readInputFile(file), source: file)
        let bucket = try context.openLocal()
        // The archive's bucket settings are the bucket's when it has nothing of its own yet (a new bucket file), or
        // when the import replaces everything; otherwise the bucket keeps its own, and the summary says so.
        let isNew = try bucket.objectCount() == 0 && bucket.storedSettings() == nil
        let takesSettings = archive.settings != nil && (replace || isNew)
        try bucket.importObjects(
            archive.objects, replacingEverything: replace,
            settings: takesSettings
                ? { current, now throws(StorageError) in try archive.settings(over: current, now: now) } : nil,
            counting: context.progressMeter)
        var counts = BucketArchive.Exported()
        for object in archive.objects {
            switch object.kind {
            case .live: counts.objects += 1
            case .noncurrent: counts.noncurrent += 1
            case .softDeleted: counts.softDeleted += 1
            }
        }
        var summary =
            replace
            ? "gs://\(bucket.name) now holds exactly the archive's \(counts.described)"
            : "imported \(counts.described) into gs://\(bucket.name)"
        if archive.settings != nil {
            summary +=
                takesSettings
                ? ", with the archive's bucket settings"
                : "; the archive's bucket settings were not applied: a bucket with objects or settings of its own keeps its settings (import --replace takes the archive's)"
        }
        Diagnostics.summary(summary)
        return .success
    }
}
