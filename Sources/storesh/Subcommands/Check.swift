import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

struct Check: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify a bucket file and report what was found (exit 0 sound, 1 damaged or unreadable).",
        discussion: """
            Checks SQLite's structure of the file, every stored row against its checksum, every object's \
            content (and every version kept for snapshots) against its MD5, and the links between them. \
            It only reads: a damaged file is never changed.
            """)

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions, output: outputOptions)
        let location = try context.location().path
        // A bucket that cannot be opened is for Diagnostics to say (as JSON with --json, exit 1).
        let bucket = try context.openExisting()
        let report = try bucket.verify(counting: context.progressMeter)
        // Rules that cannot be used (kept before storesh bounded them) leave every rules-decided request denied:
        // said here, since only `rules load` or `rules reset` mends them. Read as every session reads them.
        let rulesProblem =
            report.isSound
            ? (try? RulesSession(store: bucket).problem).map { "the stored security rules cannot be used: \($0)" } : nil
        if context.json {
            let document = JSONValue.object([
                ("bucket", .string(location)), ("sound", .bool(report.isSound)),
                ("objects", .integer(Int64(report.objects))),
                ("snapshots", .integer(Int64(report.snapshots))),
                ("keptVersions", .integer(Int64(report.keptVersions))),
                ("noncurrentGenerations", .integer(Int64(report.noncurrentGenerations))),
                ("softDeletedGenerations", .integer(Int64(report.softDeletedGenerations))),
                ("contentBytes", .integer(report.contentBytes)),
                ("problems", .array(report.problems.map { .string($0) })),
                ("unlistedProblems", .integer(Int64(report.unlistedProblems))),
                ("rulesProblem", rulesProblem.map(JSONValue.string) ?? .null),
                ("nameNotes", .array(report.nameNotes.map { .string($0) })),
            ])
            print(document.serialized)
        } else {
            // Noncurrent generations are named only where versioning kept some (rule B5).
            let noncurrent =
                (report.noncurrentGenerations == 0
                    ? "" : ", \(MessageText.counted(report.noncurrentGenerations, "noncurrent generation"))")
                + (report.softDeletedGenerations == 0
                    ? "" : ", \(MessageText.counted(report.softDeletedGenerations, "soft-deleted generation"))")
            let counts =
                "\(MessageText.counted(report.objects, "object"))\(noncurrent), \(MessageText.counted(report.snapshots, "snapshot")), \(MessageText.counted(report.keptVersions, "version")) kept for snapshots, \(MessageText.grouped(Int(report.contentBytes))) bytes of content checked"
            if report.isSound, let rulesProblem {
                printForPeople("\(location): RULES UNUSABLE (\(counts))\n  - \(rulesProblem)")
                printForPeople(
                    "Every request the rules would decide is denied. Replace them: storesh --bucket \(location) -c 'rules reset' (or rules load FILE)."
                )
            } else if report.isSound {
                printForPeople("\(location): sound (\(counts))")
            } else {
                var lines = ["\(location): DAMAGED (\(counts))"] + report.problems.map { "  - " + $0 }
                if report.unlistedProblems > 0 { lines.append("  … and \(report.unlistedProblems) more") }
                lines.append(
                    "storesh will not write to it: restore a copy (storesh backup --bucket COPY \(location)), or export what can still be read."
                )
                printForPeople(lines.joined(separator: "\n"))
            }
            if !report.nameNotes.isEmpty {
                printForPeople(
                    (["Names that Cloud Storage refuses or advises against (rule P7):"]
                        + report.nameNotes.map { "  - " + $0 }).joined(separator: "\n"))
            }
        }
        return report.isSound && rulesProblem == nil ? .success : .failed
    }
}
