import StoreshCore

/// How values look in human output.
enum Formatting {
    /// `2026-11-21 09:30Z` (UTC, as the Z says), for listings.
    static func shortDate(_ timestamp: Timestamp) -> String {
        let text = timestamp.rfc3339
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5)) + "Z"
    }

    /// A value in a plan: quoted, or `(not set)`.
    static func planValue(_ value: String?) -> String {
        value.map { $0.debugDescription } ?? "(not set)"
    }

    /// Rows padded into left-aligned columns (the last column is not padded); `rightAligned` columns are
    /// padded on the left.
    static func columns(_ rows: [[String]], rightAligned: Set<Int> = []) -> [String] {
        guard let count = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: count)
        for row in rows {
            // By terminal cells: a Korean key or a name with combining marks must not shift the next column.
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], TerminalCells.width(of: cell)) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                if index == row.count - 1 && !rightAligned.contains(index) { return cell }
                let pad = String(repeating: " ", count: widths[index] - TerminalCells.width(of: cell))
                return rightAligned.contains(index) ? pad + cell : cell + pad
            }.joined(separator: "  ")
        }
    }
}
