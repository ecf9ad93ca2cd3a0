import StoreshCore
import Testing

@testable import StoreshServer

/// The upload machine alone, without HTTP: the events each protocol sends it and what it answers (issue 55).
@Suite("Uploads: one machine for resumable chunks and multipart parts")
struct UploadMachineTests {
    typealias Refusal = UploadMachine.Refusal

    /// Sends one chunk of `length` bytes from `first` and says how the request ends.
    static func chunk(
        _ machine: inout UploadMachine, first: Int64?, length: Int64, total: Int64? = nil,
        ending: UploadMachine.ChunkEnding = .atDeclaredSize
    ) throws -> UploadMachine.ChunkEnd {
        let end = first.map { $0 + length }
        guard case .receive = try machine.chunkBegins(first: first, end: end, total: total, length: length) else {
            Issue.record("a chunk of an upload in progress was not received")
            return .incomplete(received: -1)
        }
        return try machine.chunkArrived(length: length, ending: ending)
    }

    @Test(
        "chunks in order land the object once its declared size has arrived; a request after it gets the answer again")
    func chunksInOrder() throws {
        var machine = UploadMachine(.chunks, limit: 1 << 20, declaredSize: 10)
        #expect(
            try machine.chunkBegins(first: 0, end: 4, total: 10, length: 4)
                == .receive(skip: 0, limit: 10, declaredSize: 10))
        #expect(try machine.chunkArrived(length: 4, ending: .atDeclaredSize) == .incomplete(received: 4))
        #expect(try Self.chunk(&machine, first: 4, length: 6, total: 10) == .land)
        #expect(machine.phase == .landing && machine.received == 10)
        let final = UploadMachine.Final(status: 200, body: .object([("name", .string("a"))]))
        machine.landed(final)
        #expect(!machine.inProgress)
        #expect(try machine.chunkBegins(first: 0, end: 10, total: 10, length: 10) == .replay(final))
        // An ended upload cannot be finalized again, nor does a cancel change it.
        #expect(throws: Refusal.ended) { try machine.finalize() }
        #expect(try machine.cancel() == .wasFinished(final))
    }

    @Test("a chunk sent again drops what was kept; one that starts past the bytes received is refused, nothing lost")
    func overlapsAndGaps() throws {
        var machine = UploadMachine(.chunks, limit: 100)
        #expect(try Self.chunk(&machine, first: 0, length: 8) == .incomplete(received: 8))
        // Bytes 4… again: the first four of the request are dropped.
        #expect(
            try machine.chunkBegins(first: 4, end: 12, length: 8) == .receive(skip: 4, limit: 100, declaredSize: nil))
        #expect(try machine.chunkArrived(length: 8, ending: .atDeclaredSize) == .incomplete(received: 12))
        // A request wholly inside what was kept adds nothing.
        #expect(try Self.chunk(&machine, first: 0, length: 5) == .incomplete(received: 12))
        #expect(throws: Refusal.startsPastReceived(first: 13, received: 12)) {
            try machine.chunkBegins(first: 13, end: 20, length: 7)
        }
        #expect(machine.phase == .open && machine.received == 12)
        // A status query (no bytes, the size given) lands when every byte is there.
        #expect(try Self.chunk(&machine, first: nil, length: 0, total: 12) == .land)
    }

    @Test("one request at a time: another while a chunk arrives or the object lands is asked to retry, a cancel too")
    func oneAtATime() throws {
        var machine = UploadMachine(.chunks, limit: 100, declaredSize: 4)
        _ = try machine.chunkBegins(first: 0, end: 4, total: 4, length: 4)
        #expect(throws: Refusal.busy) { try machine.chunkBegins(first: 0, end: 4, total: 4, length: 4) }
        #expect(throws: Refusal.busy) { try machine.cancel() }
        #expect(throws: Refusal.busy) { try machine.finalize() }
        #expect(try machine.chunkArrived(length: 4, ending: .atDeclaredSize) == .land)
        // The two protocols once disagreed here: the JSON API's cancel ended an upload whose object was landing.
        #expect(throws: Refusal.busy) { try machine.cancel() }
        #expect(throws: Refusal.busy) { try machine.chunkBegins(first: nil, length: 0) }
        machine.expire()
        #expect(machine.phase == .landing)
        // A failure a retry may cure puts it back to work, with its bytes.
        machine.landingFailed()
        #expect(machine.phase == .open && machine.received == 4)
        #expect(try Self.chunk(&machine, first: nil, length: 0, total: 4) == .land)
    }

    @Test(
        "a size that passes the server's limit ends the upload, whichever way the client gives it, and never overflows")
    func tooLarge() throws {
        var byTotal = UploadMachine(.chunks, limit: 100)
        #expect(throws: Refusal.tooLarge(size: 101)) {
            try byTotal.chunkBegins(first: 0, end: 1, total: 101, length: 1)
        }
        #expect(byTotal.phase == .cancelled)
        #expect(throws: Refusal.cancelled) { try byTotal.chunkBegins(first: 0, end: 1, length: 1) }

        var byEnd = UploadMachine(.chunks, limit: 100)
        #expect(throws: Refusal.tooLarge(size: 150)) { try byEnd.chunkBegins(first: 0, end: 150, length: 150) }

        var byLength = UploadMachine(.chunks, limit: 100)
        _ = try Self.chunk(&byLength, first: 0, length: 10, ending: .more)
        #expect(throws: Refusal.tooLarge(size: .max)) { try byLength.chunkBegins(first: 10, length: .max) }
        #expect(byLength.phase == .cancelled)

        // Bytes past the limit that arrive undeclared: the driver refuses them and says so.
        var undeclared = UploadMachine(.chunks, limit: 100)
        _ = try undeclared.chunkBegins(first: 0)
        undeclared.chunkFailed(tooLarge: true)
        #expect(undeclared.phase == .cancelled && !undeclared.inProgress)
    }

    @Test("a chunk that fails leaves the upload as it was; the size given at the start cannot change")
    func failuresKeepTheUpload() throws {
        var machine = UploadMachine(.chunks, limit: 100, declaredSize: 20)
        _ = try Self.chunk(&machine, first: 0, length: 5)
        _ = try machine.chunkBegins(first: 5, end: 10, length: 5)
        machine.chunkFailed(tooLarge: false)
        #expect(machine.phase == .open && machine.received == 5)
        #expect(throws: Refusal.sizeChanged(declared: 20, given: 30)) {
            try machine.chunkBegins(first: 5, end: 10, total: 30, length: 5)
        }
        // A chunk longer than the size declared is refused before its bytes, and the upload goes on.
        #expect(throws: Refusal.pastDeclaredSize(declared: 20)) { try machine.chunkBegins(first: 5, length: 16) }
        #expect(machine.phase == .open && machine.received == 5)
        // The whole object in one request (no Content-Range) must be the size declared.
        #expect(throws: Refusal.incomplete(received: 8, declared: 20)) {
            try Self.chunk(&machine, first: 0, length: 8, ending: .wholeObject)
        }
        #expect(machine.phase == .open && machine.received == 8)
    }

    @Test(
        "the v0 API: upload without finalize goes on, finalize lands, and a finalize short of the size announced is refused"
    )
    func firebaseCommands() throws {
        var machine = UploadMachine(.chunks, limit: 100, declaredSize: 6)
        #expect(try Self.chunk(&machine, first: nil, length: 3, ending: .more) == .incomplete(received: 3))
        #expect(throws: Refusal.incomplete(received: 3, declared: 6)) { try machine.finalize() }
        #expect(try Self.chunk(&machine, first: 3, length: 3, ending: .more) == .incomplete(received: 6))
        #expect(try machine.finalize() == .land)

        var unannounced = UploadMachine(.chunks, limit: 100)
        #expect(try Self.chunk(&unannounced, first: 0, length: 7, ending: .finalize) == .land)
        #expect(unannounced.declaredSize == 7)
        unannounced.landed(nil)
        #expect(try unannounced.chunkBegins(first: 0) == .replay(nil))
    }

    @Test("an idle upload expires unless a request is at work on it")
    func expiry() throws {
        var idle = UploadMachine(.chunks, limit: 100)
        idle.expire()
        #expect(idle.phase == .cancelled)
        var receiving = UploadMachine(.chunks, limit: 100)
        _ = try receiving.chunkBegins(first: 0)
        receiving.expire()
        #expect(receiving.inProgress)
        var parts = UploadMachine(.parts, limit: 100)
        try parts.partBegins()
        parts.expire()
        #expect(parts.inProgress)
        parts.partFailed()
        parts.expire()
        #expect(!parts.inProgress)
    }

    @Test(
        "parts arrive concurrently; while the upload completes a new part is asked to retry; after it ends none is kept"
    )
    func parts() throws {
        var machine = UploadMachine(.parts, limit: 100)
        try machine.partBegins()
        try machine.partBegins()
        #expect(machine.partsArriving == 2)
        try machine.partArrived()
        try machine.complete()
        #expect(throws: Refusal.busy) { try machine.partBegins() }
        // A part that began before the completion and arrives during it is not kept: the completion took the parts
        // it found, so the client is asked to send it again.
        #expect(throws: Refusal.busy) { try machine.partArrived() }
        #expect(throws: Refusal.busy) { try machine.complete() }
        #expect(throws: Refusal.busy) { try machine.cancel() }
        // A completion that failed: the upload is the client's again, to complete or abort.
        machine.landingFailed()
        try machine.complete()
        machine.landed(nil)
        #expect(throws: Refusal.ended) { try machine.partArrived() }
        #expect(throws: Refusal.ended) { try machine.partBegins() }
        #expect(throws: Refusal.ended) { try machine.complete() }

        var aborted = UploadMachine(.parts, limit: 100)
        #expect(try aborted.cancel() == .cancelled)
        #expect(try aborted.cancel() == .wasCancelled)
        #expect(throws: Refusal.ended) { try aborted.partBegins() }
    }

    @Test(
        "any order of events: no trap, bytes within the limit and the size declared, a landing only when every byte is there"
    )
    func randomEvents() {
        var generator = SplitMix(seed: 55)
        for _ in 0..<2_000 {
            let limit = Int64(generator.next() % 64)
            var machine = UploadMachine(
                .chunks, limit: limit, declaredSize: generator.next() % 3 == 0 ? Int64(generator.next() % 80) : nil)
            for _ in 0..<20 {
                let number = { Int64(generator.next() % 96) - 8 }
                switch generator.next() % 8 {
                case 0, 1, 2:
                    let first = generator.next() % 4 == 0 ? nil : number()
                    let total = generator.next() % 3 == 0 ? number() : nil
                    _ = try? machine.chunkBegins(
                        first: first.map { max(0, $0) }, end: nil, total: total.map { max(0, $0) }, length: number())
                case 3, 4:
                    let endings: [UploadMachine.ChunkEnding] = [.atDeclaredSize, .wholeObject, .finalize, .more]
                    let result = try? machine.chunkArrived(
                        length: max(0, number()), ending: endings[Int(generator.next() % 4)])
                    if result == .land { #expect(machine.declaredSize == machine.received) }
                case 5: machine.chunkFailed(tooLarge: generator.next() % 2 == 0)
                case 6: if generator.next() % 2 == 0 { machine.landed(nil) } else { machine.landingFailed() }
                default: _ = try? machine.cancel()
                }
                #expect(machine.received >= 0 && machine.received <= max(limit, 0))
                if case .landing = machine.phase { #expect(machine.declaredSize == machine.received) }
            }
        }
    }
}

/// A small seeded generator, so that a failure can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
