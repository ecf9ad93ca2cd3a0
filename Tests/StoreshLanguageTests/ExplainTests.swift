import Foundation
import StoreshCore
import StoreshTestSupport
import Testing

@testable import StoreshLanguage

/// `explain`: each command's requests in the Firebase SDK for Apple platforms, the v0 and JSON REST APIs, and the
/// rules method, as the Firebase docs write them; nothing runs.
@Suite("explain (teaching)")
struct ExplainTests {
    func explained(_ text: String, in session: LanguageSandbox) async throws -> [[String: Any]] {
        let (status, output) = try await session.run(text)
        #expect(status == .success, "\(output.errors)")
        let document = try JSONSerialization.jsonObject(with: Data(output.lines.last!.utf8)) as! [String: Any]
        return document["requests"] as! [[String: Any]]
    }

    @Test("a page of a listing: list(maxResults:), the v0 and JSON API URLs, rules method list")
    func list() async throws {
        let session = try LanguageSandbox(["files/uid/a.txt"])
        let requests = try await explained("explain ls -n 100 files/uid", in: session)
        #expect(requests.count == 1)
        #expect(
            (requests[0]["swift"] as! String).hasPrefix(
                "let result = try await storage.reference().child(\"files/uid\").list(maxResults: 100)"))
        #expect(
            requests[0]["firebaseREST"] as? String
                == "GET https://firebasestorage.googleapis.com/v0/b/teaching/o?prefix=files%2Fuid%2F&delimiter=%2F&maxResults=100"
        )
        // storesh's own request: one entry more than the page, to know whether another follows.
        #expect(
            requests[0]["cloudStorageREST"] as? String
                == "GET https://storage.googleapis.com/storage/v1/b/teaching/o?prefix=files%2Fuid%2F&delimiter=%2F&maxResults=101 (storesh asks one entry more, to know whether another page follows)"
        )
        #expect(requests[0]["rulesMethod"] as? String == "list")
        let all = try await explained("explain ls --all files/uid", in: session)
        #expect(
            (all[0]["swift"] as! String).hasPrefix(
                "let result = try await storage.reference().child(\"files/uid\").listAll()"))
    }

    @Test("updateMetadata: StorageMetadata's fields set, nil for an unset, null in the REST body; rules method update")
    func updateMetadata() async throws {
        let session = try LanguageSandbox(["images/forest.jpg"])
        let set = try await explained(
            "explain meta set cacheControl=\"public,max-age=300\" contentType=image/jpeg images/forest.jpg", in: session
        )
        #expect(
            set[0]["swift"] as? String == """
                let newMetadata = StorageMetadata()
                newMetadata.cacheControl = "public,max-age=300"
                newMetadata.contentType = "image/jpeg"
                let updated = try await storage.reference().child("images/forest.jpg").updateMetadata(newMetadata)
                """)
        // The v0 request storesh sends signed in (FirebaseWire): what changes for the object as read (the SDK's
        // would name both fields the app set).
        #expect(
            set[0]["firebaseREST"] as? String == """
                PATCH https://firebasestorage.googleapis.com/v0/b/teaching/o/images%2Fforest.jpg
                {"cacheControl":"public,max-age=300"}
                """)
        // storesh's own request, as CloudStorageWire builds the backend's: guarded by the state it read (rule G5),
        // the body naming only what changes (the content type is image/jpeg already).
        let generation = try await session.bucket.metadata(of: ObjectName("images/forest.jpg")).generation
        #expect(
            set[0]["cloudStorageREST"] as? String == """
                PATCH https://storage.googleapis.com/storage/v1/b/teaching/o/images%2Fforest.jpg?ifGenerationMatch=\(generation)&ifMetagenerationMatch=1
                {"cacheControl":"public,max-age=300"}
                """)
        #expect(set[0]["rulesMethod"] as? String == "update")
        _ = try await session.run("meta set custom.old=x -- images/forest.jpg")
        let unset = try await explained("explain meta unset contentType custom.old -- images/forest.jpg", in: session)
        // A deletion starts from the object's metadata: the Swift SDK sends null only for what metadata it read no
        // longer has (StorageMetadata.updatedMetadata()); a new StorageMetadata() would send nothing for it.
        let swift = unset[0]["swift"] as! String
        #expect(
            swift.hasPrefix(
                "let ref = storage.reference().child(\"images/forest.jpg\")\nlet metadata = try await ref.getMetadata()\n"
            ))
        #expect(
            swift.contains("metadata.contentType = nil") && swift.contains("custom[\"old\"] = nil")
                && swift.hasSuffix("ref.updateMetadata(metadata)"))
        #expect(!swift.contains("StorageMetadata()"))
        #expect((unset[0]["firebaseREST"] as! String).hasSuffix("{\"contentType\":null,\"metadata\":{\"old\":null}}"))
        #expect(
            (unset[0]["cloudStorageREST"] as! String).contains(
                "?ifGenerationMatch=\(generation)&ifMetagenerationMatch=2\n"))
        // Nothing ran.
        let (_, output) = try await session.run("meta get images/forest.jpg")
        #expect(!output.lines.joined().contains("cacheControl"))
    }

    @Test("rule G7: explain meta unset custom shows the request storesh sends, which keeps the download tokens")
    func unsetCustomKeepsTokens() async throws {
        let session = try LanguageSandbox(["images/forest.jpg", "images/lake.png"])
        _ = try await session.run("meta set custom.firebaseStorageDownloadTokens=tok custom.k=v -- images/forest.jpg")
        _ = try await session.run("meta set custom.firebaseStorageDownloadTokens=tok -- images/lake.png")
        let requests = try await explained(
            "explain meta unset custom -- images/forest.jpg images/lake.png", in: session)
        let rest = try #require(requests.last?["cloudStorageREST"] as? String)
        #expect(rest.hasSuffix("\n{\"metadata\":{\"k\":null}}"))
        // lake.png holds only its token: storesh sends it nothing, as explain says.
        #expect((requests.last?["purpose"] as? String)?.contains("1 more is already as asked") == true)
    }

    @Test("a pattern: the walk that finds its objects, then one request for each; get, delete, upload")
    func patternsAndObjects() async throws {
        let session = try LanguageSandbox(["images/a.jpg", "images/b.jpg", "images/c.png"])
        let requests = try await explained("explain rm images/*.jpg", in: session)
        #expect(requests.count == 2 && requests[0]["rulesMethod"] as? String == "list")
        #expect((requests[0]["purpose"] as! String).contains("(2 found)"))
        #expect((requests[1]["purpose"] as! String).hasSuffix("and the same for 1 other object"))
        #expect(requests[1]["swift"] as? String == "try await storage.reference().child(\"images/a.jpg\").delete()")
        #expect(try await session.names().count == 3)
        #expect(try await explained("explain meta get images/c.png", in: session)[0]["rulesMethod"] as? String == "get")
        let upload = try await explained("explain put --data hi --content-type text/plain notes/hi.txt", in: session)
        #expect(
            (upload[0]["swift"] as! String).hasSuffix("child(\"notes/hi.txt\").putDataAsync(data, metadata: metadata)"))
        #expect(try await session.names().count == 3)
    }

    @Test("help with an SDK name leads to the storesh command")
    func helpBySDKName() async throws {
        let session = try LanguageSandbox()
        for (name, command) in [
            ("listAll", "ls"), ("listAll()", "ls"), ("updateMetadata", "meta set"), ("getMetadata", "meta get"),
            ("putData", "put"), ("delete()", "rm"),
        ] {
            let (status, output) = try await session.run("help \(name)", json: false)
            #expect(status == .success && output.lines.joined().contains("usage: \(command)"), "\(name)")
        }
        #expect(throws: Diagnostic.self) { try Parser.parse(SourceText(name: "t", text: "help listEverything")) }
        // `list` is the SDK's list(maxResults:) first, then the subcommand of that name; `token` a subcommand alone.
        #expect(CommandCatalog.helps(for: "list").map(\.name) == ["ls", "page next", "snapshot list"])
        #expect(CommandCatalog.helps(for: "token").map(\.name) == ["page token"])
    }

    @Test("run --explain: every command explained, a cd followed, nothing changed")
    func explainWholeScript() async throws {
        let session = try LanguageSandbox(["images/a.jpg"])
        let output = CapturedOutput()
        let script = try Parser.parse(
            SourceText(name: "t", text: "cd images\nmeta set cacheControl=x a.jpg\nrm a.jpg\n"))
        var options = RunOptions(json: true)
        options.explainOnly = true
        let interpreter = Session(bucket: session.bucket, output: output, files: session.files, options: options)
        #expect(await interpreter.run(script) == .success)
        #expect(output.lines.count == 3)
        #expect(
            output.lines[1].contains("\"explain\":\"line 2: meta set\"") && output.lines[1].contains("images%2Fa.jpg"))
        #expect(try await session.names() == ["images/a.jpg"])
    }
}
