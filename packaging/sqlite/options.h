/*
 * SQLite compile options of the packaged plantd (packaging/build,
 * scripts/binsize): CGO_CFLAGS names this file as SQLITE_CUSTOM_INCLUDE,
 * which SQLite includes at the top of its amalgamation, after the
 * command line's -D options. go-sqlite3 turns FTS3 and R*Tree on in its
 * own #cgo CFLAGS, which come after CGO_CFLAGS on the compiler's command
 * line, so a -U there cannot turn them off; an #undef here can.
 *
 * plantd's SQL (package store) uses none of these:
 *   FTS3/FTS4 full-text search and R*Tree indexes (virtual tables), and
 *   the JSON SQL functions (json(), json_extract(), ->, ->> ...).
 * Without them the static amd64 binary is 159 KB smaller.
 */
#undef SQLITE_ENABLE_FTS3
#undef SQLITE_ENABLE_FTS3_PARENTHESIS
#undef SQLITE_ENABLE_RTREE
#define SQLITE_OMIT_JSON 1
