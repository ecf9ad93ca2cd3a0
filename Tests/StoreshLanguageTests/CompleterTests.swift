import Foundation
import StoreshCore
import StoreshLocal
import Testing

@testable import StoreshLanguage

/// A completion source over a real bucket that counts what completion reads.
final class CountingSource: ImmediateReads {
    let bucket: LocalBucket
    var pagesRead: [ListOptions] = []

    init(_ bucket: LocalBucket) { self.bucket = bucket }

    var name: String { bucket.name }

    func listPage(_ reference: StoragePath, options: ListOptions) throws(StorageError) -> ListPage {
        pagesRead.append(options)
        return try bucket.listPage(reference, options: options)
    }

    func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata {
        try bucket.currentMetadata(of: object)
    }
}

@Suite("Tab completion")
struct CompleterTests {
    let session: LanguageSandbox
    let source: CountingSource

    init() throws {
        session = try LanguageSandbox([
            "images/forest.jpg", "images/mountains/summit.jpg", "images/lake.png", "docs/read me.md", "docs/notes.txt",
        ])
        source = CountingSource(session.bucket)
    }

    func complete(_ line: String, at current: String = "") -> [String] {
        Completer(source: source, current: StoragePath(normalizing: current)).complete(line).candidates.map(\.word)
    }

    @Test("commands, subcommands and options")
    func commands() {
        #expect(complete("me") == ["meta"])
        #expect(complete("meta ") == ["get", "set", "unset", "rename", "copy"])
        #expect(complete("meta u") == ["unset"])
        #expect(complete("page ") == ["next", "token"])
        #expect(complete("ls --a") == ["--all"])
        #expect(complete("put --") == ["--raw", "--content-type", "--md5", "--data"])
        #expect(complete("pwd; e") == ["echo", "explain", "exit"])
        #expect(complete("help ") == CommandCatalog.firstWords)
        #expect(complete("help meta ") == ["get", "set", "unset", "rename", "copy"])
        #expect(complete("help set") == [])
    }

    @Test("after explain and dry-run, the command completes as if it stood alone")
    func explainedCommands() {
        #expect(complete("explain me") == ["meta"])
        #expect(complete("explain meta s") == ["set"])
        #expect(complete("dry-run meta set cache") == ["cacheControl="])
        #expect(complete("explain ls --a") == ["--all"])
        #expect(complete("dry-run rm images/l") == ["images/lake.png"])
    }

    @Test("rules load --sample offers the samples the session's rules know")
    func ruleSamples() {
        let completer = Completer(source: source, current: .root, ruleSamples: ["owner-only", "version1", "open"])
        #expect(
            completer.complete("rules load --sample ").candidates.map(\.word) == ["owner-only", "version1", "open"])
        #expect(completer.complete("rules load --sample o").candidates.map(\.word) == ["owner-only", "open"])
        #expect(completer.complete("rules load --sample open ").candidates.isEmpty)
    }

    @Test("inside quotes the insertion is escaped for the quote, which the shell closes")
    func quotes() {
        let result = Completer(source: source, current: .root).complete("cat 'docs/read")
        #expect(
            result.openQuote == "'" && result.typed == "docs/read"
                && result.candidates.map(\.word) == ["docs/read me.md"])
        #expect(Completer.escaped("a b'c", inside: "'") == "a b'\\''c")
        #expect(Completer.escaped("a \"b\"", inside: "\"") == "a \\\"b\\\"")
        #expect(Completer.escaped("a b;c") == "a\\ b\\;c")
    }

    @Test("the shell asks the lexer whether a line continues: a \\ in a comment or quotes continues nothing")
    func continuation() {
        #expect(Lexer.continues("echo one \\"))
        #expect(Lexer.continues("ls; echo 'a b' \\"))
        #expect(!Lexer.continues("echo one \\\\"))
        #expect(!Lexer.continues("echo '\\"))
        #expect(!Lexer.continues("ls # note \\"), "a comment ends the line")
        #expect(!Lexer.continues("ls"))
    }

    @Test("paths at any depth, folders with a /, .. included, relative to the current reference")
    func paths() {
        #expect(complete("cd ") == ["docs/", "images/"])
        #expect(complete("cd im") == ["images/"])
        #expect(complete("ls images/") == ["images/mountains/"])  // ls and cd: folders only
        #expect(complete("cat images/") == ["images/forest.jpg", "images/lake.png", "images/mountains/"])  // byte order
        #expect(complete("cat m", at: "images") == ["mountains/"])
        #expect(complete("cat ../../do", at: "images/mountains") == ["../../docs/"])
        #expect(complete("cat ../do", at: "images/mountains") == [])
        #expect(complete("cd ..", at: "images") == ["../"])
        #expect(complete("rm /images/l") == ["/images/lake.png"])
        #expect(complete("cat docs/read\\ m") == ["docs/read me.md"])
        #expect(Completer.escaped("read me.md") == "read\\ me.md")
    }

    @Test("metadata keys: writable ones, and the custom keys of the current object")
    func keys() async throws {
        _ = try await session.bucket.updateMetadata(
            of: ObjectName("images/forest.jpg"), MetadataUpdate(customMetadata: ["location": .set("x")]),
            ifMetagenerationMatch: nil)
        #expect(complete("meta set cache") == ["cacheControl="])
        #expect(complete("meta set custom.lo", at: "images/forest.jpg") == ["custom.location="])
        #expect(complete("meta unset cu", at: "images/forest.jpg") == ["custom.location", "custom"])
        #expect(complete("meta set contentType=") == [])
        #expect(complete("meta set contentType=x -- images/f") == ["images/forest.jpg"])
        #expect(complete("meta set contentType=x images/f") == ["images/forest.jpg"])  // a target after an assignment
        #expect(complete("meta set custom.") == [])  // `custom.` is what was typed: nothing to add
    }

    @Test("completion reads one page at most, starting at the typed name")
    func onePage() throws {
        let names = (0..<3000).map { String(format: "users/u%05d/photo.jpg", $0) }
        try session.bucket.importObjects(
            names.map { ArchivedObject(name: try ObjectName($0), content: Data()) }, replacingEverything: false)
        source.pagesRead = []
        #expect(complete("cd users/u0299") == (2990...2999).map { String(format: "users/u%05d/", $0) })
        #expect(source.pagesRead.count == 1)
        #expect(source.pagesRead[0].startOffset == "users/u0299")
        #expect(source.pagesRead[0].maxResults == Completer.pageSize)
        let narrow = Completer(source: source, current: .root).complete("cd users/u0299")
        #expect(!narrow.truncated)
        // 3,000 users start with "u0": a page of 200 cannot show them all, and says so.
        let wide = Completer(source: source, current: .root).complete("cd users/u0")
        #expect(wide.truncated && wide.candidates.count == Completer.pageSize)
    }
}

@Suite("Tab completion by bytes (rule P7)")
struct CompleterNameBytesTests {
    @Test("canonically equivalent names are two candidates, each continuing only the bytes typed")
    func twins() throws {
        let session = try LanguageSandbox(["n/caf\u{E9}.txt", "n/cafe\u{301}.txt", "n/cafe\u{301}/x"])
        let completer = Completer(source: CountingSource(session.bucket), current: .root)
        let words = { (line: String) in completer.complete(line).candidates.map(\.word) }
        // "cafe" is a byte prefix of the decomposed names only.
        #expect(
            words("cat n/cafe").map { Array($0.utf8) }
                == ["n/cafe\u{301}.txt", "n/cafe\u{301}/"].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
                    Array($0.utf8)
                })
        #expect(words("cat n/caf\u{E9}").map { Array($0.utf8) } == [Array("n/caf\u{E9}.txt".utf8)])
        // A folder whose name ends in a combining mark after `/` still completes inside it.
        #expect(words("cat n/cafe\u{301}/").map { Array($0.utf8) } == [Array("n/cafe\u{301}/x".utf8)])
    }
}
