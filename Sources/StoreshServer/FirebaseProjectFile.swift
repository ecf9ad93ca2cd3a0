import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules

/// What `storesh serve` takes from a Firebase project's `firebase.json`, as `firebase emulators:start --only storage`
/// does: where the storage emulator listens (`emulators.storage.host`, `.port`) and the security rules file
/// (`storage.rules`, or the entry of a `storage` list whose `bucket` is the one served, else its first). A project's
/// tests can then swap the emulator for storesh serve without repeating its configuration.
package struct FirebaseProjectFile: Sendable {
    /// The file read, as found or given.
    package var path: String
    package var host: String?
    package var port: Int?
    /// The rules files it names, each for a bucket or for any, relative to the current directory (the project file
    /// names them relative to itself).
    package var rules: [(bucket: String?, path: String)] = []

    /// The rules file for `bucket`: the entry naming it, else the first.
    package func rulesPath(for bucket: String) -> String? {
        (rules.first { $0.bucket == bucket } ?? rules.first)?.path
    }

    /// The text of every rules file it names, by path, each read and checked: one that cannot be read or used is
    /// an error that names this file.
    package func checkedRulesTexts() throws(UsageError) -> [String: String] {
        var texts: [String: String] = [:]
        for rules in rules {
            switch RulesFileWatch.text(of: rules.path) {
            case .failure(let problem):
                let reason =
                    problem.description.hasSuffix(".") ? String(problem.description.dropLast()) : problem.description
                throw UsageError("\(path) names a rules file storesh cannot use: \(reason); nothing was started.")
            case .success(let text):
                do throws(StorageError) {
                    try RulesEngine.check(text, origin: rules.path)
                } catch {
                    throw UsageError(
                        "\(path) names the rules \(rules.path), which cannot be used: \(error.message); nothing was started."
                    )
                }
                texts[rules.path] = text
            }
        }
        return texts
    }

    /// The `firebase.json` of the project the current directory is in: here or in a directory above, as the
    /// Firebase CLI finds its project.
    package static func find(from directory: String = FileManager.default.currentDirectoryPath) -> String? {
        var current = URL(fileURLWithPath: directory).standardizedFileURL
        // Bounded: each round goes one directory up, and the root's parent is the root.
        while true {
            let candidate = current.appendingPathComponent("firebase.json").path
            if FileManager.default.isReadableFile(atPath: candidate) { return candidate }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return nil }
            current = parent
        }
    }

    /// Reads `path`. Errors name the file and the key.
    package static func read(_ path: String) throws(UsageError) -> FirebaseProjectFile {
        let data: Data
        do {
            data = try RegularFile.read(
                path, maximumBytes: RegularFile.maximumDocumentBytes, what: "a Firebase project file")
        } catch {
            throw UsageError(error.message)
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch let problem as Problem {
            throw UsageError("\(path): \(problem.message)")
        } catch {
            throw UsageError("\(path) is not a Firebase project file: its text is not a JSON object.")
        }
        var project = FirebaseProjectFile(path: path)
        (project.host, project.port) = (document.host, document.port)
        let directory = (path as NSString).deletingLastPathComponent
        for (bucket, rules) in document.rules {
            let resolved =
                rules.hasPrefix("/") || directory.isEmpty
                ? rules : (directory as NSString).appendingPathComponent(rules)
            project.rules.append((bucket, resolved))
        }
        return project
    }
}

/// Keeps the served rules those of a file: reads it every half second while the server runs and, when its text
/// changed, loads it, saying so; a text with an error is reported and the rules in force stay (as the emulator does
/// when the rules file changes).
struct RulesFileWatch {
    static let interval: Duration = .milliseconds(500)

    let path: String
    /// Loads a text into the server; throws its error (positioned in the file).
    let load: @Sendable (_ source: String) async throws -> Void
    /// Where what happened is said.
    let report: ServeReport

    /// The text of the rules file at `path`, or why it cannot be read: a regular file of at most
    /// `RegularFile.maximumDocumentBytes`.
    static func text(of path: String) -> Result<String, UsageError> {
        let data: Data
        do {
            data = try RegularFile.read(path, maximumBytes: RegularFile.maximumDocumentBytes, what: "the rules file")
        } catch {
            return .failure(UsageError(error.message))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return .failure(UsageError("the rules file \(path) is not UTF-8 text"))
        }
        return .success(text)
    }

    /// Watches from `loaded` (the text in force) until cancelled.
    func run(from loaded: String) async {
        var last = loaded
        var lastProblem: String?
        var seen = FileIdentity(path: path)
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.interval)
            if Task.isCancelled { return }
            // Read again only when the file's identity, size or time changed: a look, not a read, every half second.
            let now = FileIdentity(path: path)
            if now != nil && now == seen { continue }
            seen = now
            switch Self.text(of: path) {
            case .failure(let problem):
                // Said once, not every half second (an editor may replace the file in two steps).
                if problem.description != lastProblem {
                    report.warning("\(problem.description); the rules in force stay")
                    lastProblem = problem.description
                }
            case .success(let text) where text != last:
                last = text
                lastProblem = nil
                do {
                    try await load(text)
                    report.notice("\(path) changed: its rules are in force")
                } catch {
                    let reason = (error as? StorageError)?.message ?? "\(error)"
                    report.warning("\(path) changed, but its rules were not loaded: \(reason); the rules in force stay")
                }
            case .success:
                break
            }
        }
    }
}

extension FirebaseProjectFile {
    /// What is wrong where, in the file's words ("emulators.storage.port must be …").
    struct Problem: Error {
        var message: String
    }

    /// The members storesh reads: `emulators.storage.host` and `.port`, and `storage` (an entry, or a list of them,
    /// each with its `rules` file and, in a list, its `bucket`). Every other member is the CLI's or another
    /// emulator's, and is not read.
    struct Document: Decodable {
        var host: String?
        var port: Int?
        var rules: [(bucket: String?, file: String)] = []

        init(from decoder: any Decoder) throws {
            let root = try decoder.container(keyedBy: JSONMemberKey.self)
            if root.contains(JSONMemberKey("emulators")) {
                guard
                    let emulators = try? root.nestedContainer(
                        keyedBy: JSONMemberKey.self, forKey: JSONMemberKey("emulators"))
                else {
                    throw Problem(message: "emulators must be an object.")
                }
                if emulators.contains(JSONMemberKey("storage")) {
                    guard
                        let storage = try? emulators.nestedContainer(
                            keyedBy: JSONMemberKey.self, forKey: JSONMemberKey("storage"))
                    else {
                        throw Problem(message: "emulators.storage must be an object.")
                    }
                    if storage.contains(JSONMemberKey("host")) {
                        guard let host = try? storage.decode(String.self, forKey: JSONMemberKey("host")), !host.isEmpty
                        else {
                            throw Problem(
                                message: "emulators.storage.host must be a host name or address, such as \"127.0.0.1\"."
                            )
                        }
                        self.host = host
                    }
                    if storage.contains(JSONMemberKey("port")) {
                        port = try Self.port(storage, JSONMemberKey("port"))
                    }
                }
            }
            guard root.contains(JSONMemberKey("storage")) else { return }
            var entries: [KeyedDecodingContainer<JSONMemberKey>] = []
            if let single = try? root.nestedContainer(keyedBy: JSONMemberKey.self, forKey: JSONMemberKey("storage")) {
                entries = [single]
            } else if var list = try? root.nestedUnkeyedContainer(forKey: JSONMemberKey("storage")) {
                while !list.isAtEnd {
                    guard let entry = try? list.nestedContainer(keyedBy: JSONMemberKey.self) else {
                        throw Problem(
                            message: "storage must be an object ({\"rules\": \"storage.rules\"}) or a list of them.")
                    }
                    entries.append(entry)
                }
            } else {
                throw Problem(message: "storage must be an object ({\"rules\": \"storage.rules\"}) or a list of them.")
            }
            for entry in entries {
                guard entry.contains(JSONMemberKey("rules")) else { continue }
                guard let rules = try? entry.decode(String.self, forKey: JSONMemberKey("rules")), !rules.isEmpty else {
                    throw Problem(message: "storage.rules must name a file.")
                }
                // A bucket that is not a string names no bucket (as before the CLI checks it).
                let bucket = (try? entry.decodeIfPresent(String.self, forKey: JSONMemberKey("bucket"))) ?? nil
                self.rules.append((bucket, rules))
            }
        }

        /// The port as the CLI takes it: a whole number, or a string of digits, 0…65535.
        static func port(_ container: KeyedDecodingContainer<JSONMemberKey>, _ key: JSONMemberKey) throws -> Int {
            let given: String
            if let number = try? container.decode(Double.self, forKey: key) {
                if let whole = Int(exactly: number), (0...65535).contains(whole) { return whole }
                given = number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
            } else if let text = try? container.decode(String.self, forKey: key) {
                if let whole = Int(text), (0...65535).contains(whole) { return whole }
                given = text
            } else if let flag = try? container.decode(Bool.self, forKey: key) {
                given = String(flag)
            } else {
                given = "that value"
            }
            throw Problem(message: "emulators.storage.port must be a port number 0…65535, not \(given).")
        }
    }
}
