// Fuzzes the command language: storesh-fuzz [INPUTS] [SEED]  (default 1,000,000 inputs, a random seed).
// Every 100th accepted script also runs in a dry run against a scratch bucket, which must be unchanged after.
// storesh-fuzz rules [INPUTS] [SEED] fuzzes the security rules' parser and evaluator instead (default 20,000).
import Foundation
import StoreshCore
import StoreshFuzzing
import StoreshLanguage
import StoreshLocal

if CommandLine.arguments.dropFirst().first == "rules" {
    let rest = CommandLine.arguments.dropFirst(2).map { $0 }
    let count = rest.first.flatMap { Int($0.replacingOccurrences(of: ",", with: "")) } ?? 20_000
    let seed = rest.count > 1 ? UInt64(rest[1]) ?? 1 : UInt64.random(in: 1...UInt64.max)
    let start = Date()
    var fuzzer = RulesFuzzer(seed: seed)
    let report = fuzzer.run(inputs: count)
    print("rules, seed \(seed): \(report.inputs) texts in \(String(format: "%.1f", Date().timeIntervalSince(start))) s")
    print(
        "accepted \(report.accepted), refused with a positioned error \(report.rejected), \(report.decisions) decisions"
    )
    print("slowest parse or decision \(String(format: "%.0f", report.slowestMicroseconds)) µs")
    if report.failures.isEmpty {
        print("no crash, no unpositioned refusal, no slow decision")
        exit(0)
    }
    print("FAILURES:")
    for failure in report.failures.prefix(20) { print("  " + failure) }
    exit(1)
}

let arguments = CommandLine.arguments.dropFirst().map { $0 }
let count = arguments.first.flatMap { Int($0.replacingOccurrences(of: ",", with: "")) } ?? 1_000_000
let seed = arguments.count > 1 ? UInt64(arguments[1]) ?? 1 : UInt64.random(in: 1...UInt64.max)

let directory = NSTemporaryDirectory() + "storesh-fuzz-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let bucket = try LocalBucket.open(
    at: directory + "/fuzz.bucket", options: LocalBucketOptions(busyTimeoutMilliseconds: 100))
let seedObjects = ["a", "a/b", "a//b", "images/forest.jpg", "images/x/y.png", "lonelyItem/", "é/ü"]
try bucket.importObjects(
    seedObjects.map { ArchivedObject(name: try ObjectName($0), content: Data($0.utf8), customMetadata: ["k": "v"]) },
    replacingEverything: false)

/// Local files for put (made up) and get (which a dry run must never write).
struct NoFiles: LocalFiles {
    func read(_ path: String) throws(StorageError) -> Data { Data("local file \(path)".utf8) }
    func readDocument(_ path: String) throws(StorageError) -> Data { try read(path) }
    func write(_ data: Data, to path: String) throws(StorageError) {
        throw StorageError(.internalError, "a dry run wrote the local file \(path)")
    }
    func isDirectory(_ path: String) -> Bool { false }
}

func fuzz() async throws -> ScriptFuzzer.Report {
    let check = try DryRunCheck(bucket: bucket, files: NoFiles())
    var fuzzer = ScriptFuzzer(seed: seed) { await check($0) }
    return await fuzzer.run(inputs: count, interpretEvery: 100)
}

let start = Date()
let report = try await fuzz()
let seconds = Date().timeIntervalSince(start)
print(
    "seed \(seed): \(report.inputs) inputs in \(String(format: "%.1f", seconds)) s (\(Int(Double(report.inputs) / seconds))/s)"
)
print(
    "accepted \(report.accepted), rejected with a positioned error \(report.rejected), interpreted in a dry run \(report.interpreted)"
)
print("slowest parse \(String(format: "%.0f", report.slowestParseMicroseconds)) µs")
if report.failures.isEmpty {
    print("no crash, no hang, no unpositioned error, no change from a dry run")
} else {
    print("FAILURES:")
    for failure in report.failures { print("  " + failure) }
    exit(1)
}
