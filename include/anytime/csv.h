/* anytime/csv.h — a small RFC 4180 CSV reader for labelled datasets.
 *
 * Parses a whole buffer (or file) into rows of fields: fields separated by
 * commas, records by LF or CRLF; a field may be quoted with '"', inside which
 * commas, newlines and doubled quotes ("") are literal. A leading UTF-8 BOM is
 * skipped. A quote that opens a field must close it: an unterminated quoted
 * field, or text between a closing quote and the next separator, is
 * AT_ERR_PARSE with the line number. Quotes inside unquoted fields are kept
 * as ordinary characters. Field contents are not interpreted (no trimming,
 * no type conversion); they are copied and NUL-terminated.
 *
 * Ownership: at_csv owns every field; free with at_csv_destroy().
 * Thread-safety: a parsed at_csv is read-only and may be read from any number
 * of threads; parsing keeps no global state.
 */
#ifndef ANYTIME_CSV_H
#define ANYTIME_CSV_H

#include "anytime/api.h"

#include <stddef.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_CSV_MAX_BYTES ((size_t)1 << 30)   /* largest file or buffer accepted */
#define AT_CSV_MAX_FIELDS ((size_t)1 << 26)  /* most fields in one document */

typedef struct at_csv at_csv;

/* Parse `len` bytes of `data` (need not be NUL-terminated).
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL argument), AT_ERR_PARSE (detail has
 * the line), AT_ERR_LIMIT (input or field count over the caps), AT_ERR_NOMEM. */
AT_API at_status at_csv_parse(const char *data, size_t len, at_csv **out);

/* Read and parse a file. Also returns AT_ERR_NOT_FOUND and AT_ERR_IO. */
AT_API at_status at_csv_load(const char *path, at_csv **out);

/* Number of records (including a header row, if the file has one). */
AT_API size_t at_csv_rows(const at_csv *c);
/* Number of fields in record `row` (0 if row is out of range). */
AT_API size_t at_csv_cols(const at_csv *c, size_t row);
/* Field `col` of record `row`, NUL-terminated, owned by `c`; *len (may be
 * NULL) gets its length (fields may contain NUL bytes). NULL if out of range. */
AT_API const char *at_csv_field(const at_csv *c, size_t row, size_t col, size_t *len);
/* Column index of `name` in record 0 (the header), or -1. */
AT_API long at_csv_column(const at_csv *c, const char *name);

/* Free. NULL is a no-op. */
AT_API void at_csv_destroy(at_csv *c);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_CSV_H */
