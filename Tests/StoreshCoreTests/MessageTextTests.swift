import Testing

@testable import StoreshCore

@Suite("Messages for people")
struct MessageTextTests {
    @Test("counts are grouped by thousands whatever the locale, and the noun agrees")
    func counts() {
        #expect(MessageText.counted(1, "object") == "1 object")
        #expect(MessageText.counted(0, "object") == "0 objects")
        #expect(MessageText.counted(999, "object") == "999 objects")
        #expect(MessageText.counted(4812, "object") == "4,812 objects")
        #expect(MessageText.grouped(1_000_000) == "1,000,000")
        #expect(MessageText.grouped(-12345) == "-12,345")
    }

    @Test("a name with control characters is quoted, so it cannot split a line")
    func oneLine() {
        #expect(MessageText.oneLine("images/a.jpg") == "images/a.jpg")
        #expect(MessageText.oneLine("a\nb") == "\"a\\nb\"")
    }
}

@Suite("Names are bytes (rule P7)")
struct NamesAreBytesTests {
    @Test("canonically equivalent names are two keys, ordered by their bytes")
    func twinsAreTwo() {
        let composed = ObjectName(stored: "caf\u{E9}")
        let decomposed = ObjectName(stored: "cafe\u{301}")
        #expect("caf\u{E9}" == "cafe\u{301}")  // what Swift's String says, and why names never compare as String
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(decomposed < composed)  // "e" (0x65) before "é" (0xC3 0xA9)
    }

    @Test("a name not in NFC is marked where people read it; NUL and controls are escaped")
    func shownApart() {
        #expect(MessageText.name("caf\u{E9}.txt") == "caf\u{E9}.txt")
        #expect(MessageText.name("cafe\u{301}.txt") == "cafe\u{301}.txt (not NFC)")
        #expect(MessageText.name("\u{D55C}") == "\u{D55C}")
        #expect(MessageText.name("\u{1112}\u{1161}\u{11AB}").hasSuffix("(not NFC)"))
        #expect(MessageText.name("a\0b") == "\"a\\0b\"")
    }

    @Test("names Cloud Storage refuses for a new object, and the notes check gives stored ones")
    func refused() throws {
        for name in [".", "..", ".well-known/acme-challenge/x"] {
            #expect(throws: StorageError.self) { try ObjectName(name).checkNewObjectName() }
            #expect(ObjectName(stored: name).ruleNote?.contains("refuses") == true)
        }
        for name in ["...", "a/..", ".well-known/acme-challenge", "x/.well-known/acme-challenge/y"] {
            try ObjectName(name).checkNewObjectName()
            #expect(ObjectName(stored: name).ruleNote == nil)
        }
        #expect(ObjectName(stored: "a\0b").ruleNote?.contains("advises against") == true)
    }

    @Test("a plan's page token holds names with NUL in them")
    func tokensWithNul() throws {
        let format = PositionPageTokens(mark: "P")
        for (prefix, last) in [("a\0/", "a\0/b\0c"), ("", "x"), ("caf\u{E9}/", "caf\u{E9}/cafe\u{301}")] {
            let position = ListPosition(prefix: prefix, lastEntryKind: .item, lastEntry: last)
            let decoded = try format.position(
                decoding: format.token(for: position, bucket: "b"), bucket: "b", prefix: prefix)
            #expect(NameBytes.sameBytes(decoded.lastEntry, last) && NameBytes.sameBytes(decoded.prefix, prefix))
        }
        let position = ListPosition(prefix: "caf\u{E9}/", lastEntryKind: .item, lastEntry: "caf\u{E9}/x")
        #expect(throws: StorageError.self) {
            try format.position(decoding: format.token(for: position, bucket: "b"), bucket: "b", prefix: "cafe\u{301}/")
        }
    }
}

@Suite("Requests in logs")
struct RequestLogTextTests {
    @Test("a request's names are shown decoded in logs, and what would change how the line reads stays escaped")
    func readableTargets() {
        #expect(
            MessageText.readableTarget("/v0/b/demo/o/photos%2Fver%C3%A3o.jpg?alt=media")
                == "/v0/b/demo/o/photos/verão.jpg?alt=media")
        // Decomposed: the same look, another object (rule P7).
        #expect(MessageText.readableTarget("/v0/b/demo/o/vera%CC%83o.jpg") == "/v0/b/demo/o/verão.jpg (not NFC)")
        // Space, the URL's own syntax, a control character, a bidi override and a byte that is not UTF-8 stay escaped.
        #expect(MessageText.readableTarget("/o/a%20b%3Fc%26d%3De%25f%2Bg") == "/o/a%20b%3Fc%26d%3De%25f%2Bg")
        #expect(MessageText.readableTarget("/o/x%0Ay%1B%5B31m") == "/o/x%0Ay%1B%5B31m")
        #expect(MessageText.readableTarget("/o/%E2%80%AEgpj.exe") == "/o/%E2%80%AEgpj.exe")
        #expect(MessageText.readableTarget("/o/%FF%C3%A3%C3") == "/o/%FFã%C3")
        // Nothing to decode, or an escape cut short at the end.
        #expect(MessageText.readableTarget("/storage/v1/b/demo/o?prefix=a") == "/storage/v1/b/demo/o?prefix=a")
        #expect(MessageText.readableTarget("/o/a%2") == "/o/a%2")
        #expect(MessageText.readableTarget("/o/%ED%95%9C%EA%B8%80") == "/o/한글")
    }
}
