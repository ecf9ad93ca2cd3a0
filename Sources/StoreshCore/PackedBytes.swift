/// A compact byte form for what storesh keeps in its own working storage (a plan's spill, a bucket's columns, page
/// tokens): numbers and lengths as LEB128 varints, strings as their UTF-8 after their byte length. Not an exchange
/// format: journals, plans and archives that people keep are JSON. Millions of values pass through it in a bulk
/// edit, where JSON's text and Foundation's parser would cost several times more.
public struct PackedWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// How many bytes are written.
    public var count: Int { bytes.count }

    /// Forgets what was written from `offset` on (a value begun and then given up).
    public mutating func removeBytes(from offset: Int) { bytes.removeSubrange(offset...) }

    /// Bytes as they are, with no length before them.
    public mutating func raw(_ more: UnsafeRawBufferPointer) { bytes.append(bytes: more) }

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func unsigned(_ value: UInt64) {
        var value = value
        repeat {
            let low = UInt8(value & 0x7F)
            value >>= 7
            bytes.append(value == 0 ? low : low | 0x80)
        } while value != 0
    }

    /// Zigzag, so that small negative numbers stay short.
    public mutating func signed(_ value: Int64) { unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }

    public mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { string(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// What `string` writes for the text whose UTF-8 `utf8` is.
    public mutating func string(bytes utf8: UnsafeRawBufferPointer) {
        unsigned(UInt64(utf8.count))
        bytes.append(bytes: utf8)
    }

    /// Nil as 0, else the byte length plus one.
    public mutating func optionalString(_ text: String?) {
        guard let text else { return unsigned(0) }
        unsigned(UInt64(text.utf8.count) + 1)
        bytes += text.utf8
    }
}

/// Reads what `PackedWriter` wrote; anything short or malformed is `PackedReader.Malformed`.
public struct PackedReader {
    public struct Malformed: Error {}

    let buffer: UnsafeRawBufferPointer
    public private(set) var offset = 0

    public init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    public var isAtEnd: Bool { offset >= buffer.count }

    public mutating func byte() throws(Malformed) -> UInt8 {
        guard offset < buffer.count else { throw Malformed() }
        defer { offset += 1 }
        return buffer[offset]
    }

    public mutating func unsigned() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard shift < 64 else { throw Malformed() }
            let byte = try byte()
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    public mutating func signed() throws(Malformed) -> Int64 {
        let raw = try unsigned()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    public mutating func string() throws(Malformed) -> String {
        let written = try unsigned()
        return try text(length: try length(written))
    }

    /// What `PackedWriter.string` wrote, as the bytes it holds (no text made of them).
    public mutating func stringBytes() throws(Malformed) -> UnsafeRawBufferPointer {
        // The length is read before it is checked against what is left (`length(try unsigned())` would check it
        // against the bytes left before the length itself was read).
        let written = try unsigned()
        let count = try length(written)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    public mutating func optionalString() throws(Malformed) -> String? {
        let marker = try unsigned()
        guard marker > 0 else { return nil }
        return try text(length: try length(marker - 1))
    }

    private func length(_ value: UInt64) throws(Malformed) -> Int {
        guard value <= UInt64(buffer.count - offset) else { throw Malformed() }
        return Int(value)
    }

    private mutating func text(length: Int) throws(Malformed) -> String {
        guard let text = String(validating: buffer[offset..<offset + length], as: UTF8.self) else { throw Malformed() }
        offset += length
        return text
    }
}

extension ObjectMetadata {
    /// The metadata in packed form (a plan's spill keeps millions): every property, custom metadata in key byte
    /// order, then what Cloud Storage keeps besides.
    public var packed: [UInt8] {
        var writer = PackedWriter(capacity: 128 + fullPath.utf8.count)
        writer.byte(1)  // the form's version
        writer.string(bucket)
        writer.string(fullPath)
        writer.signed(generation)
        writer.signed(metageneration)
        writer.signed(size)
        writer.signed(timeCreated.microseconds)
        writer.signed(updated.microseconds)
        writer.string(md5Hash)
        for property in WritableProperty.allCases { writer.optionalString(self[property]) }
        writer.unsigned(UInt64(customMetadata.count))
        for (key, value) in customMetadata.sortedByKeyBytes {
            writer.string(key)
            writer.string(value)
        }
        writer.optionalString(entityTag)
        writer.optionalString(versionID)
        // A tail that plans written before it do not have: the CRC32C, a noncurrent generation's time of deletion,
        // and Cloud Storage's own fields (rule M9), so that a planned hold or custom time is applied as planned.
        let fields = cloudStorage.packed
        if crc32c != nil || timeDeleted != nil || !fields.isEmpty {
            writer.optionalString(crc32c)
            writer.byte(timeDeleted == nil ? 0 : 1)
            if let timeDeleted { writer.signed(timeDeleted.microseconds) }
            fields.withUnsafeBytes { writer.string(bytes: $0) }
        }
        return writer.bytes
    }

    /// Metadata from its packed form.
    public init(packed buffer: UnsafeRawBufferPointer) throws(PackedReader.Malformed) {
        var reader = PackedReader(buffer)
        guard try reader.byte() == 1 else { throw PackedReader.Malformed() }
        self.init(
            bucket: try reader.string(), fullPath: try reader.string(), generation: try reader.signed(),
            metageneration: try reader.signed(), size: try reader.signed(),
            timeCreated: Timestamp(microseconds: try reader.signed()),
            updated: Timestamp(microseconds: try reader.signed()),
            md5Hash: try reader.string())
        for property in WritableProperty.allCases { self[property] = try reader.optionalString() }
        let count = try reader.unsigned()
        guard count <= UInt64(buffer.count) else { throw PackedReader.Malformed() }
        for _ in 0..<count {
            let key = try reader.string()
            customMetadata[key] = try reader.string()
        }
        entityTag = try reader.optionalString()
        versionID = try reader.optionalString()
        guard !reader.isAtEnd else { return }
        crc32c = try reader.optionalString()
        switch try reader.byte() {
        case 0: break
        case 1: timeDeleted = Timestamp(microseconds: try reader.signed())
        default: throw PackedReader.Malformed()
        }
        guard let fields = CloudStorageFields(packed: UnsafeRawBufferPointer(try reader.stringBytes())), reader.isAtEnd
        else {
            throw PackedReader.Malformed()
        }
        cloudStorage = fields
    }
}

extension Array where Element == UInt8 {
    /// Appends `raw` with one copy. (`append(contentsOf:)` walks an `UnsafeRawBufferPointer` a byte at a time: a
    /// bulk edit copies every name and custom map it writes.)
    @inlinable
    public mutating func append(bytes raw: UnsafeRawBufferPointer) {
        append(
            contentsOf: UnsafeBufferPointer(
                start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
    }
}
