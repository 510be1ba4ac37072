/* ingest_rates.h -- the rate counters derived from the byte counts of
 * slices: the bandwidth of a host<->device transfer track (args member
 * "size") and the DMA throughput of a device profile (its DMA tracks,
 * "transfer_bytes").  Each slice's bytes are spread over fixed buckets of
 * the span [first, last] pro rata of overlap (INGEST_RATE_BUCKETS buckets
 * of at least 1 us), written as bytes/s.
 *
 * The sums are made as the slices are placed: each track watched gets a
 * hook that adds its slices in the order a scan of the stored slices
 * gives them (the tracks in id order, then by lane, then by start: the
 * slices of lanes above 0 are kept aside until their track is done), so
 * that the floating-point sums are those of that scan.  Where that cannot
 * be done -- a byte count that nex_json_member would not answer as an
 * integer or NULL (store_json.h), a slice placed out of that order, more
 * kept aside or more buckets than INGEST_RATES_BUDGET bytes -- the rate is
 * summed after the load by that scan of the stored slices (SQL), the same
 * sums.
 *
 * Ownership: the rates are the run's state (ingest_state), freed at the
 * end of the run (what a rate holds, once it is emitted).
 */
#ifndef NEX_INGEST_RATES_H
#define NEX_INGEST_RATES_H

#include "ingest_sink.h"

#define INGEST_RATE_BUCKETS 20000 /* samples of a rate counter */
/* What the sums made as the slices are placed may hold, at most. */
#define INGEST_RATES_BUDGET (8u << 20)

/* The two kinds of rates, each keyed by an id: a transfer track's, a
 * device profile's. */
enum ingest_rate_kind { INGEST_RATE_TRANSFER, INGEST_RATE_DMA };

struct ingest_rate;

/* Begins the sums of the rate (kind, key) over [first, last] of the args
 * member `member` (a literal) of the slices of the tracks then watched.
 * Returns NULL when the budget has no room for its buckets (it is then
 * summed by the scan). */
struct ingest_rate *ingest_rates_begin(struct ing *g,
                                       enum ingest_rate_kind kind, int64_t key,
                                       int64_t first, int64_t last,
                                       const char *member);
/* Adds the slices track t will place to r (r NULL: nothing).  The tracks
 * of a rate are watched before they are placed, and placed in id order. */
void ingest_rates_watch(struct ingest_rate *r, struct itrack *t);

/* Writes the samples of the rate (kind, key) over [first, last] on
 * counter track dst: the sums made as placed, when they were made over
 * that span from all of its `count` slices; else the sums of the scan
 * `sql` (rows ts, dur, bytes of the slices, in the order above; its one
 * parameter is key).  Returns whether it took the scan. */
bool ingest_rates_emit(struct ing *g, struct itrack *dst,
                       enum ingest_rate_kind kind, int64_t key, int64_t first,
                       int64_t last, int64_t count, const char *sql);

#endif
