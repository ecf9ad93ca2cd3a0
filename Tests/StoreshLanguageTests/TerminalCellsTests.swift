import StoreshLanguage
import Testing

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
        #expect(
            TerminalCells.wrap("allowed by `allow read: if true;` at x", toCells: 24) == [
                "allowed by", "`allow read: if true;`", "at x",
            ])
        // A quoted span wider than the line is cut at its blanks after all.
        #expect(
            TerminalCells.wrap("allowed by `allow read: if true;` at x", toCells: 12) == [
                "allowed by", "`allow read:", "if true;` at", "x",
            ])
        // A value after its key that cannot fit under the key's column wraps under the line's indentation.
        #expect(
            TerminalCells.wrap("fullPath         images/mountains/summit.jpg", toCells: 40) == [
                "fullPath images/mountains/summit.jpg"
            ])
        #expect(TerminalCells.wrap("  한국어 한국어 한국어", toCells: 10) == ["  한국어", "  한국어", "  한국어"])
        #expect(TerminalCells.wrap("averyveryverylongword x", toCells: 5) == ["averyveryverylongword", "x"])
        // A file's absolute path wider than the line is broken after a `/`, its pieces together where they fit,
        // not cut by the terminal's edge; joined again, it is the path. A URL or code stays whole.
        let path = "/tmp/pytest-of-root/pytest-334/popen-gw0/test_import_export_check_and_a0/big.bucket:"
        let broken = TerminalCells.wrap("checking " + path + " now", toCells: 40)
        #expect(
            broken == [
                "checking /tmp/pytest-of-root/pytest-334/", "popen-gw0/", "test_import_export_check_and_a0/",
                "big.bucket: now",
            ])
        #expect(
            broken.joined(separator: "\n").replacingOccurrences(of: "/\n", with: "/") == "checking " + path + " now")
        let url = "https://storage.googleapis.com/storage/v1/b/teaching/o/images%2Fmountains%2Fsummit.jpg"
        #expect(TerminalCells.wrap("GET " + url, toCells: 40) == ["GET", url])
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
        #expect(
            TerminalCells.wrap("custom.장소  Half Dome, CA, USA", toCells: 30) == [
                "custom.장소  Half Dome, CA,", "             USA",
            ])
        // A term whose text starts past the line's middle hangs under the indentation.
        #expect(
            TerminalCells.wrap("  a-very-long-term-indeed  text that goes on", toCells: 40) == [
                "  a-very-long-term-indeed text that goes", "  on",
            ])
    }
}
