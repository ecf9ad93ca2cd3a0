// swift-format-ignore-file: AmbiguousTrailingClosureOverload

// (The synchronous and the async `storageError` are one helper: a test calls whichever its body needs.)
import StoreshCore

/// The StorageError that `body` throws, or nil when it throws none (another error is reported as one).
public func storageError(_ body: () throws -> Void) -> StorageError? {
    do {
        try body()
        return nil
    } catch let error as StorageError {
        return error
    } catch {
        return StorageError(.unknown, "not a StorageError: \(error)")
    }
}

/// The StorageError that `body` throws, or nil when it throws none (another error is reported as one).
public func storageError(_ body: () async throws -> Void) async -> StorageError? {
    do {
        try await body()
        return nil
    } catch let error as StorageError {
        return error
    } catch {
        return StorageError(.unknown, "not a StorageError: \(error)")
    }
}
