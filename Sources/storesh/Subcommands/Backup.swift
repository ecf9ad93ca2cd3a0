import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

struct Backup: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of a bucket file (objects, snapshots and rules), even while it is in use.",
        discussion: """
            SQLite itself makes the copy, from one state of the bucket, while shells, scripts or servers may go on \
            writing to it. The copy is built beside FILE and renamed into place: FILE is the old file or the whole \
            copy. An existing FILE must be a storesh bucket that nothing has open. To restore a copy, back it up \
            over the bucket: storesh backup --bucket copy.bucket my.bucket. (Copying a bucket file with cp is safe \
            only when no storesh has it open.)
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Argument(help: ArgumentHelp("Where to write the copy.", valueName: "file"))
    var file: String

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions)
        let bucket = try context.openExisting()
        try bucket.backup(to: file)
        Diagnostics.notice(
            "backed up gs://\(bucket.name) (\(MessageText.counted(try bucket.objectCount(), "object"))) from \(bucket.path) to \(file)"
        )
        return .success
    }
}
