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
            let decoded = try format.position(decoding: format.token(for: position, bucket: "b"), bucket: "b", prefix: prefix)
            #expect(NameBytes.sameBytes(decoded.lastEntry, last) && NameBytes.sameBytes(decoded.prefix, prefix))
        }
        let position = ListPosition(prefix: "caf\u{E9}/", lastEntryKind: .item, lastEntry: "caf\u{E9}/x")
        #expect(throws: StorageError.self) {
            try format.position(decoding: format.token(for: position, bucket: "b"), bucket: "b", prefix: "cafe\u{301}/")
        }
    }
}

@Suite("Terminal cells")
struct TerminalCellsTests {
    @Test("wide characters take two cells, combining marks none, an emoji sequence two, colour escapes none")
    func widths() {
        #expect(TerminalCells.width(of: "abc") == 3)
        #expect(TerminalCells.width(of: "\u{D55C}\u{AD6D}\u{C5B4}") == 6)  // 한국어
        #expect(TerminalCells.width(of: "cafe\u{301}") == 4)
        #expect(TerminalCells.width(of: "\u{1F469}\u{200D}\u{1F4BB}") == 2)  // woman technologist
        #expect(TerminalCells.width(of: "\u{2764}\u{FE0F}") == 2)
        #expect(TerminalCells.width(of: "\u{1B}[1;34mdir/\u{1B}[0m") == 4)
        #expect(TerminalCells.width(of: "日本") == 4)
        #expect(TerminalCells.padded("\u{D55C}", to: 4) == "\u{D55C}  ")
    }

    @Test("sentences wrap at blanks between words, never inside a word or a quoted value, by cells")
    func wrapping() {
        let line = "loaded the rules of samples/rules/open.rules (the sample built into storesh)"
        for width in [20, 40, 80] {
            let lines = TerminalCells.wrap(line, toCells: width)
            #expect(lines.joined(separator: " ") == line)
            #expect(lines.allSatisfy { TerminalCells.width(of: $0) <= width || !$0.contains(" ") })
        }
        #expect(TerminalCells.wrap(line, toCells: 80) == [line])
        #expect(TerminalCells.wrap("allowed by `allow read: if true;` at x", toCells: 24) == ["allowed by", "`allow read: if true;`", "at x"])
        // A quoted span wider than the line is cut at its blanks after all.
        #expect(TerminalCells.wrap("allowed by `allow read: if true;` at x", toCells: 12) == ["allowed by", "`allow read:", "if true;` at", "x"])
        // A value after its key that cannot fit under the key's column wraps under the line's indentation.
        #expect(TerminalCells.wrap("fullPath         images/mountains/summit.jpg", toCells: 40) == ["fullPath images/mountains/summit.jpg"])
        #expect(TerminalCells.wrap("  한국어 한국어 한국어", toCells: 10) == ["  한국어", "  한국어", "  한국어"])
        #expect(TerminalCells.wrap("averyveryverylongword x", toCells: 5) == ["averyveryverylongword", "x"])
    }

    @Test("a term and its text wrap with the text's lines under the text; the term's blanks are kept")
    func hangingIndent() {
        let option = "  -n N       at most N entries, 1 to 1000 (default 1000); prefixes and items count together"
        #expect(
            TerminalCells.wrap(option, toCells: 40) == [
                "  -n N       at most N entries, 1 to",
                "             1000 (default 1000);",
                "             prefixes and items count",
                "             together",
            ])
        // A value under its key (meta get), by cells: a wide character's two.
        #expect(TerminalCells.wrap("custom.장소  Half Dome, CA, USA", toCells: 30) == ["custom.장소  Half Dome, CA,", "             USA"])
        // A term whose text starts past the line's middle hangs under the indentation.
        #expect(TerminalCells.wrap("  a-very-long-term-indeed  text that goes on", toCells: 40) == ["  a-very-long-term-indeed text that goes", "  on"])
    }
}

@Suite("A rules decision in a header")
struct ServiceAnswerHeaderTests {
    @Test("the words travel in printable ASCII and come back as they were; a long decision is cut, and says so")
    func roundTrip() {
        let words = "denied get on gs://b/caf\u{E9} 100%: no allow granted it:\n  `allow read: if false;` at storage.rules:4"
        let value = ServiceAnswer.headerValue(words)
        #expect(value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(ServiceAnswer.decision(fromHeader: value) == words)
        let long = ServiceAnswer.headerValue(String(repeating: "reason ", count: 2000))
        #expect(long.utf8.count <= ServiceAnswer.maximumHeaderBytes)
        #expect(ServiceAnswer.decision(fromHeader: long).hasSuffix("\u{2026}"))
    }

    @Test("a request's names are shown decoded in logs, and what would change how the line reads stays escaped")
    func readableTargets() {
        #expect(MessageText.readableTarget("/v0/b/demo/o/photos%2Fver%C3%A3o.jpg?alt=media") == "/v0/b/demo/o/photos/verão.jpg?alt=media")
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
