/// The root command's everyday invocations, parsed without argument-parser's reflection.
///
/// argument-parser builds every command's argument set by reflection (`Mirror`, `Decodable`, protocol-conformance
/// lookups over the whole static binary) before it parses a word: that was most of a cold `storesh -c 'ls …'`
/// (issue 23's profile: 37% of the process's samples, more than opening the bucket and listing). The invocations
/// people and scripts type most, the prompt or a script with the root options (`storesh`, `storesh --bucket B
/// --json -c TEXT`), are read here into the same `RootInvocation` argument-parser's `Storesh` makes. Everything else
/// (a subcommand, `--help`, `--version`, `--`, a repeated option, a value that looks like an option, anything
/// unknown or invalid) is left to argument-parser, which stays the one authority on the syntax, on help and on
/// every usage error. `EverydayInvocationTests` checks both parsers agree on every root option, and that this
/// list names exactly the options the declarations in `Storesh.swift` declare.
enum EverydayInvocation {
    /// The root's flags and options by name, each a member of `RootInvocation`.
    enum Argument: Int, CaseIterable {
        case bucket, clock, quiet, trace, json, parallel, rate, batch, journal, command, dryRun, summary, keepGoing,
            plan

        var name: String {
            switch self {
            case .bucket: "--bucket"
            case .clock: "--clock"
            case .quiet: "--quiet"
            case .trace: "--trace"
            case .json: "--json"
            case .parallel: "--parallel"
            case .rate: "--rate"
            case .batch: "--batch"
            case .journal: "--journal"
            case .command: "-c"
            case .dryRun: "--dry-run"
            case .summary: "--summary"
            case .keepGoing: "--keep-going"
            case .plan: "--plan"
            }
        }

        var takesValue: Bool {
            switch self {
            case .bucket, .clock, .parallel, .rate, .batch, .journal, .command, .plan: true
            case .quiet, .trace, .json, .dryRun, .summary, .keepGoing: false
            }
        }
    }

    /// The root command for `arguments` (without the program's name), or nil when argument-parser must read them.
    static func parse(_ arguments: [String]) -> RootInvocation? {
        // By the argument's raw value: a dictionary's generic machinery costs more, cold, than these few words.
        var values = [String?](repeating: nil, count: Argument.allCases.count)
        var index = arguments.startIndex
        while index < arguments.endIndex {
            var word = arguments[index]
            var joined: String?
            if word.hasPrefix("--"), let equals = word.firstIndex(of: "=") {
                joined = String(word[word.index(after: equals)...])
                word = String(word[..<equals])
            }
            guard let argument = Argument.allCases.first(where: { $0.name == word }), values[argument.rawValue] == nil
            else { return nil }
            if argument.takesValue {
                if let joined {
                    // `--bucket=` is a missing value to argument-parser.
                    guard !joined.isEmpty else { return nil }
                    values[argument.rawValue] = joined
                } else {
                    index += 1
                    guard index < arguments.endIndex, !arguments[index].hasPrefix("-") else { return nil }
                    values[argument.rawValue] = arguments[index]
                }
            } else {
                guard joined == nil else { return nil }
                values[argument.rawValue] = ""
            }
            index += 1
        }
        var root = RootInvocation()
        root.context.bucket = values[Argument.bucket.rawValue]
        root.context.clock = values[Argument.clock.rawValue]
        root.context.quiet = values[Argument.quiet.rawValue] != nil
        root.context.trace = values[Argument.trace.rawValue] != nil
        root.context.json = values[Argument.json.rawValue] != nil
        if let parallel = values[Argument.parallel.rawValue] {
            guard let number = Int(parallel) else { return nil }
            root.context.parallel = number
        }
        if let rate = values[Argument.rate.rawValue] {
            guard let number = Int(rate) else { return nil }
            root.context.rate = number
        }
        if let batch = values[Argument.batch.rawValue] {
            guard let number = Int(batch) else { return nil }
            root.context.batch = number
        }
        root.context.journal = values[Argument.journal.rawValue]
        root.command = values[Argument.command.rawValue]
        root.context.dryRun = values[Argument.dryRun.rawValue] != nil
        root.context.summary = values[Argument.summary.rawValue] != nil
        root.context.keepGoing = values[Argument.keepGoing.rawValue] != nil
        root.context.plan = values[Argument.plan.rawValue]
        // A value the declarations' checks refuse is argument-parser's to report, in its words.
        do {
            try ApplyOptions.check(parallel: root.context.parallel, rate: root.context.rate, batch: root.context.batch)
            try PlanOptions.check(plan: root.context.plan, dryRun: root.context.dryRun)
        } catch {
            return nil
        }
        return root
    }
}
