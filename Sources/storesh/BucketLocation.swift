import Foundation
import StoreshCore
import StoreshLocal

/// Where the bucket is and how to open it (contract: Invocation, `--bucket` and `--clock`).
struct BucketLocation {
    /// The bucket file.
    var path: String
    /// True for the embedded default bucket, which starts as the teaching sample.
    var isDefault: Bool

    /// `--bucket`, else `$STORESH_BUCKET`, else `default.bucket` in the user's data directory
    /// (`$XDG_DATA_HOME/storesh`, falling back to `~/.local/share/storesh`).
    static func resolve(flag: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        -> BucketLocation
    {
        if let flag { return BucketLocation(path: flag, isDefault: false) }
        if let fromEnvironment = environment["STORESH_BUCKET"], !fromEnvironment.isEmpty {
            return BucketLocation(path: fromEnvironment, isDefault: false)
        }
        return BucketLocation(path: defaultDataDirectory(environment: environment) + "/default.bucket", isDefault: true)
    }

    static func defaultDataDirectory(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/storesh" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/storesh"
    }

    /// How every command opens a bucket: `$STORESH_BUSY_TIMEOUT_MS` bounds the wait for another writer
    /// (default 5000), and `$STORESH_FAULT` is the crash tests' hook.
    static func options(clock: any StorageClock, environment: [String: String] = ProcessInfo.processInfo.environment)
        -> LocalBucketOptions
    {
        var options = LocalBucketOptions(clock: clock)
        if let wait = environment["STORESH_BUSY_TIMEOUT_MS"].flatMap(Int32.init), wait >= 0 {
            options.busyTimeoutMilliseconds = wait
        }
        options.crashBeforeCommit = environment["STORESH_FAULT"] == "crash-before-commit"
        options.crashAfterCommit = environment["STORESH_FAULT"] == "crash-after-commit"
        return options
    }

    /// Opens the bucket, creating it if missing (and saying so on stderr): the default bucket from the
    /// bundled teaching sample, in a data directory made for it; any other as an empty bucket, in a
    /// directory that must exist already, so that a mistyped path is not quietly made.
    func open(clock: any StorageClock) throws -> LocalBucket {
        let options = Self.options(clock: clock)
        let exists = FileManager.default.fileExists(atPath: path)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !exists && !isDefault {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw StorageError(
                    .bucketNotFound,
                    "Cannot create the bucket \(path): there is no directory \(directory). Create it first, or check the path.")
            }
        }
        let bucket: LocalBucket
        if isDefault {
            if !exists { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
            bucket = try LocalBucket.open(at: path, options: options) { () throws(StorageError) in
                try BucketArchive.parse(Data(PackageResources.teaching_json), source: "teaching sample")
            }
        } else {
            bucket = try LocalBucket.open(at: path, options: options)
        }
        if !exists {
            let what = isDefault ? "the default bucket gs://\(bucket.name) from the teaching sample" : "an empty bucket gs://\(bucket.name)"
            FileHandle.standardError.write(Data("storesh: created \(what) at \(path)\n".utf8))
        }
        return bucket
    }
}

/// `--clock T`, else `$STORESH_CLOCK`, else the real clock.
func makeClock(flag: String?) throws(CommandLineError) -> any StorageClock {
    let fromEnvironment = ProcessInfo.processInfo.environment["STORESH_CLOCK"].flatMap { $0.isEmpty ? nil : $0 }
    guard let text = flag ?? fromEnvironment else { return SystemClock() }
    guard let start = Timestamp(rfc3339: text) else {
        let source = flag == nil ? "$STORESH_CLOCK" : "--clock"
        throw CommandLineError("\(source) takes an RFC 3339 time such as 2026-11-21T09:30:00.000Z, not '\(text)'.")
    }
    return SteppingClock(start: start)
}

/// A usage error found after argument parsing (exit status 2).
struct CommandLineError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Every bucket this process opened, so that every way out of storesh closes them (`Storesh.leave`).
final class OpenBuckets: @unchecked Sendable {
    static let shared = OpenBuckets()
    private let lock = NSLock()
    private var buckets: [LocalBucket] = []

    func keep(_ bucket: LocalBucket) -> LocalBucket {
        lock.withLock { buckets.append(bucket) }
        return bucket
    }

    func closeAll() {
        for bucket in lock.withLock({ buckets }) { bucket.close() }
    }
}
