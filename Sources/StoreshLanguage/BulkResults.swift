import Foundation
import StoreshCore

/// The result of a command over many objects (`meta set`, `meta unset`, `meta rename`, `rm`), printed as the
/// objects pass rather than gathered first: a bulk edit of ten million objects keeps in memory only what its
/// summary counts. For people, the plan of a few objects is shown in blocks (`HumanRenderer.plan`), a longer one a
/// line per object as it comes, then the summary by change; as JSON, the command's one document, written in
/// pieces once it is long.
final class BulkResults {
    enum Kind {
        case updates
        case deletions
    }

    private let kind: Kind
    private let output: SessionOutput
    private let json: Bool
    private let color: Bool
    private let summaryOnly: Bool
    private let dryRun: Bool
    /// The terminal's width, when results go to one: each line wraps to it between words.
    private let width: Int?

    /// Up to this many lines, each changed object gets its name and one line per property; past it, one line per
    /// object (a long plan stays readable in a terminal's scrollback).
    static let screenful = 24
    /// More changed objects than this, and the changes end with a summary grouped by change.
    static let longPlan = 10

    private(set) var updatedCount = 0
    private(set) var unchangedCount = 0
    private(set) var deletedCount = 0
    private var firstName: String?

    /// People: the first objects' blocks, held while they fit a screen; nil once the plan is printed a line each.
    private var blocks: [(name: String, differences: [PropertyDifference])]? = []
    private var blockLines = 0
    /// The summary by change: each distinct change with how many objects it is made to, and where it was first met
    /// (the object's count, then the change's place among that object's), which orders changes to as many objects.
    /// Keyed by the difference itself (its bytes), formatted only when printed: hashing three short strings per
    /// property is far cheaper than formatting a line for each of a million objects.
    private var counts: [PropertyDifference: (objects: Int, firstMet: (object: Int, place: Int))] = [:]
    private var otherChanges = 0
    /// The differences of the last few runs of objects with the same ones, with how many objects each run has and
    /// where it was first met. A bulk edit most often makes one change to every object, or one
    /// of a few (a property that had one of a few values): an object's differences are then compared with these,
    /// not hashed, and a run is counted once it falls out of them.
    private var runs: [Run] = []
    /// The run the last object was counted into.
    private var lastRun = 0
    static let runsKept = 4
    /// Distinct changes past this many are counted together (each object may have a value of its own).
    static let distinctChangesShown = 1000

    private struct Run {
        var differences: [PropertyDifference]
        var objects: Int
        /// `updatedCount` when the run began, and when it last took an object.
        let firstMet: Int
        var lastMet: Int
    }

    /// JSON: the members held until the document is long enough to be written in pieces.
    private var heldUpdated: [JSONValue] = []
    private var heldNames: [String] = []
    private var streaming = false
    /// JSON, once streaming: the names of the second array (unchanged), kept until the first array ends.
    private var spilled: NameSpill?
    /// Entries a JSON document holds before it is written in pieces.
    static let wholeDocumentEntries = 1000

    /// Told of each object as it passes, while the results do not scroll past on the same terminal.
    private let progress: ProgressMeter?

    init(_ kind: Kind, output: SessionOutput, options: RunOptions, progress: ProgressMeter? = nil) {
        self.progress = options.printsEachObjectOnTerminal ? nil : progress
        self.progress?.begin(options.dryRun ? "planning" : kind == .updates ? "updating" : "deleting")
        self.kind = kind
        self.output = output
        self.json = options.json
        self.color = options.color
        self.summaryOnly = options.summaryOnly
        self.dryRun = options.dryRun
        self.width = options.terminalWidth
    }

    /// A line for people, wrapped to the terminal's width.
    private func say(_ line: String) { output.result(line, wrappedTo: width) }

    func updated(_ name: String, _ differences: [PropertyDifference]) {
        updatedCount += 1
        progress?.advance()
        if firstName == nil { firstName = name }
        if json { return holdOrWrite(updated: JSONRenderer.changedDocument(path: name, differences)) }
        count(differences)
        guard !summaryOnly else { return }
        if blocks != nil {
            let lines = HumanRenderer.plan(name: name, differences).count
            if blockLines + lines <= Self.screenful {
                blocks?.append((name, differences))
                blockLines += lines
                return
            }
            // Longer than a screen: a line per object from here on, starting with those held.
            for held in blocks ?? [] { say(HumanRenderer.planLine(name: held.name, held.differences)) }
            blocks = nil
        }
        say(HumanRenderer.planLine(name: name, differences))
    }

    func unchanged(_ name: String) {
        unchangedCount += 1
        progress?.advance()
        if firstName == nil { firstName = name }
        if json { holdOrWrite(name: name) }
    }

    func deleted(_ name: String) {
        deletedCount += 1
        progress?.advance()
        if firstName == nil { firstName = name }
        if json { return holdOrWrite(name: name) }
        if dryRun && !summaryOnly {
            // The first object waits: a command that deletes one object says so in its last line alone.
            if deletedCount == 2, let firstName { say("would delete \(MessageText.oneLine(firstName))") }
            if deletedCount >= 2 { say("would delete \(MessageText.oneLine(name))") }
        }
    }

    /// The last lines (people), or the document's end (JSON). `single`: the command named one object.
    func finish(single: Bool) {
        progress?.end()
        if json { return finishDocument() }
        switch kind {
        case .updates:
            while !runs.isEmpty { countRun(at: 0) }
            for held in blocks ?? [] { HumanRenderer.plan(name: held.name, held.differences).forEach(say) }
            if updatedCount > Self.longPlan || (summaryOnly && updatedCount > 0) {
                say("summary, by change:")
                let sorted = counts.sorted { first, second in
                    let (a, b) = (first.value, second.value)
                    return a.objects != b.objects ? a.objects > b.objects : a.firstMet < b.firstMet
                }
                for (change, count) in sorted {
                    let text =
                        "\(change.key): \(Formatting.planValue(change.old)) → \(Formatting.planValue(change.new))"
                    say("  \(MessageText.oneLine(text)): \(MessageText.counted(count.objects, "object"))")
                }
                if otherChanges > 0 {
                    say("  (\(MessageText.counted(otherChanges, "other change")), each to fewer objects)")
                }
            }
            let verb = dryRun ? "would update" : "updated"
            if single && updatedCount + unchangedCount == 1, let firstName {
                say(
                    updatedCount == 0
                        ? "\(MessageText.oneLine(firstName)): unchanged (already as asked)"
                        : "\(verb) \(MessageText.oneLine(firstName))")
            } else {
                say(
                    "\(verb) \(MessageText.counted(updatedCount, "object")), \(MessageText.grouped(unchangedCount)) unchanged"
                )
            }
        case .deletions:
            let verb = dryRun ? "would delete" : "deleted"
            say(
                deletedCount == 1 && firstName != nil
                    ? "\(verb) \(MessageText.oneLine(firstName!))"
                    : "\(verb) \(MessageText.counted(deletedCount, "object"))")
        }
    }

    // MARK: People

    /// Counts an object's differences into the run that has the same ones (the run counted last first), or a new
    /// run (the run met least lately counted, when there are already as many as are kept). Runs are distinct, so
    /// at most one has them. The same array buffer is the same differences: the local bulk edit shares one array
    /// among a page's objects that make one change, which are then counted without comparing a byte (a run found
    /// by its bytes takes the array it was found with, the one the page's next objects share).
    private func count(_ differences: [PropertyDifference]) {
        let buffer = differences.withUnsafeBufferPointer { $0.baseAddress }
        var index = runs.indices.first { runs[$0].differences.withUnsafeBufferPointer { $0.baseAddress } == buffer }
        if index == nil {
            index =
                (lastRun < runs.count && runs[lastRun].differences == differences ? lastRun : nil)
                ?? runs.indices.first { $0 != lastRun && runs[$0].differences == differences }
            if let index { runs[index].differences = differences }
        }
        if let index {
            runs[index].objects += 1
            runs[index].lastMet = updatedCount
            lastRun = index
            return
        }
        if runs.count == Self.runsKept, let leastLately = runs.indices.min(by: { runs[$0].lastMet < runs[$1].lastMet })
        {
            countRun(at: leastLately)
        }
        runs.append(Run(differences: differences, objects: 1, firstMet: updatedCount, lastMet: updatedCount))
        lastRun = runs.count - 1
    }

    /// Adds a run to the summary's counts, and forgets it. A change the summary has not met is shown while fewer
    /// than `distinctChangesShown` are: the first met, but for the changes of the runs kept at that moment.
    private func countRun(at index: Int) {
        let run = runs.remove(at: index)
        for (place, change) in run.differences.enumerated() {
            let firstMet = (object: run.firstMet, place: place)
            if let known = counts[change] {
                counts[change] = (known.objects + run.objects, known.firstMet < firstMet ? known.firstMet : firstMet)
            } else if counts.count < Self.distinctChangesShown {
                counts[change] = (run.objects, firstMet)
            } else {
                otherChanges += run.objects
            }
        }
    }

    // MARK: JSON

    private var firstArray: String { kind == .updates ? "updated" : "deleted" }

    private func holdOrWrite(updated document: JSONValue) {
        if streaming { return pieceOfFirstArray(document.serialized) }
        heldUpdated.append(document)
        startStreamingIfLong()
    }

    private func holdOrWrite(name: String) {
        guard streaming else {
            heldNames.append(name)
            return startStreamingIfLong()
        }
        switch kind {
        case .deletions: pieceOfFirstArray(JSONValue.string(name).serialized)
        case .updates: spill(name)
        }
    }

    /// Whether the first array (updated, deleted) has a member written: the next one is after a comma.
    private var firstArrayStarted = false
    private func pieceOfFirstArray(_ member: String) {
        piece((firstArrayStarted ? "," : "") + member)
        firstArrayStarted = true
    }

    private func startStreamingIfLong() {
        guard heldUpdated.count + heldNames.count >= Self.wholeDocumentEntries else { return }
        streaming = true
        piece("{\"\(firstArray)\":[")
        let first = kind == .updates ? heldUpdated.map(\.serialized) : heldNames.map { JSONValue.string($0).serialized }
        first.forEach(pieceOfFirstArray)
        if kind == .updates { heldNames.forEach(spill) }
        heldUpdated = []
        heldNames = []
    }

    private func spill(_ name: String) {
        if spilled == nil { spilled = NameSpill() }
        spilled?.append(name)
    }

    private func finishDocument() {
        let dryRunMember: [(String, JSONValue)] = dryRun ? [("dryRun", .bool(true))] : []
        guard streaming else {
            let members: [(String, JSONValue)] =
                kind == .updates
                ? [("updated", .array(heldUpdated)), ("unchanged", .array(heldNames.map { .string($0) }))]
                : [("deleted", .array(heldNames.map { .string($0) }))]
            return output.result(JSONValue.object(members + dryRunMember).serialized)
        }
        piece("]")
        if kind == .updates {
            piece(",\"unchanged\":[")
            var first = true
            spilled?.forEachName { name in
                piece((first ? "" : ",") + JSONValue.string(name).serialized)
                first = false
            }
            piece("]")
        }
        piece((dryRun ? ",\"dryRun\":true" : "") + "}\n")
    }

    private var pending = ""
    /// Pieces of the document, written a few kilobytes at a time.
    private func piece(_ text: String) {
        pending += text
        if pending.utf8.count >= 1 << 16 || text.hasSuffix("\n") {
            output.resultBytes(Data(pending.utf8))
            pending = ""
        }
    }
}

/// Names kept for later in a temporary file that is gone once closed (`tmpfile`), past a few thousand held in
/// memory.
private final class NameSpill {
    private var held: [String] = []
    private var file: UnsafeMutablePointer<FILE>?
    static let heldInMemory = 4096

    func append(_ name: String) {
        if file == nil && held.count < Self.heldInMemory { return held.append(name) }
        if file == nil { file = tmpfile() }
        guard let file else { return held.append(name) }
        var line = Array(name.utf8)
        // A line per name; a name with a newline (or that starts with a quote) is written as its JSON string.
        if line.contains(UInt8(ascii: "\n")) || line.first == UInt8(ascii: "\"") {
            line = Array(JSONValue.string(name).serialized.utf8)
        }
        line.append(UInt8(ascii: "\n"))
        fwrite(line, 1, line.count, file)
    }

    func forEachName(_ body: (String) -> Void) {
        held.forEach(body)
        guard let file else { return }
        rewind(file)
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        while true {
            let length = getline(&buffer, &capacity, file)
            guard length > 0, let buffer else { break }
            let bytes = UnsafeRawBufferPointer(start: buffer, count: length - 1)
            let text = String(decoding: bytes, as: UTF8.self)
            if text.hasPrefix("\""), let data = text.data(using: .utf8),
                let decoded = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) as? String
            {
                body(decoded)
            } else {
                body(text)
            }
        }
    }

    deinit { if let file { fclose(file) } }
}

extension SessionOutput {
    func result(contentsOf lines: [String]) { lines.forEach(result) }

    /// A line for people: wrapped between words to `width` cells, when results go to a terminal that wide.
    func result(_ line: String, wrappedTo width: Int?) {
        guard let width else { return result(line) }
        TerminalCells.wrap(line, toCells: width).forEach(result)
    }
}
