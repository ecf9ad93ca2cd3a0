#ifndef STORESH_CSQLITE_SHIM_H
#define STORESH_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
