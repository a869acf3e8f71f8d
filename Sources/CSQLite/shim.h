#ifndef GEOTRIGGER_CSQLITE_SHIM_H
#define GEOTRIGGER_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
