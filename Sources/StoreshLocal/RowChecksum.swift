import Foundation

/// A stored row's values disagree with its checksum: the file was damaged outside SQLite's knowledge.
struct ChecksumMismatch: Error {
    /// What was damaged, for the message ("the stored … does not match"): "object \"photos/a.jpg\"", "bucket setting \"name\"".
    var what: String
}

/// A checksum of a row's values, each marked as absent or with its length, so that values cannot run into each
/// other. Every step is a bijection of the state, so any single changed value changes the checksum; it guards
/// against damage, not against anyone forging a row.
protocol RowChecksumming {
    init()
    /// Adds a number (an INTEGER column).
    mutating func add(_ value: Int64)
    /// Adds a text or blob column as its bytes are (nil: NULL).
    mutating func add(_ column: UnsafeRawBufferPointer?)
    var value: Int64 { get }
}

extension RowChecksumming {
    /// Its UTF-8, as a column of text holds it.
    mutating func add(_ text: String?) {
        guard var text else { return add(nil as UnsafeRawBufferPointer?) }
        // Over the contiguous UTF-8: no per-byte index arithmetic.
        text.withUTF8 { add(UnsafeRawBufferPointer($0)) }
    }

    mutating func add(_ data: Data?) {
        guard let data else { return add(nil as UnsafeRawBufferPointer?) }
        data.withUnsafeBytes { add($0) }
    }
}

/// The row checksum of bucket format 4: eight bytes a step. A bulk edit checksums every row it reads and every row
/// it writes, and the byte-at-a-time checksum of formats 2 and 3 (`ByteRowChecksum`) was the largest part of a
/// million-row edit that was not SQLite's.
///
/// A step mixes a 64-bit word in: exclusive or, a multiplication by an odd constant, then the high half folded into
/// the low half (each invertible, so the step is a bijection of the state for any word, and of the word for any
/// state). The fold matters: without it, a bit changed at the top of two words could cancel out.
struct RowChecksum: RowChecksumming {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325

    init() {}

    @inline(__always)
    private mutating func mix(_ word: UInt64) {
        var next = (state ^ word) &* 0x9E37_79B9_7F4A_7C15
        next ^= next >> 32
        state = next
    }

    @inline(__always)
    mutating func add(_ value: Int64) { mix(UInt64(bitPattern: value)) }

    /// NULL is a word no length can be; a value is its length, then its bytes eight at a time (little-endian), the
    /// last word filled with zeros (the length tells them from the value's bytes).
    mutating func add(_ column: UnsafeRawBufferPointer?) {
        guard let column else { return mix(.max) }
        let count = column.count
        mix(UInt64(count))
        var offset = 0
        while count - offset >= 8 {
            mix(UInt64(littleEndian: column.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        let rest = count - offset
        guard rest > 0 else { return }
        var last: UInt64 = 0
        if count >= 8 {
            // The value's last eight bytes, shifted down to the ones not yet mixed in: one load, no loop.
            let tail = UInt64(littleEndian: column.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
            last = tail >> (8 * UInt64(8 - rest))
        } else {
            for place in 0..<rest { last |= UInt64(column[place]) << (8 * UInt64(place)) }
        }
        mix(last)
    }

    var value: Int64 { Int64(bitPattern: state) }
}

/// The row checksum of bucket formats 2 and 3: FNV-1a (64-bit), a byte at a time. Rows written before format 4
/// keep it until they are written again; it is verified, never written.
struct ByteRowChecksum: RowChecksumming {
    private var state: UInt64 = 0xcbf2_9ce4_8422_2325

    init() {}

    private mutating func add(byte: UInt8) {
        state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    /// Its eight bytes, low first.
    mutating func add(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 0, to: 64, by: 8) { add(byte: UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    /// A marker, then (not NULL) the length and each byte.
    mutating func add(_ column: UnsafeRawBufferPointer?) {
        guard let column else { return add(byte: 0) }
        add(byte: 1)
        add(Int64(column.count))
        for byte in column { add(byte: byte) }
    }

    var value: Int64 { Int64(bitPattern: state) }
}

/// Values stored in a row with their checksum.
protocol ChecksummedRow {
    /// Adds the row's values, in their order, to `checksum`.
    func add(to checksum: inout some RowChecksumming)
}

extension ChecksummedRow {
    /// These values' checksum as `Checksum` computes it.
    func checksum<Checksum: RowChecksumming>(as _: Checksum.Type) -> Int64 {
        var checksum = Checksum()
        add(to: &checksum)
        return checksum.value
    }

    /// The checksum a row of these values is written with.
    var checksum: Int64 { checksum(as: RowChecksum.self) }

    /// Whether `stored` is these values' checksum: format 4's, or, for a row not written since the bucket was
    /// upgraded from format 2 or 3, that format's. (So the upgrade rewrites nothing, and an older storesh still
    /// running on the file when it was upgraded writes rows a newer one reads.)
    func isChecksummed(by stored: Int64) -> Bool {
        stored == checksum || stored == checksum(as: ByteRowChecksum.self)
    }
}
