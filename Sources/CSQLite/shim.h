#ifndef STORESH_CSQLITE_SHIM_H
#define STORESH_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Sets SQLite up for storesh, before it is first used (later sqlite3_config answers SQLITE_MISUSE and changes
/// nothing). sqlite3_config is variadic, which Swift cannot call.
///
/// - Memory statistics off: they take a global mutex on every allocation (a bulk edit makes millions), and storesh
///   never reads them.
/// - Sub-journals (what a savepoint or a statement inside a transaction keeps to roll back to) stay in memory up to
///   `journalSpill` bytes before they spill to a temporary file. SQLite's 64 KiB is less than one page of a bulk edit
///   touches (1,000 rows rewrite some 50 pages of 4 KiB), which then wrote every page twice more to a file in
///   /var/tmp. Above the limit the journal still spills, so a savepoint over a whole bulk edit (`--keep-going`)
///   stays in bounded memory.
static inline int storesh_sqlite_configure(int journalSpill) {
    int status = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if (status != SQLITE_OK) return status;
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, journalSpill);
}
#endif
