import StoreshCore

/// The life of an upload that takes more than one request, the same for every protocol that makes one: a pure value
/// that takes an event (a chunk begins, its bytes arrived, the object landed, the client cancels) and answers with
/// what its driver does next (receive the bytes, land the object, answer, refuse). It holds no bytes and does no
/// input or output: the driver keeps the bytes in a spool and says how many arrived.
///
/// Two shapes of upload share it. Resumable uploads (the JSON API's, the XML API's `x-goog-resumable`, the v0 API's)
/// send one chunk at a time, in order, from any byte already received: a second request while a chunk's bytes
/// arrive is asked to retry. The XML API's multipart uploads send numbered parts in any order, concurrently, and
/// land when the client completes them. Either way the object lands once, in one change, so a half upload is never
/// visible; a landing that fails for a reason a retry may cure puts the upload back to work.
struct UploadMachine: Sendable, Equatable {
    enum Shape: Sendable, Equatable {
        /// One chunk at a time, in order (resumable uploads).
        case chunks
        /// Numbered parts in any order, concurrently (XML multipart uploads).
        case parts
    }

    enum Phase: Sendable, Equatable {
        /// Waiting for the next chunk, or for parts and the completion.
        case open
        /// A chunk's bytes are arriving; they were asked from byte `first` on (chunks only).
        case receiving(first: Int64)
        /// The object is being written (its last byte arrived, or the client completed the upload).
        case landing
        /// Ended by the object's landing or by a refusal for good: the answer, when one is kept to give a client
        /// that asks again.
        case finished(Final?)
        /// Cancelled by the client, by an object too large for the server, or by idling.
        case cancelled
    }

    /// The answer an upload ended with, given again to a client that asks again.
    struct Final: Sendable, Equatable {
        var status: Int
        var body: JSONValue
    }

    /// Why an event is refused; each protocol says it in its own words and status.
    enum Refusal: Error, Sendable, Equatable {
        /// Another request of the upload is in progress: retry in a moment.
        case busy
        /// The upload was cancelled.
        case cancelled
        /// The upload has ended: its object landed, or it was refused for good (parts: completed or aborted).
        case ended
        /// A chunk starts past the bytes received.
        case startsPastReceived(first: Int64, received: Int64)
        /// A chunk gives a size other than the one the upload was started for.
        case sizeChanged(declared: Int64, given: Int64)
        /// The object would pass the server's limit: the upload is cancelled, as it cannot succeed.
        case tooLarge(size: Int64)
        /// A chunk would pass the size the upload was started for: refused, the upload goes on.
        case pastDeclaredSize(declared: Int64)
        /// The last request says the object is whole, but the bytes received are not the size declared.
        case incomplete(received: Int64, declared: Int64)
    }

    /// What a chunk's driver does when the chunk's request arrives.
    enum ChunkStart: Sendable, Equatable {
        /// Receive the request's bytes, dropping the first `skip` (a chunk sent again overlaps what was kept), and
        /// keeping at most `limit` bytes in all: the object's size when the client has given it (`declaredSize`),
        /// else the server's limit.
        case receive(skip: Int64, limit: Int64, declaredSize: Int64?)
        /// The upload has finished: give its answer again.
        case replay(Final?)
    }

    /// What a chunk's driver does once the chunk's bytes have arrived (or a finalize that carries none came).
    enum ChunkEnd: Sendable, Equatable {
        /// Answer that the upload goes on, with the bytes received so far.
        case incomplete(received: Int64)
        /// Land the object: every byte has arrived.
        case land
    }

    /// How a chunk's request says whether it ends the upload.
    enum ChunkEnding: Sendable, Equatable {
        /// The upload ends when the bytes received reach the size declared (the JSON API's `Content-Range`).
        case atDeclaredSize
        /// The request carried the whole object (no `Content-Range`): it ends the upload, whatever was declared.
        case wholeObject
        /// The client says it ends the upload (the v0 API's `finalize`).
        case finalize
        /// The client says more will come (the v0 API's `upload` alone).
        case more
    }

    /// What cancelling (or aborting) does.
    enum CancelOutcome: Sendable, Equatable {
        case cancelled
        /// It had already been cancelled.
        case wasCancelled
        /// It had finished: its answer.
        case wasFinished(Final?)
    }

    let shape: Shape
    /// The most bytes the object may have (the server's limit).
    let limit: Int64
    private(set) var phase = Phase.open
    /// The bytes received, from the first on (chunks).
    private(set) var received: Int64 = 0
    /// The object's size, once the client has given it.
    private(set) var declaredSize: Int64?
    /// Parts whose bytes are arriving.
    private(set) var partsArriving = 0

    init(_ shape: Shape, limit: Int64, declaredSize: Int64? = nil) {
        self.shape = shape
        self.limit = limit
        self.declaredSize = declaredSize
    }

    /// Whether the upload may still land (it holds bytes, and counts against the server's limit of uploads).
    var inProgress: Bool {
        switch phase {
        case .open, .receiving, .landing: true
        case .finished, .cancelled: false
        }
    }

    // MARK: Chunks

    /// A chunk's request arrives, to be received from byte `first` (nil: from the bytes received), which
    /// may end at `end` (one past its last byte) and may give the object's size `total`; `length` is the count of
    /// bytes its request says it carries, when it says.
    mutating func chunkBegins(
        first: Int64?, end: Int64? = nil, total: Int64? = nil, length: Int64? = nil
    ) throws(Refusal) -> ChunkStart {
        switch phase {
        case .finished(let final): return .replay(final)
        case .cancelled: throw .cancelled
        case .receiving, .landing: throw .busy
        case .open: break
        }
        if let total {
            if let declaredSize, declaredSize != total { throw .sizeChanged(declared: declaredSize, given: total) }
            if total > limit { throw cancel(tooLarge: total) }
        }
        if let end, end > limit { throw cancel(tooLarge: end) }
        let first = first ?? received
        guard first <= received else { throw .startsPastReceived(first: first, received: received) }
        if let total { declaredSize = total }
        // The length is the client's: compared with the room left, never added (no overflow). Past the size given,
        // the chunk is wrong and the upload goes on; past the server's limit with no size given, the upload cannot
        // succeed.
        if let length, let declaredSize, length > declaredSize - first {
            throw .pastDeclaredSize(declared: declaredSize)
        }
        if let length, length > limit - first {
            let (size, overflow) = first.addingReportingOverflow(length)
            throw cancel(tooLarge: overflow ? .max : size)
        }
        phase = .receiving(first: first)
        return .receive(skip: received - first, limit: min(limit, declaredSize ?? limit), declaredSize: declaredSize)
    }

    /// The chunk's `length` bytes have arrived (those it repeated were dropped), and its request ends the upload or
    /// not as `ending` says. A refusal puts the upload back to work.
    mutating func chunkArrived(length: Int64, ending: ChunkEnding) throws(Refusal) -> ChunkEnd {
        guard case .receiving(let first) = phase else { throw .busy }
        // At most the size declared, or the limit: the driver kept no more.
        let room = min(limit, declaredSize ?? limit)
        received = max(received, min(room, first + min(length, room)))
        phase = .open
        return try end(ending)
    }

    /// A request that ends the upload without bytes (the v0 API's `finalize` alone).
    mutating func finalize() throws(Refusal) -> ChunkEnd {
        switch phase {
        case .finished: throw .ended
        case .cancelled: throw .cancelled
        case .receiving, .landing: throw .busy
        case .open: return try end(.finalize)
        }
    }

    private mutating func end(_ ending: ChunkEnding) throws(Refusal) -> ChunkEnd {
        switch ending {
        case .more:
            return .incomplete(received: received)
        case .atDeclaredSize:
            guard let declaredSize, declaredSize == received else { return .incomplete(received: received) }
        case .wholeObject:
            if let declaredSize, declaredSize != received {
                throw .incomplete(received: received, declared: declaredSize)
            }
            declaredSize = received
        case .finalize:
            if let declaredSize, declaredSize != received {
                throw .incomplete(received: received, declared: declaredSize)
            }
            declaredSize = received
        }
        phase = .landing
        return .land
    }

    /// The chunk's bytes did not all arrive, or were refused: those it brought are dropped (the driver cuts its spool
    /// back) and the upload goes back to work, unless they passed the object limit, which ends it.
    mutating func chunkFailed(tooLarge: Bool) {
        guard case .receiving = phase else { return }
        phase = tooLarge ? .cancelled : .open
    }

    // MARK: Parts

    /// A part's request arrives: receive its bytes.
    mutating func partBegins() throws(Refusal) {
        switch phase {
        case .open: partsArriving += 1
        case .landing: throw .busy
        case .receiving, .finished, .cancelled: throw .ended
        }
    }

    /// A part's bytes have arrived whole and checked: the driver keeps it, unless the upload is being completed
    /// (the completion took the parts it found: the client is asked to retry, and gets 404 once it has landed) or
    /// has ended.
    mutating func partArrived() throws(Refusal) {
        partsArriving = max(0, partsArriving - 1)
        switch phase {
        case .open: return
        case .landing: throw .busy
        case .receiving, .finished, .cancelled: throw .ended
        }
    }

    /// A part's bytes did not all arrive, or were refused: nothing is kept.
    mutating func partFailed() {
        partsArriving = max(0, partsArriving - 1)
    }

    /// The client completes the upload: land the parts it names.
    mutating func complete() throws(Refusal) {
        switch phase {
        case .open: phase = .landing
        case .landing: throw .busy
        case .receiving, .finished, .cancelled: throw .ended
        }
    }

    // MARK: Every shape

    /// The object landed, or the upload was refused for good; `final` is the answer to give again.
    mutating func landed(_ final: Final?) {
        guard case .landing = phase else { return }
        phase = .finished(final)
    }

    /// The object could not be written for a reason a retry may cure: the upload goes back to work.
    mutating func landingFailed() {
        guard case .landing = phase else { return }
        phase = .open
    }

    /// The client cancels (or aborts) the upload.
    mutating func cancel() throws(Refusal) -> CancelOutcome {
        switch phase {
        case .open:
            phase = .cancelled
            return .cancelled
        case .receiving, .landing: throw .busy
        case .cancelled: return .wasCancelled
        case .finished(let final): return .wasFinished(final)
        }
    }

    /// The upload idled past the server's limit: it ends, unless a request is at work on it.
    mutating func expire() {
        if case .open = phase, partsArriving == 0 { phase = .cancelled }
    }

    /// Ends the upload because the object would be `size` bytes, more than the limit.
    private mutating func cancel(tooLarge size: Int64) -> Refusal {
        phase = .cancelled
        return .tooLarge(size: size)
    }
}
