/// How many columns of a terminal text takes: names are shown by cells, not characters, so that columns line up
/// under Korean, Chinese or Japanese names (two cells a character), combining marks (none) and emoji sequences
/// (two cells, however many scalars). The colour escapes storesh itself writes (`ESC [ … m`) take none.
package enum TerminalCells {
    /// The cells `text` takes on a terminal.
    package static func width(of text: String) -> Int {
        var cells = 0
        var inEscape = false
        for cluster in text {
            let scalars = cluster.unicodeScalars
            guard let first = scalars.first else { continue }
            if inEscape {
                // A control sequence ends with its final byte, a letter.
                if first.properties.isAlphabetic { inEscape = false }
                continue
            }
            if first == "\u{1B}" {
                inEscape = true
                continue
            }
            cells += width(ofCluster: scalars)
        }
        return cells
    }

    /// Blanks as wide as `text` on a terminal (its tabs kept as tabs): what a caret under the column after it stands
    /// behind, under wide characters and combining marks alike.
    package static func blanks(under text: String) -> String {
        var output = ""
        for cluster in text {
            if cluster == "\t" {
                output += "\t"
            } else {
                output += String(repeating: " ", count: width(ofCluster: cluster.unicodeScalars))
            }
        }
        return output
    }

    /// `text` followed by blanks up to `cells` cells (none when it is as wide already).
    package static func padded(_ text: String, to cells: Int) -> String {
        text + String(repeating: " ", count: max(0, cells - width(of: text)))
    }

    /// `line` cut into lines of at most `cells` cells, at blanks between words only: never inside a word, nor
    /// inside a span quoted with `"` or `` ` `` (a value, a rule). A word longer than a line stands alone on one;
    /// but a file's absolute path longer than a line (a bucket file deep in a folder: how long depends on the
    /// machine) is broken after a `/`, its pieces kept together where they fit, rather than cut by the terminal
    /// wherever its edge falls. (Code and URLs, which `explain` shows to be copied, stay whole.)
    ///
    /// Continued lines hang under the line's text: its indentation, or, when the line is a term and its text
    /// apart by two blanks or more (`-n N       at most N entries`, `custom.location  Half Dome`), under the
    /// text, when that column is in the line's first half. The first line's head is kept as written.
    package static func wrap(_ line: String, toCells cells: Int) -> [String] {
        // Text of several lines (a help text): each wrapped on its own.
        if line.utf8.contains(UInt8(ascii: "\n")) {
            return line.split(separator: "\n", omittingEmptySubsequences: false).flatMap {
                wrap(String($0), toCells: cells)
            }
        }
        guard cells > 0, width(of: line) > cells else { return [line] }
        let hanging = hangingHead(of: line, within: cells)
        var head = hanging.head
        var parts = words(of: hanging.body)
        let indentation = String(line.prefix { $0 == " " })
        // A word that cannot fit under the text's column (a long path after its key) gives up the column: the
        // line then wraps under its indentation.
        if head.count > indentation.count, parts.contains(where: { width(of: $0) > cells - width(of: head) }) {
            head = indentation
            parts = words(of: line.dropFirst(indentation.count))
        }
        let headCells = width(of: head)
        // A quoted span wider than the line is cut at its blanks after all; a word that is wider alone stands alone.
        parts = parts.flatMap { part in
            width(of: part) > cells - headCells && part.contains(" ")
                ? part.split(separator: " ").map(String.init) : [part]
        }
        // Each piece, and whether it goes on from the one before without a blank (a path broken after a `/`).
        let pieces: [(text: String, continues: Bool)] = parts.flatMap { part -> [(text: String, continues: Bool)] in
            guard width(of: part) > cells - headCells, part.hasPrefix("/") else { return [(part, false)] }
            return pathPieces(part).enumerated().map { ($1, $0 > 0) }
        }
        let hang = String(repeating: " ", count: headCells)
        var lines: [String] = []
        var current = head
        var currentCells = headCells
        var empty = true
        for (word, continues) in pieces {
            let wordCells = width(of: word)
            let gap = empty || continues ? 0 : 1
            if !empty && currentCells + gap + wordCells > cells {
                lines.append(current)
                current = hang + word
                currentCells = headCells + wordCells
            } else {
                current += (gap == 0 ? "" : " ") + word
                currentCells += gap + wordCells
            }
            empty = false
        }
        lines.append(current)
        return lines
    }

    /// A path's pieces, each up to and including a `/` (the last up to the end): `a/b/c` is `a/`, `b/`, `c`.
    static func pathPieces(_ path: String) -> [String] {
        var pieces: [String] = []
        var piece = ""
        for character in path {
            piece.append(character)
            if character == "/" {
                pieces.append(piece)
                piece = ""
            }
        }
        if !piece.isEmpty { pieces.append(piece) }
        return pieces
    }

    /// The words of `text`, split at blanks outside quoted spans.
    static func words(of text: Substring) -> [String] {
        var words: [String] = []
        var word = ""
        var quote: Character?
        for character in text {
            if character == " " && quote == nil {
                if !word.isEmpty { words.append(word) }
                word = ""
                continue
            }
            if character == "\"" || character == "`" { quote = quote == character ? nil : quote ?? character }
            word.append(character)
        }
        if !word.isEmpty { words.append(word) }
        return words
    }

    /// What continued lines of `line` hang under (see `wrap`), and the text after it.
    static func hangingHead(of line: String, within cells: Int) -> (head: String, body: Substring) {
        let indentation = line.prefix { $0 == " " }
        let rest = line[indentation.endIndex...]
        // A term, then two blanks or more, then text starting in the first half of the line.
        var quote: Character?
        var index = rest.startIndex
        var blanks = 0
        while index < rest.endIndex {
            let character = rest[index]
            if character == " " && quote == nil {
                blanks += 1
            } else {
                if blanks >= 2 && index > rest.startIndex {
                    let head = line[..<index]
                    if width(of: String(head)) <= cells / 2 { return (String(head), line[index...]) }
                    break
                }
                blanks = 0
                if character == "\"" || character == "`" { quote = quote == character ? nil : quote ?? character }
            }
            index = rest.index(after: index)
        }
        return (String(indentation), rest)
    }

    static func width(ofCluster scalars: Character.UnicodeScalarView) -> Int {
        var width = 0
        for scalar in scalars {
            let value = scalar.value
            // Emoji shown as pictures, and wide or fullwidth East Asian characters: two cells for the cluster.
            if scalar.properties.isEmojiPresentation || isWide(value) { return 2 }
            if value == 0xFE0F, scalar != scalars.first { return 2 }  // an emoji variation selector asks for a picture
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format, .control: continue
            default: width = max(width, 1)
            }
        }
        return width
    }

    /// East Asian Wide (W) and Fullwidth (F) blocks (Unicode's EastAsianWidth.txt, by block).
    static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x1B000...0x1B2FF, 0x1F200...0x1F2FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            true
        default:
            false
        }
    }
}
