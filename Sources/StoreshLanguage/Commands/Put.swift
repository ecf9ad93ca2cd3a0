import Foundation
import StoreshCore

/// `put [--raw] [--content-type T] [--md5 B64] (LOCAL_FILE | --data TEXT) [DEST]`: writes an object (rule M3).
package struct PutCommand: LanguageCommand, Equatable {
    package enum Source: Sendable, Equatable {
        case file(Word)
        case data(Word)
    }

    package var raw = false
    package var contentType: Word?
    package var md5: Word?
    package var source: Source
    package var destination: Word?

    package init(
        raw: Bool = false, contentType: Word? = nil, md5: Word? = nil, source: Source, destination: Word? = nil
    ) {
        self.raw = raw
        self.contentType = contentType
        self.md5 = md5
        self.source = source
        self.destination = destination
    }

    package static let declaration = CommandDeclaration(
        "put", group: .content, usage: "put [--raw] [--content-type T] [--md5 B64] (LOCAL_FILE | --data TEXT) [DEST]",
        summary: "write an object from a local file or from TEXT",
        details: [
            "DEST defaults to the local file's name under the current reference (with --data: the",
            "current reference); a DEST ending in / is a folder. --raw takes DEST exactly as written,",
            "without normalising it, so that names like wrongPrefix//sadItem can be made.",
            "--md5 checks the content's MD5 (base64).",
        ], example: "put --data 'hello' --content-type text/plain notes/hello.txt",
        options: ["--raw", "--content-type", "--md5", "--data"], changesBucket: true, completion: .objects,
        sdk: ["putDataAsync(_:metadata:)", "putFileAsync(from:metadata:)", "putData", "putFile"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        var data: Word?
        var positionals: [Word] = []
        var optionsEnded = false
        while let word = arguments.next() {
            if !optionsEnded && word.isOption {
                switch word.text {
                case "--raw": raw = true
                case "--content-type": contentType = try arguments.optionValue(for: word)
                case "--md5": md5 = try arguments.optionValue(for: word)
                case "--data": data = try arguments.optionValue(for: word)
                case "--": optionsEnded = true
                default: throw arguments.unknownOption(word)
                }
            } else {
                positionals.append(word)
            }
        }
        if let data {
            if positionals.count > 1 {
                throw Diagnostic.syntax(
                    "with --data, `put` takes at most one DEST; '\(positionals[1].text)' is one too many",
                    at: positionals[1].location)
            }
            source = .data(data)
            destination = positionals.first
        } else {
            guard let file = positionals.first else {
                throw Diagnostic.syntax(
                    "`put` needs a LOCAL_FILE or --data TEXT: \(Self.declaration.usage)", at: arguments.afterName)
            }
            if positionals.count > 2 {
                throw Diagnostic.syntax(
                    "`put` takes a LOCAL_FILE and at most one DEST; '\(positionals[2].text)' is one too many",
                    at: positionals[2].location)
            }
            source = .file(file)
            destination = positionals.count > 1 ? positionals[1] : nil
        }
        if raw && destination == nil {
            throw Diagnostic.syntax("--raw needs a DEST: the exact object name to write", at: arguments.afterName)
        }
    }

    /// The local file's name, which DEST defaults to (none with --data).
    var fileName: String? {
        guard case .file(let word) = source else { return nil }
        return URL(fileURLWithPath: word.text).lastPathComponent
    }

    /// Where it writes: DEST as given, DEST/ with the file's name, or the file's name here.
    func objectName(in session: Session, at here: SourceLocation) throws -> ObjectName {
        if let word = destination {
            if raw { return try session.located(word.location) { try ObjectName(word.text) } }
            try session.refusePattern(word)
            if word.text.hasSuffix("/"), let fileName {
                // Like cp: DEST/ is a folder, and the file keeps its name in it.
                let folder = try session.resolve(word)
                return try session.located(word.location) { try folder.child(fileName).objectName() }
            }
            return try session.objectName(word, raw: false, at: here)
        }
        if let fileName { return try session.located(here) { try session.current.child(fileName).objectName() } }
        return try session.located(here) { try session.current.objectName() }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        var content = Data()
        var largeFile: (any ContentSource)?
        switch source {
        case .file(let word):
            largeFile = try session.located(word.location) { try session.files.source(word.text) }
            if largeFile == nil { content = try session.located(word.location) { try session.files.read(word.text) } }
        case .data(let word):
            content = Data(word.text.utf8)
        }
        let name = try objectName(in: session, at: here)
        var writeOptions = WriteOptions()
        if let contentType { writeOptions.properties[.contentType] = contentType.text }
        if let md5 {
            guard ContentHash.isMD5Base64(md5.text) else {
                throw Diagnostic.running(
                    .invalidArgument(
                        "--md5 takes the base64 of a 16-byte MD5 digest, such as XUFAKrxLKna5cZ2REBfFkg=="),
                    at: md5.location)
            }
            writeOptions.expectedMD5 = md5.text
        }
        let metadata = try await session.located(destination?.location ?? here) {
            if let largeFile {
                return try await session.target.write(
                    from: largeFile, to: name, options: writeOptions, precondition: .none)
            }
            return try await session.target.write(content, to: name, options: writeOptions)
        }
        session.deliver(.written(metadata, dryRun: session.options.dryRun))
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let name = try objectName(in: session, at: here)
        let current = try await session.metadataIfPresent(of: (name, nil, destination), at: here)
        var file: String?
        if case .file(let word) = source { file = word.text }
        return [
            Explainer.upload(
                bucket: session.target.name, name: name.rawValue, fromFile: file, contentType: contentType?.text,
                current: current)
        ]
    }
}
