import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules
import StoreshTestSupport
import Testing

@testable import StoreshLanguage

/// Dry runs are plans (rule X1): computed from what was read and the pure update rules, printed, never sent.
@Suite("Dry runs are plans, on a bucket without transactions")
struct PlanTests {
    /// Runs `text` on a memory bucket (no transactions: each change would land at once).
    func run(
        _ text: String, on bucket: MemoryBucket, dryRun: Bool = true, json: Bool = false
    ) async throws
        -> (status: Session.Status, output: CapturedOutput)
    {
        let files = MemoryFiles()
        files.files["photo.jpg"] = Data("jpeg".utf8)
        files.files["open.rules"] = Data(
            "rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /{all=**} { allow read; } } }\n"
                .utf8)
        let output = CapturedOutput()
        let interpreter = Session(
            bucket: bucket, output: output, files: files, options: RunOptions(json: json, dryRun: dryRun))
        interpreter.rules = try RulesSession(store: bucket)
        return (await interpreter.run(try Parser.parse(SourceText(name: "t", text: text))), output)
    }

    func seeded() async throws -> MemoryBucket {
        let bucket = MemoryBucket()
        bucket.seed(["docs/a.txt", "docs/b.txt", "images/x.jpg"])
        _ = try await bucket.saveSnapshot(named: "start")
        try await bucket.delete(ObjectName("docs/b.txt"), precondition: .none)
        return bucket
    }

    @Test(
        "a dry run of every changing command sends no change",
        arguments: [
            "put --data hello notes/new.txt", "put photo.jpg images/", "rm docs/a.txt", "rm 'docs/*'", "rm docs/*",
            "meta set cacheControl=no-cache -- docs/a.txt", "meta set contentLanguage=fr -- **",
            "meta unset contentType -- images/*", "meta unset custom docs/a.txt",
            "snapshot save before", "snapshot restore start", "snapshot rm start", "rules load open.rules",
        ])
    func noChangeSent(_ text: String) async throws {
        let (status, output) = try await dryRunSendsNothing(text)
        // Only the quoted pattern names a missing object; everything else plans.
        #expect(status == (text == "rm 'docs/*'" ? .failed : .success), "\(text): \(output.errors)")
        if status == .success { #expect(output.lines.last == "dry run: nothing was saved") }
    }

    /// The examples `help` shows of the commands that change a bucket, as a dry run: none sends a change. The
    /// bucket holds the objects they name.
    @Test(
        "a dry run of each changing command's example sends no change",
        arguments: CommandCatalog.commands.filter(\.changesBucket).map(\.example))
    func examplesSendNothingInADryRun(_ example: String) async throws {
        _ = try await dryRunSendsNothing(
            example, alsoHolding: ["images/forest.jpg", "images/mountains/summit.jpg", "files/uid/report.json"])
    }

    /// Runs `text` as a dry run on the seeded bucket (and `names`) and checks that nothing reached the bucket.
    private func dryRunSendsNothing(
        _ text: String, alsoHolding names: [String] = []
    ) async throws -> (Session.Status, CapturedOutput) {
        let bucket = try await seeded()
        bucket.seed(names)
        let requestsBefore = bucket.changeRequests
        let namesBefore = bucket.names
        let (status, output) = try await run(text, on: bucket)
        #expect(bucket.changeRequests == requestsBefore, "\(text): \(output.lines)")
        #expect(bucket.names == namesBefore)
        #expect(try bucket.storedRules() == nil)
        #expect(try await bucket.snapshots().map(\.name) == ["start"])
        return (status, output)
    }

    @Test("a plan sees its own earlier changes: put, then meta set and cat on the new object, then rm")
    func laterCommandsSeeThePlan() async throws {
        let bucket = try await seeded()
        let (status, output) = try await run(
            "put --data fresh notes/n.txt\nmeta set custom.k=v -- notes/*\ncat notes/n.txt\nls notes\nrm notes/n.txt\nls notes",
            on: bucket)
        #expect(status == .success, "\(output.errors)")
        #expect(output.bytes == Data("fresh".utf8))
        #expect(output.lines.contains("would write notes/n.txt (5 B, text/plain)"))
        #expect(output.lines.contains("  custom.k  (not set)  →  \"v\""))
        #expect(output.lines.contains("n.txt"), "the planned object is listed")
        #expect(output.lines.contains("(nothing under gs://memory/notes)"), "and gone after the planned rm")
        #expect(bucket.changeRequests == ["snapshot save start", "delete docs/b.txt"], "only the seed's own")
    }

    @Test("a planned listing pages with its own tokens, and a page of the real bucket goes on as it was")
    func plannedPaging() async throws {
        let bucket = try await seeded()
        let (status, output) = try await run(
            "ls -n 1\nput --data 1 notes/a\nput --data 2 notes/b\nput --data 3 notes/c\npage next\nls -n 2 notes\npage next",
            on: bucket)
        #expect(status == .success, "\(output.errors)")
        let listed = output.lines.filter {
            !$0.hasPrefix("#") && !$0.hasPrefix("would") && !$0.hasPrefix("…") && !$0.hasPrefix("dry run")
        }
        // The root's first page came from the bucket before anything was planned: its next page is the bucket's.
        #expect(listed == ["docs/", "images/", "a", "b", "c"], "\(output.lines)")
        #expect(output.errors.isEmpty)
    }

    @Test("a snapshot saved in a dry run can be listed and restored in it, not diffed; nothing is stored")
    func plannedSnapshot() async throws {
        let bucket = try await seeded()
        let script =
            "put --data 1 n/a\nmeta set contentType=x/y -- docs/*\nsnapshot save mid\nput --data 2 n/b\nrm n/a\nsnapshot list\nsnapshot restore mid\nls n\ncat n/a"
        let (status, output) = try await run(script, on: bucket)
        #expect(status == .success, "\(output.errors)")
        #expect(output.lines.contains { $0.hasPrefix("mid ") }, "the planned snapshot is listed: \(output.lines)")
        #expect(output.lines.contains("would restore snapshot mid: 1 added, 1 removed, 0 changed"), "\(output.lines)")
        #expect(output.lines.contains("a"), "n/a is back in the plan")
        #expect(output.bytes == Data("1".utf8), "with the content the plan gave it")
        #expect(try await bucket.snapshots().map(\.name) == ["start"])
        let (diffStatus, diff) = try await run("snapshot save s2\nsnapshot diff s2", on: bucket)
        #expect(diffStatus == .failed)
        #expect(diff.errors.first?.message.contains("only planned in this dry run") == true)
    }

    @Test("a dry-run restore of a stored snapshot also undoes the plan's own changes")
    func storedRestoreUndoesPlan() async throws {
        let bucket = try await seeded()
        let (status, output) = try await run("put --data new extra.txt\nsnapshot restore start\nls", on: bucket)
        #expect(status == .success, "\(output.errors)")
        #expect(output.lines.contains("extra.txt (removed)"), "\(output.lines)")
        #expect(!output.lines.contains("extra.txt"), "not listed after the planned restore")
    }

    @Test("a planned restore brings back what the snapshot holds, and says so")
    func plannedRestore() async throws {
        let bucket = try await seeded()
        let (status, output) = try await run("snapshot restore start\nls docs", on: bucket)
        #expect(status == .success, "\(output.errors)")
        #expect(output.lines.contains("docs/b.txt (added: 21 B, text/plain)"))
        #expect(output.lines.contains("b.txt"))
    }

    @Test("rule X1: without a dry run, a script on a bucket without transactions is planned whole, then applied")
    func withoutDryRun() async throws {
        let bucket = try await seeded()
        let before = bucket.changeRequests
        let (status, _) = try await run(
            "put --data x n\nmeta set contentType=a/b -- n\nrm missing\nrm n", on: bucket, dryRun: false)
        #expect(status == .failed)
        // The plan stopped at `rm missing`: nothing was sent.
        #expect(!bucket.names.contains("n"))
        #expect(bucket.changeRequests == before)
        let (applied, output) = try await run(
            "put --data x n\nmeta set contentType=a/b -- n", on: bucket, dryRun: false)
        #expect(applied == .success, "\(output.errors)")
        // Applied in the script's order, each change guarded by the state the one before left.
        #expect(bucket.changeRequests.suffix(2) == ["write n", "update n"])
        #expect(try await bucket.metadata(of: ObjectName("n")).contentType == "a/b")
    }
}

@Suite("Dry runs on the local bucket")
struct LocalDryRunTests {
    @Test("a dry run takes no write lock: it plans while another process holds the bucket for writing")
    func noWriteLock() async throws {
        let session = try LanguageSandbox(["a", "b"])
        let holder = try LocalBucket.open(at: session.bucket.path, options: LocalBucketOptions(createIfMissing: false))
        try await holder.withTransaction(forWriting: true) { _ -> TransactionOutcome<Void> in
            let (status, output) = try await session.run(
                "meta set contentType=x/y -- *\nrm a\nput --data n c", json: false, dryRun: true)
            #expect(status == .success, "\(output.errors)")
            #expect(output.lines.contains("would delete a"))
            return .rollback(())
        }
        holder.close()
    }
}

@Suite("Rule B3 and the command table")
struct CommandTableTests {
    @Test("a command the bucket cannot do is refused before anything runs, at its place")
    func unsupportedIsRefusedFirst() async throws {
        /// A bucket without snapshots or rules administration, as a real bucket is.
        final class Plain: BucketLayer, @unchecked Sendable {
            let memory = MemoryBucket()
            var inner: any Bucket { memory }
            var capabilities: BucketCapabilities { [] }
            var transactions: (any TransactionalBucket)? { nil }
            var snapshotStore: (any SnapshotStore)? { nil }
            var rulesStore: (any RulesStore)? { nil }
            var settingsStore: (any BucketSettingsStore)? { nil }
            var objectVersions: (any ObjectVersions)? { nil }
            var objectMoves: (any ObjectMoves)? { nil }
            var immediateReads: (any ImmediateReads)? { nil }
            var endUserSignIn: (any EndUserSignIn)? { nil }
            var batchedChanges: (any BatchedChanges)? { nil }
            var uniformUpdates: (any UniformUpdates)? { nil }
            var asTransaction: (any BucketTransaction)? { nil }
            func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
                try await inner.read(object, into: sink)
            }
            func write(
                from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
            ) async throws -> ObjectMetadata {
                try await inner.write(from: source, to: object, options: options, precondition: precondition)
            }
            func applyMetadata(
                of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
            ) async throws -> ObjectMetadata {
                try await inner.applyMetadata(of: object, from: before, to: after)
            }
            func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
                try await inner.list(reference, options: options)
            }
            func metadata(of object: ObjectName) async throws -> ObjectMetadata { try await inner.metadata(of: object) }
            func updateMetadata(
                of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
            ) async throws -> UpdateResult {
                try await inner.updateMetadata(of: object, update, precondition: precondition)
            }
            func write(
                _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
            ) async throws -> ObjectMetadata {
                try await inner.write(content, to: object, options: options, precondition: precondition)
            }
            func read(_ object: ObjectName) async throws -> Data { try await inner.read(object) }
            func delete(_ object: ObjectName, precondition: Precondition) async throws {
                try await inner.delete(object, precondition: precondition)
            }
            func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
                try await inner.scan(prefix: prefix, after: after, limit: limit)
            }
            func close() {}
        }
        let bucket = Plain()
        let output = CapturedOutput()
        let interpreter = Session(bucket: bucket, output: output, files: MemoryFiles())
        let status = await interpreter.run(
            try Parser.parse(SourceText(name: "t", text: "put --data x a\nls\nsnapshot save s")))
        #expect(status == .usage)
        #expect(
            output.errors.first?.message
                == "`snapshot save` needs a bucket with snapshots; gs://memory has none, so nothing ran.")
        #expect(output.errors.first?.location == SourceLocation(line: 3, column: 1))
        #expect(bucket.memory.changeRequests.isEmpty, "the put before it never ran")
    }

    @Test("every command of the AST has one declaration, and what changes the bucket says so")
    func oneDeclarationEach() throws {
        // Read from the declarations: a new command is in this test by being declared.
        for declaration in CommandCatalog.commands {
            let command = try Parser.parse(SourceText(name: "t", text: declaration.example)).allStatements[0].command
            #expect(command.name == declaration.name)
            #expect(command.changesBucket == declaration.changesBucket, "\(declaration.name)")
        }
        #expect(CommandCatalog.firstWords.first == "cd" && CommandCatalog.firstWords.last == "quit")
        #expect(CommandCatalog.subcommands(of: "meta") == ["get", "set", "unset", "rename", "copy"])
    }
}
