// In-process benchmarks of the local bucket, driven by scripts/bench.
//
//   storesh-bench generate FILE USERS PHOTOS [U7]  an archive of users/uNNNNN/photos/NNN.jpg objects
//                                                  (user u00007 gets U7 photos, so small buckets have a full folder)
//   storesh-bench generate-bucket FILE USERS PHOTOS  the same objects straight into a new bucket file, a
//                                                  thousand users per transaction (10,000,000 objects without
//                                                  an archive of gigabytes in between)
//   storesh-bench pages BUCKET [REPEATS]         median time of pages of 100 at several references, and peak RSS
//   storesh-bench first-page BUCKET PATH COUNT   open the bucket and list one page (run as a cold process)
//   storesh-bench script FILE LINES              write a script of LINES varied commands
//   storesh-bench parse FILE [REPEATS]           median time to parse a script, in process
//   storesh-bench complete BUCKET [REPEATS]      median time of Tab completions, in process
//   storesh-bench bulk BUCKET RULES|none         the bulk meta set script in process, under RULES or none
//   storesh-bench decide RULES|open [REPEATS]    median time of one rules decision: an update of a photo, as the
//                                                bulk script asks it, with the request built as the bucket builds it
//                                                (open: the rules of a new bucket)
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("storesh-bench: \(message)\n".utf8))
    exit(2)
}

func generate(file: String, users: Int, photos: Int, photosOfUser7: Int) throws {
    guard FileManager.default.createFile(atPath: file, contents: nil),
        let handle = FileHandle(forWritingAtPath: file)
    else { fail("cannot write \(file)") }
    var buffer = "{\"format\":\"storesh-bucket\",\"version\":1,\"bucket\":\"bench\",\"objects\":[\n"
    var first = true
    for user in 0..<users {
        for photo in 0..<(user == 7 ? photosOfUser7 : photos) {
            if !first { buffer += ",\n" }
            first = false
            let name = String(format: "users/u%05d/photos/%03d.jpg", user, photo)
            let cache = photo.isMultiple(of: 2) ? "public, max-age=3600" : "no-cache"
            buffer += "{\"name\":\"\(name)\",\"cacheControl\":\"\(cache)\",\"text\":\"photo \(photo) of user \(user)\"}"
        }
        if buffer.utf8.count > 1 << 20 {
            handle.write(Data(buffer.utf8))
            buffer = ""
        }
    }
    buffer += "\n]}\n"
    handle.write(Data(buffer.utf8))
    try handle.close()
}

/// The objects `generate` describes, imported a thousand users at a time: memory holds one chunk, and each chunk is
/// one transaction of the bucket's own import (so every row is as a real import makes it, checksums included).
func generateBucket(file: String, users: Int, photos: Int) throws {
    guard access(file, F_OK) != 0 else { fail("\(file) exists already") }
    let bucket = try LocalBucket.open(at: file, options: LocalBucketOptions(nameForNewBucket: "bench"))
    defer { bucket.close() }
    let chunk = 1000
    for first in stride(from: 0, to: users, by: chunk) {
        var objects: [ArchivedObject] = []
        objects.reserveCapacity(chunk * photos)
        for user in first..<min(users, first + chunk) {
            for photo in 0..<photos {
                let name = try ObjectName(String(format: "users/u%05d/photos/%03d.jpg", user, photo))
                let cache = photo.isMultiple(of: 2) ? "public, max-age=3600" : "no-cache"
                objects.append(
                    ArchivedObject(
                        name: name, content: Data("photo \(photo) of user \(user)".utf8),
                        properties: [.cacheControl: cache]))
            }
        }
        try bucket.importObjects(objects, replacingEverything: false)
        FileHandle.standardError.write(Data("\r\(min(users, first + chunk) * photos) objects".utf8))
    }
    FileHandle.standardError.write(Data("\n".utf8))
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count.isMultiple(of: 2)
        ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
}

func peakResidentMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024  // Linux reports KiB
}

/// The median time, in microseconds, of one page of `maxResults` under `path` (optionally from a token).
func pageMicroseconds(
    _ bucket: LocalBucket, _ path: String, token: String? = nil, repeats: Int
) throws -> (Double, ListPage) {
    var samples: [Double] = []
    var page = ListPage()
    for _ in 0..<repeats {
        let start = DispatchTime.now().uptimeNanoseconds
        page = try bucket.listPage(
            StoragePath(normalizing: path), options: ListOptions(maxResults: 100, pageToken: token))
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
    return (median(samples), page)
}

func pages(bucketPath: String, repeats: Int) throws {
    let bucket = try LocalBucket.open(at: bucketPath, options: LocalBucketOptions(createIfMissing: false))
    let count = try bucket.objectCount()
    // Resuming from a token after the first 50 prefixes of users/ (both buckets have 100 or more).
    let token = try bucket.listPage(StoragePath(normalizing: "users"), options: ListOptions(maxResults: 50))
        .nextPageToken
    let cases: [(String, String, String?)] = [
        ("root", "", nil),
        ("users/ (collapses to prefixes)", "users", nil),
        ("users/ after a token at entry 50", "users", token),
        ("users/u00007/photos/ (items)", "users/u00007/photos", nil),
    ]
    print("objects\t\(count)")
    for (label, path, token) in cases {
        let (micros, page) = try pageMicroseconds(bucket, path, token: token, repeats: repeats)
        print(
            "page\t\(label)\t\(String(format: "%.1f", micros))\tµs\t\(page.prefixes.count + page.items.count) entries")
    }
    // Page through the whole of users/ (every prefix), then report the process's peak memory.
    var all: String?
    var entries = 0
    repeat {
        let page = try bucket.listPage(
            StoragePath(normalizing: "users"), options: ListOptions(maxResults: 100, pageToken: all))
        entries += page.prefixes.count + page.items.count
        all = page.nextPageToken
    } while all != nil
    print("walk\tusers/\t\(entries)\tentries")
    print("rss\t\(String(format: "%.1f", peakResidentMiB()))\tMiB")
}

/// Snapshots of a large bucket: each round saves one, changes 1,000 objects spread over the bucket (one
/// transaction), saves another, diffs the two and the first against now, and restores the first.
/// Prints the median of each step, in milliseconds.
func snapshots(bucketPath: String, rounds: Int) throws {
    let bucket = try LocalBucket.open(at: bucketPath, options: LocalBucketOptions(createIfMissing: false))
    let count = try bucket.objectCount()
    // 1,000 objects spread over the bucket: the first of every (count / 1000)-th group of names.
    var spread: [ObjectName] = []
    var after: String?
    while spread.count < 1000 {
        let page = try bucket.scanPage(prefix: "", after: after, limit: max(1, count / 1000))
        guard let first = page.objects.first, let last = page.objects.last else { break }
        spread.append(try ObjectName(first.fullPath))
        after = last.fullPath
    }
    var times: [String: [Double]] = [:]
    func timed<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try body()
        times[label, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        return result
    }
    let semaphore = DispatchSemaphore(value: 0)
    for round in 0..<rounds {
        _ = try timed("save (1M objects)") { try bucket.saveSnapshotNow(named: "a\(round)") }
        var update = MetadataUpdate()
        try update.set("custom.round", to: String(round))
        let objects = spread
        let shared = bucket
        Task {
            try await shared.withTransaction(forWriting: true) { transaction -> TransactionOutcome<Void> in
                for object in objects {
                    _ = try await transaction.updateMetadata(of: object, update, ifMetagenerationMatch: nil)
                }
                return .commit(())
            }
            semaphore.signal()
        }
        semaphore.wait()
        _ = try timed("save after 1,000 changes") { try bucket.saveSnapshotNow(named: "b\(round)") }
        let between = try timed("diff two snapshots (1,000 differ)") {
            try bucket.changesNow(from: .snapshot("a\(round)"), to: .snapshot("b\(round)"))
        }
        guard between.count == objects.count else { fail("diff found \(between.count) changes, not \(objects.count)") }
        _ = try timed("diff a snapshot against now") {
            try bucket.changesNow(from: .snapshot("a\(round)"), to: .current)
        }
        let restored = try timed("restore (1,000 objects back)") { try bucket.restoreSnapshotNow(named: "a\(round)") }
        guard restored.count == objects.count else { fail("restore changed \(restored.count) objects") }
        _ = try timed("rm both snapshots") {
            _ = try bucket.removeSnapshotNow(named: "a\(round)")
            _ = try bucket.removeSnapshotNow(named: "b\(round)")
        }
    }
    print("objects\t\(count)\trounds\t\(rounds)")
    for label in [
        "save (1M objects)", "save after 1,000 changes", "diff two snapshots (1,000 differ)",
        "diff a snapshot against now", "restore (1,000 objects back)", "rm both snapshots",
    ] {
        print(String(format: "%@\t%.1f\tms (median)", label, median(times[label] ?? [])))
    }
}

/// An import split into its phases: reading and checking the archive, then writing the bucket.
func importPhases(archive: String, bucketPath: String) throws {
    var start = DispatchTime.now().uptimeNanoseconds
    func lap(_ label: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        print("phase\t\(label)\t\(String(format: "%.2f", Double(now - start) / 1e9))\ts")
        start = now
    }
    guard let data = FileManager.default.contents(atPath: archive) else { fail("cannot read \(archive)") }
    lap("read file")
    let contents = try BucketArchive.parse(data, source: archive)
    lap("parse and check")
    let bucket = try LocalBucket.open(at: bucketPath)
    try bucket.importObjects(contents.objects, replacingEverything: true)
    lap("write bucket")
    bucket.close()
    lap("checkpoint and close")
    print("rss\t\(String(format: "%.1f", peakResidentMiB()))\tMiB")
}

/// A script of `lines` commands of every kind, quoting and patterns included.
func writeScript(file: String, lines: Int) throws {
    let templates = [
        "cd users/u%05d/photos", "ls -n 100 users/u%05d/photos", "meta get users/u%05d/photos/001.jpg",
        "meta set cacheControl=\"public, max-age=%d\" custom.batch=b%d -- users/u%05d/photos/*.jpg",
        "meta unset custom.stale contentLanguage -- 'users/u%05d/photos/0[0-4]?.jpg'",
        "echo 'line %d' \"of the \\\"benchmark\\\"\" # a comment",
        "put --data 'hello %d' --content-type text/plain notes/%d.txt",
        "ls --token AQh0ZWFjaGluZw -l /users/u%05d", "rm notes/%d.txt ; pwd",
    ]
    var text = "#!/usr/bin/env -S storesh run\n"
    for line in 0..<lines {
        let template = templates[line % templates.count]
        text +=
            template.replacingOccurrences(of: "%05d", with: String(format: "%05d", line % 10000))
            .replacingOccurrences(of: "%d", with: String(line)) + "\n"
    }
    try Data(text.utf8).write(to: URL(fileURLWithPath: file))
}

func parseScript(file: String, repeats: Int) throws {
    guard let data = FileManager.default.contents(atPath: file) else { fail("cannot read \(file)") }
    var samples: [Double] = []
    var commands = 0
    for _ in 0..<repeats {
        let start = DispatchTime.now().uptimeNanoseconds
        let script = try Parser.check(ScriptText(Array(data)))
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        commands = script.summary.statementCount
    }
    print("parse\t\(commands) commands\t\(String(format: "%.1f", median(samples)))\tms (median of \(repeats))")
}

/// Tab completion on a large bucket: each must read one page at most and answer at once.
func completions(bucketPath: String, repeats: Int) throws {
    let bucket = try LocalBucket.open(at: bucketPath, options: LocalBucketOptions(createIfMissing: false))
    let cases: [(String, String)] = [
        ("cd users/u0500", ""), ("cd u", "users"), ("meta get users/u09999/photos/0", ""),
        ("meta set custom.", "users/u00007/photos/001.jpg"), ("ls users/", ""),
    ]
    for (line, current) in cases {
        var samples: [Double] = []
        var count = 0
        for _ in 0..<repeats {
            let start = DispatchTime.now().uptimeNanoseconds
            count =
                Completer(source: bucket, current: StoragePath(normalizing: current)).complete(line).candidates.count
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        print("complete\t\(line)\t\(String(format: "%.0f", median(samples)))\tµs\t\(count) candidates")
    }
}

/// The bulk-edit benchmark's script, run in process with the rules of a file in force, or no rules at all.
func bulk(bucketPath: String, rulesFile: String) async throws {
    let bucket = try LocalBucket.open(at: bucketPath, options: LocalBucketOptions(createIfMissing: false))
    defer { bucket.close() }
    var rules: RulesSession?
    if rulesFile != "none" {
        let session = try RulesSession(store: nil)
        try session.loadRules(
            source: String(contentsOfFile: rulesFile, encoding: .utf8), origin: rulesFile, into: bucket)
        session.identity = Identity(uid: "bench")
        rules = session
    }
    final class Silent: SessionOutput {
        func result(_ line: String) {}
        func resultBytes(_ bytes: Data) {}
        func error(_ diagnostic: Diagnostic) { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
        func notice(_ text: String) {}
    }
    struct NoFiles: LocalFiles {
        func read(_ path: String) throws(StorageError) -> Data { Data() }
        func readDocument(_ path: String) throws(StorageError) -> Data { Data() }
        func write(_ data: Data, to path: String) throws(StorageError) {}
        func isDirectory(_ path: String) -> Bool { false }
    }
    let script = try Parser.parse(
        SourceText(
            name: "bulk",
            text: "meta set cacheControl=\"public, max-age=60\" custom.reviewed=yes -- users/u00???/photos/*"))
    let interpreter = Session(bucket: bucket, output: Silent(), files: NoFiles())
    interpreter.rules = rules
    let status = await interpreter.run(script)
    guard status == .success else { fail("the bulk script failed") }
}

/// The cost of one decision the bulk script asks for, request building included, apart from everything else.
func decisions(rulesFile: String, repeats: Int) throws {
    final class MemoryRules: RulesStore {
        var rules: (source: String, origin: String)?
        func storedRules() throws -> (source: String, origin: String)? { rules }
        func storeRules(source: String, origin: String) throws { rules = (source, origin) }
    }
    let rules = try RulesSession(store: nil)
    if rulesFile != "open" {
        try rules.loadRules(
            source: String(contentsOfFile: rulesFile, encoding: .utf8), origin: rulesFile, into: MemoryRules())
    }
    rules.identity = Identity(uid: "bench")
    var update = MetadataUpdate()
    try update.set("cacheControl", to: "public, max-age=60")
    try update.set("custom.reviewed", to: "yes")
    let objects = try (0..<1000).map { index in
        let now = SystemClock().now()
        let name = try ObjectName(String(format: "users/u%05d/photos/%03d.jpg", index / 100, index % 100))
        let before = ObjectMetadata.newObject(
            bucket: "bench", name: name, content: Array("photo \(index)".utf8), generation: 1, now: now,
            properties: [.cacheControl: "no-cache"])
        return (before, try before.applying(update, now: now).metadata)
    }
    var samples: [Double] = []
    for _ in 0..<repeats {
        let start = DispatchTime.now().uptimeNanoseconds
        for (before, after) in objects {
            let decision = rules.decide(
                AccessRequest(
                    method: .update, bucket: "bench", path: before.fullPath, time: after.updated,
                    newResource: ObjectSnapshot(after), existingResource: ObjectSnapshot(before)))
            guard decision.allowed else { fail("the rules denied \(before.fullPath)") }
        }
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(objects.count) / 1000)
    }
    print(String(format: "one decision: %.2f µs (median of %d runs of %d)", median(samples), repeats, objects.count))
}

func firstPage(bucketPath: String, path: String, count: Int) throws {
    let bucket = try LocalBucket.open(at: bucketPath, options: LocalBucketOptions(createIfMissing: false))
    let page = try bucket.listPage(StoragePath(normalizing: path), options: ListOptions(maxResults: count))
    print(page.prefixes.count + page.items.count)
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "generate":
        guard arguments.count == 4 || arguments.count == 5, let users = Int(arguments[2]),
            let photos = Int(arguments[3])
        else { fail("usage: generate FILE USERS PHOTOS [PHOTOS_OF_U00007]") }
        let photosOfUser7 = arguments.count == 5 ? Int(arguments[4]) ?? photos : photos
        try generate(file: arguments[1], users: users, photos: photos, photosOfUser7: photosOfUser7)
    case "generate-bucket":
        guard arguments.count == 4, let users = Int(arguments[2]), let photos = Int(arguments[3]) else {
            fail("usage: generate-bucket FILE USERS PHOTOS")
        }
        try generateBucket(file: arguments[1], users: users, photos: photos)
    case "pages":
        guard arguments.count >= 2 else { fail("usage: pages BUCKET [REPEATS]") }
        try pages(bucketPath: arguments[1], repeats: arguments.count > 2 ? Int(arguments[2]) ?? 200 : 200)
    case "import-phases":
        guard arguments.count == 3 else { fail("usage: import-phases ARCHIVE BUCKET") }
        try importPhases(archive: arguments[1], bucketPath: arguments[2])
    case "script":
        guard arguments.count == 3, let lines = Int(arguments[2]) else { fail("usage: script FILE LINES") }
        try writeScript(file: arguments[1], lines: lines)
    case "parse":
        guard arguments.count >= 2 else { fail("usage: parse FILE [REPEATS]") }
        try parseScript(file: arguments[1], repeats: arguments.count > 2 ? Int(arguments[2]) ?? 20 : 20)
    case "snapshots":
        guard arguments.count == 3, let rounds = Int(arguments[2]) else { fail("usage: snapshots BUCKET ROUNDS") }
        try snapshots(bucketPath: arguments[1], rounds: rounds)
    case "complete":
        guard arguments.count >= 2 else { fail("usage: complete BUCKET [REPEATS]") }
        try completions(bucketPath: arguments[1], repeats: arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50)
    case "bulk":
        guard arguments.count == 3 else { fail("usage: bulk BUCKET RULES|none") }
        try await bulk(bucketPath: arguments[1], rulesFile: arguments[2])
    case "decide":
        guard arguments.count >= 2 else { fail("usage: decide RULES [REPEATS]") }
        try decisions(rulesFile: arguments[1], repeats: arguments.count > 2 ? Int(arguments[2]) ?? 200 : 200)
    case "first-page":
        guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: first-page BUCKET PATH COUNT") }
        try firstPage(bucketPath: arguments[1], path: arguments[2], count: count)
    default:
        fail("usage: storesh-bench generate|pages|first-page …")
    }
} catch {
    fail("\(error)")
}
