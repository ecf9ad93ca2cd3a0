import StoreshCore

/// A ruleset laid out for deciding requests. For each method it keeps the match blocks that hold allows for it,
/// in the order the service reads them (a block's allows, then its children's), each with its path from the
/// root and the functions in scope there. A decision then walks a short flat list and compares path bytes,
/// instead of descending the tree, copying variables and joining function lists for every request.
final class CompiledRuleset: Sendable {
    let version: String
    private let routesByMethod: [[Route]]

    init(_ ruleset: Ruleset, origin: String) {
        version = ruleset.version
        var routesByMethod = [[Route]](repeating: [], count: AccessMethod.allCases.count)
        func add(_ block: MatchBlock, path: [Route.Segment], functions: [RulesFunction]) {
            let path = path + block.path.map(Route.Segment.init)
            let functions = functions + block.functions
            for method in AccessMethod.allCases {
                let allows = block.allows.filter { $0.methods.contains(method) }.map { allow in
                    Candidate(allow: allow, grant: AccessGrant(statement: allow.text, origin: origin, line: allow.line))
                }
                if !allows.isEmpty {
                    routesByMethod[method.ordinal].append(Route(path: path, allows: allows, functions: functions))
                }
            }
            for child in block.children { add(child, path: path, functions: functions) }
        }
        for block in ruleset.matches { add(block, path: [], functions: ruleset.functions) }
        self.routesByMethod = routesByMethod
    }

    func routes(for method: AccessMethod) -> [Route] { routesByMethod[method.ordinal] }

    /// An allow statement, and what a decision it grants says of it.
    final class Candidate: Sendable {
        let allow: AllowStatement
        let grant: AccessGrant

        init(allow: AllowStatement, grant: AccessGrant) {
            self.allow = allow
            self.grant = grant
        }
    }

    /// The allows of one match block for one method, and the path that leads to them.
    final class Route: Sendable {
        enum Segment: Sendable {
            case literal([UInt8])
            /// `{name}`: one segment.
            case variable(String)
            /// `{name=**}`: the rest of the path (zero or more segments in rules_version 2, one or more in 1).
            case rest(String)

            init(_ segment: MatchBlock.Segment) {
                switch segment {
                case .literal(let name): self = .literal(Array(name.utf8))
                case .variable(let name): self = .variable(name)
                case .rest(let name): self = .rest(name)
                }
            }
        }

        let allows: [Candidate]
        let functions: [RulesFunction]
        /// Nearly every route starts with the service's `/b/{bucket}/o`: it keeps that bucket segment apart and
        /// matches the rest against the object's name, so a decision need not build the full path.
        private let bucketSegment: Segment?
        private let objectSegments: ArraySlice<Segment>
        /// The first segment of the object's name when the route names it: a cheap test that turns away most
        /// routes before any matching.
        let firstName: SegmentFingerprint?

        init(path: [Segment], allows: [Candidate], functions: [RulesFunction]) {
            self.allows = allows
            self.functions = functions
            if path.count >= 3, case .literal(let b) = path[0], b == Array("b".utf8), case .literal(let o) = path[2],
                o == Array("o".utf8)
            {
                switch path[1] {
                case .literal, .variable: (bucketSegment, objectSegments) = (path[1], path[3...])
                case .rest: (bucketSegment, objectSegments) = (nil, path[...])
                }
            } else {
                (bucketSegment, objectSegments) = (nil, path[...])
            }
            if bucketSegment != nil, case .literal(let name) = objectSegments.first {
                firstName = SegmentFingerprint(name[...])
            } else {
                firstName = nil
            }
        }

        /// Whether the route matches the whole of b/BUCKET/o/NAME (segments split at every `/`, empty ones kept);
        /// with `variables`, its path variables are set there. Most routes fail on a literal, so a decision asks
        /// first without variables, and makes them only for a route that matched.
        func matches(
            bucket: String, name: String, version: String, binding variables: UnsafeMutablePointer<Variables>? = nil
        ) -> Bool {
            guard let bucketSegment else {
                var fullPath = "b/\(bucket)/o"
                if !name.isEmpty { fullPath += "/" + name }
                return fullPath.withUTF8 { match(objectSegments, $0, version: version, binding: variables) }
            }
            switch bucketSegment {
            case .literal(let literal): guard bucket.utf8.elementsEqual(literal) else { return false }
            case .variable(let variable): variables?.pointee.set(variable, .string(bucket))
            case .rest: return false
            }
            return name.utf8.withContiguousStorageIfAvailable {
                match(objectSegments, $0, version: version, binding: variables)
            }
                ?? Array(name.utf8).withUnsafeBufferPointer {
                    match(objectSegments, $0, version: version, binding: variables)
                }
        }

        private func match(
            _ segments: ArraySlice<Segment>, _ path: UnsafeBufferPointer<UInt8>, version: String,
            binding variables: UnsafeMutablePointer<Variables>?
        ) -> Bool {
            let slash = UInt8(ascii: "/")
            // Where the next segment starts; one past the end once the last segment is used up (at once for an
            // empty name: b/BUCKET/o has no segment after o).
            let exhausted = path.count + 1
            var start = path.isEmpty ? exhausted : 0
            func segmentEnd() -> Int { path[start...].firstIndex(of: slash) ?? path.count }
            for segment in segments {
                switch segment {
                case .literal(let name):
                    guard start != exhausted else { return false }
                    let end = segmentEnd()
                    guard end - start == name.count,
                        name.withUnsafeBufferPointer({ name in
                            path[start..<end].elementsEqual(name)
                        })
                    else { return false }
                    start = end + 1
                case .variable(let name):
                    guard start != exhausted else { return false }
                    let end = segmentEnd()
                    variables?.pointee.set(name, .string(String(decoding: path[start..<end], as: UTF8.self)))
                    start = end + 1
                case .rest(let name):
                    if start == exhausted {
                        if version == "1" { return false }
                        variables?.pointee.set(name, .string(""))
                    } else {
                        variables?.pointee.set(name, .string(String(decoding: path[start...], as: UTF8.self)))
                        start = exhausted
                    }
                }
            }
            return start == exhausted
        }
    }
}

/// A segment's length and first eight bytes: equal for equal segments, and different for most others.
struct SegmentFingerprint: Equatable {
    let length: Int
    let head: UInt64

    init<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        length = bytes.count
        var head: UInt64 = 0
        for byte in bytes.prefix(8) { head = head << 8 | UInt64(byte) }
        self.head = head
    }

    /// The first segment of an object's name.
    init(firstSegmentOf name: String) {
        let utf8 = name.utf8
        self.init(utf8[..<(utf8.firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex)])
    }
}

extension AccessMethod {
    /// The method's place among all methods, to index tables by.
    var ordinal: Int {
        switch self {
        case .get: 0
        case .list: 1
        case .create: 2
        case .update: 3
        case .delete: 4
        }
    }
}
