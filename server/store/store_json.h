/* store_json.h -- the SQL function nex_json_member(json, label): what
 * json_extract(json, '$."label"') answers, the top-level member `label` of
 * a JSON object, found by a scan that stops at it instead of a parse of
 * the whole text.
 *
 * The scan answers a member that is an integer of at most 18 digits, a
 * string without escapes, true, false or null, and a label that is not
 * there (NULL); it skips members whose labels have no escapes.  Anything
 * else -- another number, an object or array, an escape in a label before
 * the member, text that is not a JSON object, or that the scan finds not
 * well formed -- is answered by json_extract itself (the same value, or
 * its error).  The scan does not check every token it skips nor what
 * follows the member: a text that is not well formed there gets an answer
 * where json_extract would fail.  The args the ingest writes are always
 * well formed; the derived counters of the ingest (the bandwidth of
 * transfers, the DMA throughput) read one number of every slice's args
 * with it, through store_json_real() as the slices are placed, and through
 * SQL where that does not answer.
 */
#ifndef NEX_STORE_JSON_H
#define NEX_STORE_JSON_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Registers nex_json_member on db.  Returns an SQLite result code. */
int store_json_register(sqlite3 *db);

/* What store_json_real makes of a member. */
enum store_json_num {
  STORE_JSON_NUM,  /* a number */
  STORE_JSON_NULL, /* NULL: no such member, null, or text NULL */
  STORE_JSON_OTHER /* anything else */
};

/* CAST(nex_json_member(text, label) AS REAL) for the text[0, len) (NULL:
 * SQL NULL), when the scan answers the member with an integer or a string
 * of one (at most 18 digits, no leading zero, no sign but a minus): *x;
 * NULL when it answers NULL; STORE_JSON_OTHER for anything else (a value
 * of another kind, or one that json_extract answers). */
enum store_json_num store_json_real(const char *text, size_t len,
                                    const char *label, double *x);

#endif
