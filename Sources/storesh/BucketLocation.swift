import Foundation
import StoreshCore
import StoreshLocal

/// Where the bucket is and how to open it (rule B1; contract: Invocation, `--bucket` and `--clock`).
struct BucketLocation {
    enum Kind: Equatable {
        /// A local bucket file.
        case file(path: String)
        /// `gs://NAME`: a Google Cloud Storage bucket (every Firebase Storage bucket is one).
        case googleCloudStorage(bucket: String)
        /// `s3://NAME`: an S3-compatible bucket.
        case s3(bucket: String)
    }

    var kind: Kind
    /// True for the embedded default bucket, which starts as the teaching sample.
    var isDefault: Bool
    /// How the location was given, when not on the command line (`$STORESH_BUCKET`, the default bucket): then a
    /// run says which bucket it uses (rule B2).
    var unnamedSource: String?

    /// The bucket file of a local location.
    var path: String {
        if case .file(let path) = kind { return path }
        return ""
    }

    /// How a location is written in messages.
    var displayed: String {
        switch kind {
        case .file(let path): path
        case .googleCloudStorage(let bucket): "gs://\(bucket)"
        case .s3(let bucket): "s3://\(bucket)"
        }
    }

    static let forms =
        "a local bucket file (a path), gs://NAME (Google Cloud Storage, Firebase) or s3://NAME (S3-compatible)"

    /// `--bucket`, else `$STORESH_BUCKET`, else `default.bucket` in the user's data directory
    /// (`$XDG_DATA_HOME/storesh`, falling back to `~/.local/share/storesh`).
    static func resolve(
        flag: String?, environment: Environment = Environment()
    ) throws(UsageError) -> BucketLocation {
        if let flag { return try parse(flag, source: "--bucket") }
        if let fromEnvironment = environment["STORESH_BUCKET"], !fromEnvironment.isEmpty {
            var location = try parse(fromEnvironment, source: "$STORESH_BUCKET")
            location.unnamedSource = "$STORESH_BUCKET"
            return location
        }
        return BucketLocation(
            kind: .file(path: defaultPath(environment: environment)), isDefault: true,
            unnamedSource: "the default bucket")
    }

    /// Where the default bucket is.
    static func defaultPath(environment: Environment = Environment()) -> String {
        defaultDataDirectory(environment: environment) + "/default.bucket"
    }

    /// A location as written: a scheme (`NAME://`) is never taken for a file path (rule B1).
    static func parse(_ text: String, source: String) throws(UsageError) -> BucketLocation {
        // `gs:NAME` or `s3:/NAME` is a real bucket mistyped, not a file to create.
        for scheme in ["gs", "s3"] {
            let lowered = text.lowercased()
            if lowered.hasPrefix(scheme + ":"), !lowered.hasPrefix(scheme + "://") {
                let name = text.dropFirst(scheme.count + 1).drop { $0 == "/" }
                throw UsageError(
                    "\(source) \(text): a real bucket is written \(scheme)://NAME (did you mean \(scheme)://\(name)?).")
            }
        }
        // A scheme is a letter, then letters, digits, +, - or . (RFC 3986), before "://".
        let bytes = Array(text.utf8)
        let schemeLength = bytes.prefix { byte in
            (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }.count
        guard schemeLength > 0, bytes[0] | 0x20 >= UInt8(ascii: "a"), bytes[0] | 0x20 <= UInt8(ascii: "z"),
            bytes.dropFirst(schemeLength).starts(with: Array("://".utf8))
        else {
            return BucketLocation(kind: .file(path: text), isDefault: false)
        }
        let written = String(decoding: bytes.prefix(schemeLength), as: UTF8.self)
        let scheme = written.lowercased()
        let rest = String(decoding: bytes.dropFirst(schemeLength + 3), as: UTF8.self)
        let name = rest.hasSuffix("/") ? String(rest.dropLast()) : rest
        guard scheme == "gs" || scheme == "s3" else {
            throw UsageError("\(source) \(text): unknown kind of location '\(written)://'; a bucket is \(forms).")
        }
        guard !name.isEmpty else {
            throw UsageError("\(source) \(text): give the bucket's name, as \(scheme)://NAME.")
        }
        guard !name.contains("/") else {
            throw UsageError(
                "\(source) \(text): give the bucket alone, as \(scheme)://NAME (paths inside it are for cd, ls and the other commands)."
            )
        }
        return BucketLocation(
            kind: scheme == "gs" ? .googleCloudStorage(bucket: name) : .s3(bucket: name), isDefault: false)
    }

    static func defaultDataDirectory(environment: Environment) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/storesh" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/storesh"
    }

    /// How every command opens a bucket: `$STORESH_BUSY_TIMEOUT_MS` bounds the wait for another writer
    /// (default 5000), and in a debug build `$STORESH_FAULT` is the crash tests' hook (a release build has none: a
    /// variable left in someone's environment never makes it stop before a commit).
    static func options(clock: any StorageClock, environment: Environment = Environment()) -> LocalBucketOptions {
        var options = LocalBucketOptions(clock: clock)
        if let wait = environment["STORESH_BUSY_TIMEOUT_MS"].flatMap(Int32.init), wait >= 0 {
            options.busyTimeoutMilliseconds = wait
        }
        #if DEBUG
            options.crashBeforeCommit = environment["STORESH_FAULT"] == "crash-before-commit"
            options.crashAfterCommit = environment["STORESH_FAULT"] == "crash-after-commit"
        #endif
        return options
    }

    /// Where `storesh serve --import` keeps an export's bucket when no --bucket names a file: a bucket file of its
    /// own, named after the bucket, in the data directory's `imports` folder.
    static func imported(bucket: String) throws -> BucketLocation {
        let folder = defaultDataDirectory(environment: Environment()) + "/imports"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return BucketLocation(kind: .file(path: folder + "/" + bucket + ".bucket"), isDefault: false)
    }

    /// Opens the bucket, creating it if missing (and saying so on stderr): the default bucket from the
    /// bundled teaching sample, in a data directory made for it; any other as an empty bucket, in a
    /// directory that must exist already, so that a mistyped path is not quietly made.
    /// `keepingClockAfterChanges`: a `--clock` before the bucket's latest change moves past it (false for a reset,
    /// which replaces every object).
    func open(
        clock: any StorageClock, quiet: Bool, nameForNewBucket: String? = nil, keepingClockAfterChanges: Bool = true
    ) throws
        -> LocalBucket
    {
        var options = Self.options(clock: clock)
        options.nameForNewBucket = nameForNewBucket
        // access(2), not FileManager or URL: opening an existing bucket is every run's first step.
        let exists = access(path, F_OK) == 0
        let directory = exists ? "" : URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !exists && !isDefault {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw StorageError(
                    .bucketNotFound,
                    "Cannot create the bucket \(path): there is no directory \(directory). Create it first, or check the path (a real bucket is written gs://NAME or s3://NAME)."
                )
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
        // `--clock T` on a bucket with changes dated after T: the clock moves on past them, so that no change of
        // this run is dated before one the bucket holds (a timeCreated after its updated).
        // The metatype first: a cast that fails looks for a bridging conformance in the whole binary (issue 23).
        if exists, keepingClockAfterChanges, type(of: clock) == SteppingClock.self,
            let stepping = clock as? SteppingClock,
            let latest = try bucket.latestChange(),
            stepping.move(past: latest),
            !quiet
        {
            Diagnostics.notice(
                "the bucket's latest change is at \(latest.rfc3339), after the --clock time: this run's changes are dated from \(stepping.now().rfc3339) on."
            )
        }
        if !exists && !quiet {
            // Saying what was created also says which bucket the run uses (rule B2).
            let what =
                isDefault
                ? "the default bucket gs://\(bucket.name) from the teaching sample"
                : "an empty bucket gs://\(bucket.name)"
            // A new empty bucket is often a mistyped name (`--bucket teaching`): say where the sample is.
            let hint =
                isDefault
                ? ""
                : " (a new file, since there was none; the default bucket, with the teaching sample, is used without --bucket: \(BucketLocation.defaultPath()))"
            Diagnostics.notice("created \(what) at \(path)\(hint)")
        } else if !quiet {
            announce(bucket)
        }
        return bucket
    }
}

extension BucketLocation {
    /// Rule B3: a local-bucket feature asked of a real bucket is a usage error that says what to use instead.
    func refuseRemote(
        _ feature: String = "this command works on local bucket files only", instead: String? = nil
    )
        throws(UsageError)
    {
        if case .file = kind { return }
        throw UsageError("\(displayed) is a real bucket: \(feature)." + (instead.map { " \($0)" } ?? ""))
    }

    /// Rule B2: says which bucket a run uses, once, on stderr before any result, when the command line did not
    /// name it.
    func announce(_ bucket: any Bucket) {
        guard let unnamedSource else { return }
        Diagnostics.notice("bucket gs://\(bucket.name) (\(unnamedSource), \(displayed))")
    }
}

/// `--clock T`, else `$STORESH_CLOCK`, else the real clock.
func makeClock(flag: String?) throws(UsageError) -> any StorageClock {
    let fromEnvironment = Environment()["STORESH_CLOCK"].flatMap { $0.isEmpty ? nil : $0 }
    guard let text = flag ?? fromEnvironment else { return SystemClock() }
    guard let start = Timestamp(rfc3339: text) else {
        let source = flag == nil ? "$STORESH_CLOCK" : "--clock"
        throw UsageError("\(source) takes an RFC 3339 time such as 2026-11-21T09:30:00.000Z, not '\(text)'.")
    }
    return SteppingClock(start: start)
}

/// The process's environment, read a variable at a time (building the whole dictionary costs every run).
struct Environment {
    subscript(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
