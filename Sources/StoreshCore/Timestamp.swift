import Foundation
import Synchronization

/// An instant, in microseconds since the Unix epoch (the resolution of production generations, rule M3).
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    public init(date: Date) {
        self.microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down))
    }

    public var date: Date { Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.microseconds < rhs.microseconds }

    /// RFC 3339 in UTC to the microsecond where the time has one (`…:00.123456Z`), else as `rfc3339`: for times a
    /// client sets (a custom time), which the service gives back as they were sent.
    public var rfc3339Microseconds: String {
        let micros = microseconds - microseconds.floorDivided(by: 1000) * 1000
        guard micros != 0 else { return rfc3339 }
        var text = rfc3339
        text.removeLast()  // the Z
        let digits = String(micros)
        return text + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// RFC 3339 in UTC with milliseconds (rule M2): `2026-11-21T09:30:00.000Z`.
    public var rfc3339: String {
        let millisecondsSinceEpoch = microseconds.floorDivided(by: 1000)
        let seconds = millisecondsSinceEpoch.floorDivided(by: 1000)
        let millis = millisecondsSinceEpoch - seconds * 1000
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        // Digits written directly: String(format:) goes through CoreFoundation's formatter, and every metadata
        // document (listings, journals of bulk edits) holds two of these.
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int64, at start: Int, digits: Int) {
            var rest = value
            for index in stride(from: start + digits - 1, through: start, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
        }
        guard (0...9999).contains(year) else {
            return String(
                format: "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ",
                year, month, day, secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60, millis)
        }
        put(year, at: 0, digits: 4)
        bytes[4] = UInt8(ascii: "-")
        put(month, at: 5, digits: 2)
        bytes[7] = UInt8(ascii: "-")
        put(day, at: 8, digits: 2)
        bytes[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, at: 11, digits: 2)
        bytes[13] = UInt8(ascii: ":")
        put(secondOfDay % 3600 / 60, at: 14, digits: 2)
        bytes[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, at: 17, digits: 2)
        bytes[19] = UInt8(ascii: ".")
        put(millis, at: 20, digits: 3)
        bytes[23] = UInt8(ascii: "Z")
        return String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { rfc3339 }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// An HTTP date (RFC 9110 IMF-fixdate, whole seconds): `Sun, 06 Nov 1994 08:49:37 GMT`. Written by hand: a
    /// DateFormatter costs more to make than the request it would serve.
    public var httpDate: String {
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        return
            "\(Self.weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(Self.months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), as `Last-Modified` carries it.
    public init?(httpDate text: String) {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT", let day = Int32(fields[1]),
            let month = Self.months.firstIndex(of: String(fields[2])),
            let year = Int32(fields[3])
        else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = clock[0]
        parts.tm_min = clock[1]
        parts.tm_sec = clock[2]
        self.init(microseconds: Int64(timegm(&parts)) * 1_000_000)
    }

    /// Parses RFC 3339 (`2026-11-21T09:30:00Z`, with optional fraction and a `Z` or `±HH:MM` offset).
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func byte(_ index: Int, _ expected: Character...) -> Bool {
            index < bytes.count && expected.contains(Character(Unicode.Scalar(bytes[index])))
        }
        guard let year = number(0..<4), byte(4, "-"), let month = number(5..<7), byte(7, "-"),
            let day = number(8..<10), byte(10, "T", "t", " "), let hour = number(11..<13), byte(13, ":"),
            let minute = number(14..<16), byte(16, ":"), let second = number(17..<19),
            (1...12).contains(month), (1...Self.daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if byte(index, ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if byte(index, "Z", "z") {
            index += 1
        } else if byte(index, "+", "-"), let offsetHours = number(index + 1..<index + 3), byte(index + 3, ":"),
            let offsetMinutes = number(index + 4..<index + 6)
        {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        self.microseconds = seconds * 1_000_000 + micros
    }

    // Howard Hinnant's days-from-civil algorithms: exact for the proleptic Gregorian calendar,
    // and free of Foundation's locale and time-zone machinery.
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSinceEpoch days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// Where a bucket gets "now" for each change (rules M3, M6).
public protocol StorageClock: Sendable {
    /// The time of the next change. Called once per change.
    func nextChangeTime() -> Timestamp
    /// The time now, without counting a change (`request.time` of a read).
    func now() -> Timestamp
}

/// The real clock.
public struct SystemClock: StorageClock {
    public init() {}
    public func nextChangeTime() -> Timestamp { Timestamp(date: Date()) }
    public func now() -> Timestamp { Timestamp(date: Date()) }
}

/// A reproducible clock (contract `--clock T`): the first change happens at `start`, each later one 1 ms after.
public final class SteppingClock: StorageClock, Sendable {
    /// The time the next change takes.
    private let next: Mutex<Timestamp>
    public static let step: Int64 = 1000

    public init(start: Timestamp) {
        next = Mutex(start)
    }

    public func nextChangeTime() -> Timestamp {
        next.withLock { next in
            defer { next.microseconds += Self.step }
            return next
        }
    }

    public func now() -> Timestamp {
        next.withLock { $0 }
    }

    /// Moves the clock past `time` (a bucket's latest change) when it is not already: a change it dates then never
    /// comes before one the bucket holds, so no object's timeCreated is after its updated. Answers whether it moved.
    public func move(past time: Timestamp) -> Bool {
        next.withLock { next in
            guard next <= time else { return false }
            next = Timestamp(microseconds: time.microseconds + Self.step)
            return true
        }
    }
}

extension Duration {
    /// The duration in seconds, with its fraction.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
