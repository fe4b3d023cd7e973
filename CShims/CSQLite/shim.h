// CSQLite: libsqlite3 for Swift (the library store's adapter, HarmoniaSQLite).
// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift
// cannot import: harmonia_sqlite_transient() gives it as a value.
#ifndef HARMONIA_CSQLITE_SHIM_H
#define HARMONIA_CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT: SQLite copies a bound text or blob before the call returns.
static inline sqlite3_destructor_type harmonia_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
