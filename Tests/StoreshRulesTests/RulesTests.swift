import Foundation
import StoreshCore
import StoreshFuzzing
import StoreshLanguage
import StoreshLocal
import StoreshTestSupport
import Testing

@testable import StoreshRules

/// A local bucket with rules in force (the rules layer around it), and a way to run requests as someone.
final class RulesFixture {
    let directory = NSTemporaryDirectory() + "storesh-rules-" + UUID().uuidString
    /// The bucket as opened: no rules (an administrator's view).
    let raw: LocalBucket
    let rules: RulesSession
    /// The bucket under the rules.
    let bucket: any Bucket

    init(_ source: String, objects: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        raw = try LocalBucket.open(
            at: directory + "/teaching.bucket",
            options: LocalBucketOptions(clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-21T09:30:00Z")!)))
        try raw.importObjects(
            objects.map { ArchivedObject(name: try ObjectName($0), content: Data("content of \($0)".utf8)) },
            replacingEverything: false)
        rules = try RulesSession(store: raw, clock: raw.clock)
        try rules.loadRules(source: source, origin: "test.rules", into: raw)
        bucket = rules.guarding(raw)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func signIn(_ uid: String?, claims: [String: String] = [:]) {
        rules.identity = uid.map { Identity(uid: $0, claims: claims.mapValues(ClaimValue.init(text:))) }
    }

    /// nil when allowed, else the error's code.
    func attempt(_ body: () async throws -> Void) async -> StorageErrorCode? {
        await storageError(body)?.code
    }

    func get(_ name: String) async -> StorageErrorCode? {
        await attempt { _ = try await self.bucket.metadata(of: ObjectName(name)) }
    }
    func list(_ path: String) async -> StorageErrorCode? {
        await attempt { _ = try await self.bucket.list(StoragePath(normalizing: path), options: ListOptions()) }
    }
    func create(_ name: String, type: String = "text/plain", size: Int = 1) async -> StorageErrorCode? {
        await attempt {
            _ = try await self.bucket.write(
                Data(count: size), to: ObjectName(name), options: WriteOptions(properties: [.contentType: type]))
        }
    }
    func update(_ name: String) async -> StorageErrorCode? {
        await attempt {
            _ = try await self.bucket.updateMetadata(
                of: ObjectName(name), MetadataUpdate(properties: [.cacheControl: .set("no-cache")]),
                ifMetagenerationMatch: nil)
        }
    }
    func delete(_ name: String) async -> StorageErrorCode? {
        await attempt { try await self.bucket.delete(ObjectName(name)) }
    }
}

func rules(_ body: String, version: String = "2") -> String {
    "rules_version = '\(version)';\nservice firebase.storage {\n  match /b/{bucket}/o {\n\(body)\n  }\n}\n"
}

@Suite("Security rules (R1–R4, L12)")
struct RulesTests {
    @Test("rule R2: each method maps to its request; read = get + list, write = create + update + delete")
    func methods() async throws {
        for (allowed, expected) in [
            ("get", [AccessMethod.get]), ("list", [.list]), ("create", [.create]), ("update", [.update]),
            ("delete", [.delete]), ("read", [.get, .list]), ("write", [.create, .update, .delete]),
        ] {
            let session = try RulesFixture(rules("match /{all=**} { allow \(allowed); }"), objects: ["a/x", "a/y"])
            var granted: [AccessMethod] = []
            if await session.get("a/x") == nil { granted.append(.get) }
            if await session.list("a") == nil { granted.append(.list) }
            if await session.create("a/new") == nil { granted.append(.create) }
            if await session.update("a/x") == nil { granted.append(.update) }
            if await session.delete("a/y") == nil { granted.append(.delete) }
            #expect(granted == expected, "allow \(allowed)")
        }
    }

    @Test("rule R2: overwriting content is create; a metadata update is update")
    func overwriteIsCreate() async throws {
        let session = try RulesFixture(rules("match /{all=**} { allow read, create; }"), objects: ["a"])
        #expect(await session.create("a") == nil)
        #expect(await session.update("a") == .unauthorized)
    }

    @Test("rule R3: rules are checked before existence")
    func rulesBeforeExistence() async throws {
        let session = try RulesFixture(rules("match /open/{x} { allow read, write; }"))
        #expect(await session.get("closed/missing") == .unauthorized)
        #expect(await session.update("closed/missing") == .unauthorized)
        #expect(await session.delete("closed/missing") == .unauthorized)
        #expect(await session.get("open/missing") == .objectNotFound)
        let error = await storageError { _ = try await session.bucket.metadata(of: ObjectName("closed/missing")) }
        #expect(error?.message == "User does not have permission to access gs://teaching/closed/missing.")
    }

    @Test("rule R4: request.auth, its uid and token claims; null when signed out, which fails closed")
    func auth() async throws {
        let session = try RulesFixture(
            rules(
                "match /files/{uid}/{rest=**} { allow read: if request.auth.uid == uid || request.auth.token.admin == true; }"
            ),
            objects: ["files/alice/a"])
        session.signIn(nil)
        #expect(await session.get("files/alice/a") == .unauthorized)
        session.signIn("bob")
        #expect(await session.get("files/alice/a") == .unauthorized)  // token has no admin key: error, so deny
        session.signIn("alice")
        #expect(await session.get("files/alice/a") == nil)
        session.signIn("carol", claims: ["admin": "true"])
        #expect(await session.get("files/alice/a") == nil)
        #expect(
            session.rules.lastDecision.map { $0.decision.explanation(for: $0.request) }?.contains("at test.rules:4")
                == true)
    }

    @Test("rule R4: request.resource is the object after the change, resource the one before")
    func resources() async throws {
        let session = try RulesFixture(
            rules(
                """
                match /{all=**} {
                  allow read;
                  allow create: if request.resource.size < 10 && request.resource.contentType.matches('text/.*')
                                 && (resource == null || resource.metadata.get('locked', 'no') != 'yes');
                  allow update: if request.resource.metadata.keys().hasAll(resource.metadata.keys())
                                 && request.resource.cacheControl == 'no-cache';
                  allow delete: if resource.size > 0 && request.path == '/b/teaching/o/' + resource.name;
                }
                """), objects: ["a"])
        #expect(await session.create("small.txt") == nil)
        #expect(await session.create("big.txt", size: 20) == .unauthorized)
        #expect(await session.create("image.png", type: "image/png") == .unauthorized)
        #expect(await session.update("a") == nil)
        #expect(await session.delete("a") == nil)
    }

    @Test("rule R4: request.time, timestamps and durations")
    func time() async throws {
        let session = try RulesFixture(
            rules(
                """
                match /{all=**} {
                  allow get: if request.time > timestamp.date(2026, 1, 1) && request.time < timestamp.date(2026, 11, 21) + duration.value(1, 'd');
                  allow list: if request.time < timestamp.date(2020, 1, 1);
                }
                """), objects: ["a"])
        #expect(await session.get("a") == nil)
        #expect(await session.list("") == .unauthorized)
    }

    @Test("arithmetic past 64 bits on a request's numbers is an error that denies, never a trap")
    func arithmeticOverflowDenies() async throws {
        let session = try RulesFixture(
            rules(
                """
                match /{name} {
                  allow get: if -request.auth.token.least > 0;
                  allow get: if request.auth.token.least / -1 > 0;
                  allow get: if request.auth.token.least % -1 == 0;
                  allow get: if duration.value(request.auth.token.most, 'w') > duration.value(1, 's');
                  allow get: if request.time + duration.value(request.auth.token.seconds, 's') > request.time;
                  allow get: if request.time - duration.value(-request.auth.token.seconds, 's') > request.time;
                }
                """), objects: ["a"])
        session.signIn(
            "ada", claims: ["least": String(Int64.min), "most": String(Int64.max), "seconds": "9223372036854"])
        #expect(await session.get("a") == .unauthorized)
        let why = session.rules.lastDecision.map { $0.decision.explanation(for: $0.request) } ?? ""
        #expect(
            why.contains("overflows a 64-bit integer") && why.contains("is out of range")
                && why.contains("a time or duration out of range"))
        // In range, the same expressions still grant.
        session.signIn("ada", claims: ["least": "-5", "most": "1", "seconds": "60"])
        #expect(await session.get("a") == nil)
    }

    @Test("nested matches, path variables and recursive wildcards; any matching allow grants")
    func matching() async throws {
        let session = try RulesFixture(
            rules(
                """
                match /users/{user} {
                  allow get: if user == 'alice';
                  match /photos/{photo} {
                    allow get: if photo.matches('.*[.]jpg');
                  }
                  match /{rest=**} {
                    allow get: if rest.size() > 20;
                  }
                }
                """),
            objects: [
                "users/alice", "users/bob", "users/bob/photos/p.jpg", "users/bob/photos/p.png",
                "users/bob/a/very/deep/path/name",
            ])
        #expect(await session.get("users/alice") == nil)
        #expect(await session.get("users/bob") == .unauthorized)
        #expect(await session.get("users/bob/photos/p.jpg") == nil)
        #expect(await session.get("users/bob/photos/p.png") == .unauthorized)
        #expect(await session.get("users/bob/a/very/deep/path/name") == nil)
    }

    @Test("the bucket segment as a literal or a variable, empty segments, and blocks outside /b/{bucket}/o")
    func bucketSegments() async throws {
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/other/o/{all=**} { allow get; }
              match /b/teaching/o/open/{name} { allow get; }
              match /b/{bucket}/o/named/{name} { allow get: if bucket == 'teaching' && name == 'x'; }
              match /b/{bucket}/o/gap/{empty}/end { allow get: if empty == ''; }
              match /{first}/{bucket}/{o}/whole/{name} { allow get: if first == 'b' && o == 'o' && bucket == 'teaching'; }
            }
            """
        let session = try RulesFixture(
            source, objects: ["open/a", "named/x", "named/y", "gap//end", "whole/w", "other"])
        #expect(await session.get("open/a") == nil)
        #expect(await session.get("named/x") == nil)
        #expect(await session.get("named/y") == .unauthorized)
        #expect(await session.get("gap//end") == nil)
        #expect(await session.get("whole/w") == nil)
        #expect(await session.get("other") == .unauthorized)  // the block of another bucket
    }

    @Test("functions see their caller's path variables; parameters hide them; resource.metadata is a map")
    func functionScopesAndMetadata() async throws {
        let session = try RulesFixture(
            rules(
                """
                function ownerIs(uid) { return owner == uid; }
                function mine() { return owner == 'alice'; }
                match /files/{owner}/{name} {
                  allow get: if mine() && ownerIs('alice') && !ownerIs(owner + 'x');
                  allow update: if request.resource.metadata.size() == 1 && 'reviewed' in request.resource.metadata
                                && request.resource.metadata['reviewed'] == 'yes'
                                && request.resource.metadata.get('missing', 'none') == 'none'
                                && request.resource.metadata.keys() == ['reviewed']
                                && request.resource.metadata == {'reviewed': 'yes'}
                                && resource.metadata.size() == 0;
                }
                """), objects: ["files/alice/a", "files/bob/b"])
        #expect(await session.get("files/alice/a") == nil)
        #expect(await session.get("files/bob/b") == .unauthorized)
        let update = await session.attempt {
            _ = try await session.bucket.updateMetadata(
                of: ObjectName("files/alice/a"), MetadataUpdate(customMetadata: ["reviewed": .set("yes")]),
                ifMetagenerationMatch: nil)
        }
        #expect(update == nil)
        #expect(await session.update("files/alice/a") == .unauthorized)  // cacheControl only: no `reviewed` key
    }

    @Test("rule R1 and L12: no declaration is version 1, where {x=**} needs a segment and every list fails")
    func versionOne() async throws {
        let source =
            "service firebase.storage {\n match /b/{bucket}/o {\n  match /{all=**} { allow read, write; }\n }\n}\n"
        let session = try RulesFixture(source, objects: ["a/b"])
        #expect(try RulesParser.parse(source).version == "1")
        #expect(await session.get("a/b") == nil)
        let listing = await storageError { _ = try await session.bucket.list(.root, options: ListOptions()) }
        #expect(
            listing?.message
                == "Listing objects in a bucket is disallowed for rules_version = \"1\". Please update storage security rules to rules_version = \"2\" to use list."
        )
        #expect(await session.list("a") != nil)
        let v2 = try RulesFixture(rules("match /{all=**} { allow list; }"), objects: ["a/b"])
        #expect(await v2.list("") == nil)  // in version 2, {all=**} matches the root's zero segments
    }

    @Test("functions, lets, lists, maps and `in`; errors and unknown names fail closed")
    func expressions() async throws {
        let session = try RulesFixture(
            rules(
                """
                function allowed(name) {
                  let names = ['a', 'b'];
                  return name in names && {'x': 1}.size() == 1 && !(name in {'zz': true});
                }
                match /{name} {
                  allow get: if allowed(name);
                  allow get: if undefinedThing == 1;
                  allow get: if 1 / 0 == 1;
                }
                """), objects: ["a", "c"])
        #expect(await session.get("a") == nil)
        #expect(await session.get("c") == .unauthorized)
        let why = session.rules.lastDecision.map { $0.decision.explanation(for: $0.request) } ?? ""
        #expect(
            why.contains("the condition is false") && why.contains("unknown name 'undefinedThing'")
                && why.contains("division by zero"))
    }

    @Test(
        "rules files are checked with line and column",
        arguments: [
            ("rules_version = '3';", "1:17"), ("service firebase.firestore { }", "1:18"),
            ("service firebase.storage { match /b/{bucket}/o { allow raed; } }", "1:56"),
            ("service firebase.storage { match /b/{bucket}/o { allow read: if (1; } }", "1:67"),
            ("service firebase.storage {\n  match /b/{x=**}/o { }\n}", "2:9"),
            ("service firebase.storage { match b { } }", "1:34"),
        ])
    func syntaxErrors(source: String, position: String) {
        do {
            _ = try RulesParser.parse(source)
            Issue.record("\(source) parsed")
        } catch {
            #expect("\(error.line):\(error.column)" == position, "\(source): \(error.message)")
        }
    }

    @Test("the sample rules parse")
    func samples() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../samples/rules")
        #expect(
            try RulesParser.parse(
                String(contentsOf: folder.appendingPathComponent("owner-only.rules"), encoding: .utf8)
            ).version == "2")
        #expect(
            try RulesParser.parse(String(contentsOf: folder.appendingPathComponent("version1.rules"), encoding: .utf8))
                .version == "1")
        #expect(try RulesParser.parse(RulesEngine.openRules).version == "2")
    }
}

@Suite("Rules in the language")
struct RulesLanguageTests {
    final class Lines: SessionOutput {
        var lines: [String] = []
        var errors: [Diagnostic] = []
        func result(_ line: String) { lines.append(line) }
        func resultBytes(_ bytes: Data) {}
        func error(_ diagnostic: Diagnostic) { errors.append(diagnostic) }
        func notice(_ text: String) {}
    }

    struct Files: LocalFiles {
        let folder: String
        func read(_ path: String) throws(StorageError) -> Data {
            guard let data = FileManager.default.contents(atPath: folder + "/" + path) else {
                throw StorageError(.invalidArgument, "no \(path)")
            }
            return data
        }
        func readDocument(_ path: String) throws(StorageError) -> Data { try read(path) }
        func write(_ data: Data, to path: String) throws(StorageError) {}
        func isDirectory(_ path: String) -> Bool { false }
    }

    func run(_ session: RulesFixture, _ text: String) async throws -> (Session.Status, Lines) {
        let output = Lines()
        let interpreter = Session(
            bucket: session.raw, output: output, files: Files(folder: session.directory), clock: session.raw.clock)
        interpreter.rules = session.rules
        return (await interpreter.run(try Parser.parse(SourceText(name: "t", text: text))), output)
    }

    @Test("a denied write inside a script rolls the whole script back")
    func deniedWriteRollsBack() async throws {
        let session = try RulesFixture(
            rules("match /mine/{x} { allow read, write: if request.auth.uid == 'me'; }"), objects: ["mine/a"])
        let (status, output) = try await run(session, "login me\nput --data 1 mine/b\nlogout\nput --data 2 mine/c\n")
        #expect(status == .failed)
        #expect(output.errors.first?.code == "unauthorized" && output.errors.first?.location.line == 4)
        // As an administrator, without rules:
        let names = try await session.raw.scan(prefix: "", after: nil, limit: 10).objects.map(\.fullPath)
        #expect(names == ["mine/a"])
    }

    @Test("rule R2: meta set on a named object is one update, allowed by write-only rules; a pattern lists first")
    func metaSetIsAnUpdate() async throws {
        let session = try RulesFixture(rules("match /drop/{x} { allow update; }"), objects: ["drop/a"])
        let (status, output) = try await run(session, "meta set custom.seen=yes drop/a\nrules why")
        #expect(status == .success)
        #expect(output.lines.contains("updated drop/a"))
        #expect(output.lines.last?.hasPrefix("allowed update on gs://teaching/drop/a by `allow update;`") == true)
        let (patternStatus, pattern) = try await run(session, "meta set custom.seen=no -- drop/*")
        #expect(patternStatus == .failed)
        #expect(pattern.errors.first?.code == "unauthorized")  // expanding the pattern is a list of drop/
    }

    @Test("login, whoami, rules why, rules load with positioned errors, rules show")
    func commands() async throws {
        let session = try RulesFixture(rules("match /{all=**} { allow read; }"), objects: ["a"])
        try "service firebase.storage { match /b/{b}/o { allow reed; } }".write(
            toFile: session.directory + "/bad.rules", atomically: true, encoding: .utf8)
        let (_, output) = try await run(
            session, "login ada --claim admin=true --claim level=3\nwhoami\nmeta get a\nrules why\nlogout\nwhoami")
        #expect(output.lines[0] == "signed in as ada")
        #expect(output.lines[1] == "signed in as ada (claims: admin=true level=3)")
        #expect(output.lines.contains("allowed get on gs://teaching/a by `allow read;` at test.rules:4"))
        #expect(output.lines.last == "not signed in: request.auth is null")
        let (status, bad) = try await run(session, "rules load bad.rules")
        #expect(status == .failed)
        #expect(bad.errors.first?.message == "bad.rules:1:51: unknown method 'reed'; did you mean 'read'?")
        let (_, shown) = try await run(session, "rules show")
        #expect(shown.lines.first == "# rules from test.rules")
    }

    @Test("a rolled-back rules load leaves the old rules in force")
    func rolledBackLoad() async throws {
        let session = try RulesFixture(rules("match /{all=**} { allow read; }"), objects: ["a"])
        try RulesEngine.openRules.write(toFile: session.directory + "/open.rules", atomically: true, encoding: .utf8)
        let (status, _) = try await run(session, "rules load open.rules\nmeta get missing")
        #expect(status == .failed)
        #expect(session.rules.currentRules().origin == "test.rules")
        #expect(await session.create("x") == .unauthorized)
    }
}

@Suite("The open rules of a new bucket, decided without parsing them")
struct OpenRulesTests {
    @Test("the decision made without evaluating is the one evaluating the open rules gives, with its explanation")
    func sameAsEvaluated() throws {
        let request = AccessRequest(
            method: .update, bucket: "teaching", path: "images/forest.jpg",
            time: Timestamp(rfc3339: "2026-11-21T09:30:00Z")!)
        let evaluated = RulesEngine.decide(request, ruleset: RulesEngine.openRuleset, auth: .null)
        let fast = RulesEngine.openDecision(origin: RulesEngine.openRulesOrigin)
        #expect(evaluated.allowed && fast.allowed)
        #expect(fast.explanation(for: request) == evaluated.explanation(for: request))
        #expect(
            fast.explanation(for: request)
                == "allowed update on gs://teaching/images/forest.jpg by `allow read, write: if true;` at (the open rules of a new bucket):5"
        )
    }
}

/// Rules are input a request can send (issue 26): a short run of the rules fuzzer (scripts/fuzz rules runs more).
@Suite("Rules under hostile input (short fuzz run)", .tags(.fuzzing))
struct RulesFuzzTests {
    @Test("deep nesting, long chains, calls and random bytes: no crash, refusals positioned, decisions bounded")
    func fuzz() {
        var fuzzer = RulesFuzzer(seed: 26)
        let report = fuzzer.run(inputs: 600)
        #expect(report.failures.isEmpty, "\(report.failures.prefix(5))")
        #expect(report.accepted > 0 && report.rejected > 0)
    }

    @Test("the limits: 256 KB of text, 100 levels of expression, 32 of match blocks, with positions")
    func limits() throws {
        let deep = RulesFuzzer.wrapping(
            String(repeating: "(", count: 101) + "true" + String(repeating: ")", count: 101))
        #expect(throws: RulesSyntaxError.self) { try RulesParser.parse(deep) }
        let fits = RulesFuzzer.wrapping(String(repeating: "(", count: 99) + "true" + String(repeating: ")", count: 99))
        _ = try RulesParser.parse(fits)
        let chain = RulesFuzzer.wrapping(Array(repeating: "true", count: 20_000).joined(separator: " && "))
        _ = try RulesParser.parse(chain)  // a chain is one level, however long
        let large = RulesFuzzer.wrapping(Array(repeating: "true", count: 40_000).joined(separator: " && "))
        do throws(RulesSyntaxError) {
            _ = try RulesParser.parse(large)
            Issue.record("a text over 256 KB was parsed")
        } catch {
            #expect(error.line == 1 && error.column == 1 && error.message.contains("262144"))
        }
        do throws(RulesSyntaxError) {
            _ = try RulesParser.parse(
                "service firebase.storage {\n" + String(repeating: "match /a {\n", count: 40)
                    + String(repeating: "}\n", count: 40) + "}\n")
            Issue.record("40 nested match blocks were parsed")
        } catch {
            #expect(error.line == 34 && error.message.contains("32"))
        }
    }
}

@Suite("Rules compare names by their bytes (rule P7)")
struct RulesNameBytesTests {
    @Test("a rule naming café (NFC) does not grant café from a Mac's file name (NFD)")
    func equalityByBytes() async throws {
        let session = try RulesFixture(
            rules("match /{all=**} { allow read: if resource.name == 'n/caf\u{E9}' && 'caf\u{E9}' <= 'caf\u{E9}'; }"),
            objects: ["n/caf\u{E9}", "n/cafe\u{301}"])
        #expect(await session.get("n/caf\u{E9}") == nil)
        #expect(await session.get("n/cafe\u{301}") == .unauthorized)
    }
}

extension Tag {
    /// A fuzz run: scripts/test runs these in a step of their own (every suite named *FuzzTests*), after the rest.
    @Tag static var fuzzing: Self
}
