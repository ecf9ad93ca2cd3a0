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
        if let flag, !flag.isEmpty { return BucketLocation(path: flag, isDefault: false) }
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

    /// Opens the bucket, creating it if missing: the default bucket from the bundled teaching sample,
    /// any other as an empty bucket.
    func open(clock: any StorageClock) throws(StorageError) -> LocalBucket {
        var options = LocalBucketOptions(clock: clock)
        options.crashBeforeCommit = ProcessInfo.processInfo.environment["STORESH_FAULT"] == "crash-before-commit"
        let seed: BucketArchive.Contents? =
            isDefault ? try BucketArchive.parse(Data(PackageResources.teaching_json), source: "teaching sample") : nil
        return try LocalBucket.open(at: path, options: options, initialContents: seed)
    }
}

/// `--clock T`, else `$STORESH_CLOCK`, else the real clock.
func makeClock(flag: String?) throws(CommandLineError) -> any StorageClock {
    let text = flag ?? ProcessInfo.processInfo.environment["STORESH_CLOCK"].flatMap { $0.isEmpty ? nil : $0 }
    guard let text else { return SystemClock() }
    guard let start = Timestamp(rfc3339: text) else {
        throw CommandLineError(
            "--clock takes an RFC 3339 time such as 2026-11-21T09:30:00.000Z, not '\(text)'.")
    }
    return SteppingClock(start: start)
}

/// A usage error found after argument parsing (exit status 2).
struct CommandLineError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
