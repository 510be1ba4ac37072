/* store_block.h -- the packed column blocks of slices (table slice_block).
 *
 * The slices of one (track, lane), in (ts, id) order, are stored up to
 * STORE_BLOCK_ROWS to a slice_block row keyed by (track, lane, ts0, id0),
 * the first slice's start and id.  The blob holds the columns one after the
 * other (doc/storage.md), in two blobs so that a reader of the other
 * columns never loads the args (data in slice_block, args in slice_args):
 *   data: n, the byte lengths of the six columns (so that a reader decodes
 *   only the columns it needs), then n values of each column as zigzag
 *   varints (lod_block.h), or one value when every row has it (its length
 *   then written negated): ts - previous ts (the first from ts0), dur, id -
 *   previous id (the first from 0), name, grp (0: NULL), args set (0:
 *   NULL, 1: none, the text kept whole; k + 1: set k, store_argset.h);
 *   then the flows: nothing when no slice has one, else n counts and the
 *   flow ids of the slices one after the other, each the difference from
 *   the previous one (the first from 0);
 *   args: a flags byte (0 or STORE_BLOCK_ZSTD), then the args part
 *   (store_block_args.h: the values of the rows' sets) as it is, or (ZSTD)
 *   its length as a varint and one zstd frame of it.
 * The encoder is the writer's (store.c), the decoder the virtual table's
 * (store_vtab.c).
 *
 * Counter blocks (table counter_block) hold the samples of one (track,
 * series), in (ts, seq) order, up to STORE_CBLOCK_ROWS to a row keyed by
 * (track, series, ts0, seq0), in one blob: n, the scale of the values
 * (0 - 6: every value is an integer over 10^scale; STORE_CBLOCK_BITS: the
 * values' IEEE 754 bit patterns), the byte lengths of the three columns
 * (negated: one value for every row), then the columns as zigzag varints:
 * ts - previous ts (the first from ts0), seq - previous seq (the first
 * from 0), value - previous value (the first from 0) as integers of that
 * scale or bit patterns (-0.0 is kept as 0.0, as SQLite keeps a REAL).
 * They are read into the rows of a struct store_block (seq in id, the
 * value in value).
 *
 * Flow blocks (table flow_block) hold the endpoints of flows, every
 * (flow id, track, lane, ts, id) of the store once, in that order, up to
 * STORE_FBLOCK_ROWS to a row keyed by its first flow id: n, the byte
 * lengths of the five columns (negated: one value), then the columns, each
 * value the difference from the one before (the first flow id from the
 * key, the others from 0).  They are read into the rows of a struct
 * store_block (the flow id in ts) and its `ends` (track, lane, ts and id
 * of row i at 4 i).
 *
 * Dependency blocks (tables inst_dep_block and inst_dep_rev_block) hold
 * instruction dependencies seen from one side, the instructions of one
 * (track, lane): its dependencies (inst_dep_block) or its dependents
 * (inst_dep_rev_block), in (ts, id, seq) order, then the other's key, up to
 * STORE_DBLOCK_ROWS to a row keyed by (track, lane, ts0): n, the byte
 * lengths of the seven columns (negated: one value), then the columns,
 * each value the difference from the one before (the first ts from ts0,
 * the others from 0): ts, id, seq (the place in the dependent's
 * inst_dep_ids), the other's track + 1 (0: no instruction has the id the
 * dependent names), lane, ts (0 and 0 then) and id.  They are read into
 * the rows of a struct store_block: seq in dur, grp 1 when the other was
 * found, its track, lane, ts and id at ends[4 i] (only the id when not).
 *
 * Ownership: a struct store_block owns its rows and args bytes;
 * store_block_free() frees them.  Encoded bytes go to a caller's buffer.
 */
#ifndef NEX_STORE_BLOCK_H
#define NEX_STORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "util.h"

struct store_argsets;
struct store_argset_split;

#define STORE_BLOCK_ROWS 256
/* A block is closed early once its args hold this many bytes. */
#define STORE_BLOCK_ARGS_MAX (256 << 10)
/* 2: layouts up to 9 wrote 1 for zlib, which is not read */
#define STORE_BLOCK_ZSTD 2

/* The columns of a block, as bits of store_block_decode()'s cols (the
 * flows, after the six value columns, are read only when asked for). */
#define STORE_BLOCK_COLS 6
#define STORE_BLOCK_TS 1
#define STORE_BLOCK_DUR 2
#define STORE_BLOCK_ID 4
#define STORE_BLOCK_NAME 8
#define STORE_BLOCK_GRP 16
#define STORE_BLOCK_ARGS 32
#define STORE_BLOCK_ALL 63
#define STORE_BLOCK_FLOWS 64
/* The most columns a block of any kind has (a dependency block's). */
#define STORE_BLOCK_MAX_COLS 7

/* The scale of a counter block whose values are kept as bit patterns (an
 * integer scale would not give them back exactly). */
#define STORE_CBLOCK_BITS 7
/* Samples the writer puts in a counter block (a reader accepts up to
 * STORE_BLOCK_ROWS): a window reads one or two blocks per series, and a
 * block is decoded whole. */
#define STORE_CBLOCK_ROWS 64
/* Endpoints the writer puts in a flow block (a flow is looked up by id). */
#define STORE_FBLOCK_ROWS 64
/* Dependencies the writer puts in a dependency block (an instruction's
 * are looked up by its key). */
#define STORE_DBLOCK_ROWS 64

/* One slice of a block; args at args_off in the block's args bytes, its
 * n_flows flow ids (ascending, distinct) at flows_off in its flows. */
struct store_block_row {
  int64_t ts, id, dur, name, grp;
  int64_t args_len; /* -1: NULL */
  size_t args_off;
  size_t flows_off;
  int n_flows;
  double value; /* counter blocks: the sample's value (id: its seq) */
};

/* A part of an args set's template as a block reads it: the literal bytes
 * at `text` in the block's tpl, then a mark (STORE_ARGSET_*; 0: the end). */
struct store_block_piece {
  size_t text, len;
  int mark;
};

/* Up to STORE_BLOCK_ROWS slices of one (track, lane). */
struct store_block {
  int n, cap;
  struct store_block_row *row;
  char *args;
  size_t args_size, args_cap;
  int64_t *flows;
  size_t flows_n, flows_cap;
  int64_t *ends; /* flow blocks: 4 per row (track, lane, ts, id) */
  int ends_cap;  /* rows it has room for */
  ZSTD_DCtx *zd; /* made by the first decode of zstd args, kept */
  unsigned char *raw; /* the decompressed args part */
  size_t raw_cap;
  int64_t *last; /* the last integers of the args sets (read and write) */
  size_t last_cap;
  char *tpl; /* the read sets' templates, their literal bytes */
  size_t tpl_size, tpl_cap;
  struct store_block_piece *pieces; /* and their pieces */
  size_t pieces_n, pieces_cap;
  /* gives the template of args set id (*tpl, *len: borrowed until the next
   * call); returns 0, or -1 when there is no such set */
  int (*argset)(void *ud, int64_t id, const char **tpl, size_t *len);
  void *argset_ud;
};

/* Appends one slice (args: args_len bytes, copied, or NULL; flows: its
 * n_flows flow ids, copied in ascending order without repeats).  The
 * caller keeps n < STORE_BLOCK_ROWS. */
void store_block_add(struct store_block *b, int64_t ts, int64_t id, int64_t dur,
                     int64_t name, int64_t grp, const char *args,
                     size_t args_len, const int64_t *flows, int n_flows);
/* Puts the slices in (ts, id) order (a stable sort: usually they are). */
void store_block_sort(struct store_block *b);
/* What encoding slice blocks keeps from one block to the next: its
 * compression context, the args sets (store_argset.h) and buffers.  One
 * thread uses it at a time. */
struct store_block_enc {
  ZSTD_CCtx *zc;
  struct store_argsets *sets;
  struct store_argset_split *split;
  struct sbuf ints, texts, part;
};

/* Makes *e (exits when no compression context can be made). */
void store_block_enc_init(struct store_block_enc *e);
/* Frees what *e holds (e itself is the caller's). */
void store_block_enc_free(struct store_block_enc *e);
/* Encodes b's slices (1 to STORE_BLOCK_ROWS, in order) with e, their args
 * split into the sets of e->sets.  Returns a malloc'd buffer of *len
 * bytes, the caller frees it: the data blob, then from *args_at on the
 * args blob, none (*args_at == *len) when every slice's args is NULL.
 * The args part is compressed (zstd, level 1) when that saves at least a
 * tenth. */
unsigned char *store_block_encode(struct store_block *b,
                                  struct store_block_enc *e, size_t *len,
                                  size_t *args_at);
/* Decodes slice_block row (ts0, data/len, args/args_len) into b, replacing
 * what it held: ts and the columns of `cols` (STORE_BLOCK_* bits; the
 * others are 0, no flows without STORE_BLOCK_FLOWS), the args when args is
 * not NULL (else every args is NULL), their sets' templates got from
 * b->argset.
 * Returns 0, or -EINVAL when the bytes read are not a block. */
int store_block_decode(struct store_block *b, int64_t ts0, const void *data,
                       size_t len, const void *args, size_t args_len, int cols);
/* Appends one counter sample (seq in id).  The caller keeps n <
 * STORE_BLOCK_ROWS. */
void store_block_add_sample(struct store_block *b, int64_t ts, int64_t seq,
                            double value);
/* Encodes b's samples (1 to STORE_BLOCK_ROWS, in (ts, seq) order) as a
 * counter block.  Returns a malloc'd buffer of *len bytes, the caller
 * frees it. */
unsigned char *store_block_encode_counter(const struct store_block *b,
                                          size_t *len);
/* Decodes counter_block row (ts0, data/len) into b, replacing what it
 * held: ts, seq (in id) and value of every row.  Returns 0, or -EINVAL
 * when the bytes are not a counter block. */
int store_block_decode_counter(struct store_block *b, int64_t ts0,
                               const void *data, size_t len);
/* Appends one flow endpoint: flow id (in ts) and end[] = track, lane, ts,
 * id.  The caller keeps n < STORE_BLOCK_ROWS. */
void store_block_add_endpoint(struct store_block *b, int64_t flow_id,
                              const int64_t end[4]);
/* Encodes b's endpoints (1 to STORE_BLOCK_ROWS, in key order) as a flow
 * block.  Returns a malloc'd buffer of *len bytes, the caller frees it. */
unsigned char *store_block_encode_flow(const struct store_block *b,
                                       size_t *len);
/* Decodes flow_block row (flow0, data/len) into b, replacing what it held:
 * the flow id of every row (in ts) and its ends.  Returns 0, or -EINVAL
 * when the bytes are not a flow block. */
int store_block_decode_flow(struct store_block *b, int64_t flow0,
                            const void *data, size_t len);
/* Appends one dependency seen from instruction (ts, id) (store_block.h's
 * dependency blocks): seq, and other[] = the track, lane, ts and id of the
 * instruction at the other end, only its id read when !found (a found
 * track is not below 0, as no track id is: -1 would read back as not
 * found).  The caller keeps n < STORE_BLOCK_ROWS. */
void store_block_add_dep(struct store_block *b, int64_t ts, int64_t id,
                         int64_t seq, const int64_t other[4], int found);
/* Encodes b's dependencies (1 to STORE_BLOCK_ROWS, in (ts, id, seq)
 * order) as a dependency block.  Returns a malloc'd buffer of *len bytes,
 * the caller frees it. */
unsigned char *store_block_encode_dep(const struct store_block *b, size_t *len);
/* Decodes dependency block row (ts0, data/len) into b, replacing what it
 * held.  Returns 0, or -EINVAL when the bytes are not a dependency block. */
int store_block_decode_dep(struct store_block *b, int64_t ts0, const void *data,
                           size_t len);
/* Empties b (keeps its buffer). */
void store_block_clear(struct store_block *b);
/* Frees b's buffers and context (b itself is the caller's). */
void store_block_free(struct store_block *b);

#endif
