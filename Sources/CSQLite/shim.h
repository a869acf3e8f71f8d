#ifndef GEOTRIGGER_CSQLITE_SHIM_H
#define GEOTRIGGER_CSQLITE_SHIM_H
#include <sqlite3.h>

/* Every SQLite quirk the Swift wrapper (Sources/Store) would otherwise hard-code lives here. */

/* SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import:
   these bind a copy of the caller's bytes, so Swift buffers may be released right after. */
static inline int geotrigger_sqlite3_bind_text_copy(sqlite3_stmt *statement, int index,
                                                    const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

/* A NULL pointer binds SQL NULL even with length 0, so an empty blob is bound as a zero-length
   blob explicitly: an empty state stays an empty blob, never NULL. */
static inline int geotrigger_sqlite3_bind_blob_copy(sqlite3_stmt *statement, int index,
                                                    const void *bytes, int length) {
    if (length == 0 || bytes == 0) return sqlite3_bind_zeroblob(statement, index, 0);
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

/* sqlite3_config is variadic, which Swift cannot call. Without memory statistics SQLite takes
   no global mutex and keeps no counters on each of its allocations (the gateway never reads
   them). Must run before the library initializes (the first open); later it returns
   SQLITE_MISUSE and changes nothing. */
static inline int geotrigger_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif
