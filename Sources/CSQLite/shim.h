#ifndef STORESH_CSQLITE_SHIM_H
#define STORESH_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every allocation (a bulk edit makes
/// millions); storesh never reads them. sqlite3_config is variadic, which Swift cannot call. Effective only before
/// SQLite is first used; later it answers SQLITE_MISUSE and changes nothing.
static inline int storesh_sqlite_configure(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
