/* store_block_args.h -- the args part of a slice block (store_block.h,
 * doc/storage.md): each slice's args split into its argument set
 * (store_argset.h) and values, written and read back.  Used by the block
 * codec (store_block.c) only.
 *
 * The part: the byte length of the integers, then the integers of the
 * rows' sets in row order, each the difference from the last one of the
 * same set and place in the block (the first from 0), then the texts in
 * row order, each a byte length and the bytes: a set's string contents
 * and other values, or the whole args of a row without a set.  In the
 * block's args blob it follows a flags byte, as it is or as its length and
 * one zstd frame (STORE_BLOCK_ZSTD).
 */
#ifndef NEX_STORE_BLOCK_ARGS_H
#define NEX_STORE_BLOCK_ARGS_H

#include "store_block.h"

/* Makes room for n more args bytes in b. */
void store_block_args_room(struct store_block *b, size_t n);
/* Splits the args of b's rows into their sets (interned in e->sets):
 * ref[i] gets row i's set as the data blob keeps it (0 NULL, 1 none: the
 * text whole, k + 1 set k), e->part the args part. */
void store_block_args_split(struct store_block *b, struct store_block_enc *e,
                            int64_t *ref);
/* Writes the args blob at p (room up to end): a flags byte, then the part
 * text (n bytes) as it is or, when that saves a tenth, its length and one
 * zstd frame of it made with zc.  Returns the end of the written bytes. */
unsigned char *store_block_args_put(unsigned char *p, unsigned char *end,
                                    ZSTD_CCtx *zc, const unsigned char *text,
                                    size_t n);
/* Reads args blob p..end into b's args, filling each row's set (its
 * args_len: -1 NULL, 0 none, k set k, from b->argset) with its values,
 * and sets each row's args_off and args_len.  Returns 0, -EINVAL, or
 * -ENOMEM when no zstd context can be made. */
int store_block_args_read(struct store_block *b, const unsigned char *p,
                          const unsigned char *end);

#endif
