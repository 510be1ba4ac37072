/* fmt_pb.h -- framed protobuf capture files (ntrace.pb, trace_info.pb,
 * cpu_util.pb, host_mem.pb, *.ntff): reader and writer of the framing.
 *
 * A file is an 8-byte header -- 4 magic bytes, then the format version as a
 * little-endian uint32 -- followed by records, each a base-128 varint byte
 * length and that many bytes of one serialized protobuf message.  The reader
 * maps the file and unpacks one record at a time into a bump arena that is
 * reset by the next call, so memory stays constant whatever the file size.
 *
 * Ownership: a message returned by fmt_pb_next() belongs to the reader and
 * is valid until the next fmt_pb_next() or fmt_pb_close() on it.  Strings
 * *cause returned through out-parameters are malloc'd; the caller frees.
 */
#ifndef NEX_FMT_PB_H
#define NEX_FMT_PB_H

#include <stdint.h>
#include <stdio.h>
#include <protobuf-c/protobuf-c.h>

#define FMT_PB_VERSION 1u

#define FMT_PB_MAGIC_NTRACE "NXTR"
#define FMT_PB_MAGIC_TRACE_INFO "NXTI"
#define FMT_PB_MAGIC_CPU_UTIL "NXCU"
#define FMT_PB_MAGIC_HOST_MEM "NXHM"
#define FMT_PB_MAGIC_NTFF "NTFF"

/* Largest record accepted: a longer length prefix is treated as corruption. */
#define FMT_PB_MAX_RECORD (16u << 20)

struct fmt_pb;

/* Opens `path`, checks the magic (4 bytes) and version.  Returns 0 and sets
 * *out, or a negative errno-style code and sets *cause (a message naming the
 * file): -ENOENT/-EACCES/... from the OS, -ENODATA for an empty file,
 * -EPROTO for a wrong magic, -ENOTSUP for an unknown version. */
int fmt_pb_open(const char *path, const char *magic, struct fmt_pb **out,
                char **cause);

/* Unpacks the next record as a message of descriptor `d` into the reader's
 * arena.  Returns 1 and sets *msg and *offset (byte offset of the record's
 * length prefix); 0 at the clean end of the file; -EBADMSG if that record
 * does not decode (it is skipped: *offset names it and the next call goes on
 * after it); -EPIPE if the file is truncated or the framing is corrupt
 * (*offset names where; every later call returns -EPIPE). */
int fmt_pb_next(struct fmt_pb *r, const ProtobufCMessageDescriptor *d,
                ProtobufCMessage **msg, uint64_t *offset);

/* A run of two or more zero bytes where a record's length belongs (a
 * zero-filled or sparse region: two empty records in a row, which no writer
 * makes; a lone empty record decodes as usual) is skipped
 * as one unit in one pass: -EPIPE if it runs to the end of the file, else
 * -EBADMSG with *offset at its start, the next call going on after it.
 *
 * The next record's bytes without decoding them (valid until the next
 * call or fmt_pb_close): returns 1, 0 at the end, -EBADMSG for a zero run
 * followed by more records, or -EPIPE as above.
 * Decode them, if wanted, with fmt_pb_decode (NULL if they do not decode;
 * the message lives in the reader's arena until the next record). */
int fmt_pb_next_raw(struct fmt_pb *r, const uint8_t **data, size_t *len,
                    uint64_t *offset);
ProtobufCMessage *fmt_pb_decode(struct fmt_pb *r,
                                const ProtobufCMessageDescriptor *d,
                                const uint8_t *data, size_t len);

/* A wire walker (pbwire.h) for messages of d and of the types its fields
 * hold (the first FMT_PB_WALKER_TYPES found breadth first; the others go
 * to protobuf-c), for fmt_pb_decode_into.  Free it with
 * fmt_pb_walker_free (NULL allowed); one thread uses it at a time. */
#define FMT_PB_WALKER_TYPES 16
struct fmt_pb_walker;
struct fmt_pb_walker *fmt_pb_walker_new(const ProtobufCMessageDescriptor *d);
void fmt_pb_walker_free(struct fmt_pb_walker *k);

/* Decodes data[0..len) as a message of d into the caller's buf (cap bytes,
 * 8-byte aligned): the message and every string, array and sub-message it
 * points to, packed from buf on; by walker k (made for d) when it takes
 * the bytes, else (or with k NULL) by protobuf-c, the same structs.
 * Returns the message and sets *used to the bytes taken, or NULL: *used is
 * then 1 when buf was too small (the bytes may still decode, given more
 * room), 0 when they do not decode.  Nothing else is allocated; buf stays
 * the caller's. */
ProtobufCMessage *fmt_pb_decode_into(const ProtobufCMessageDescriptor *d,
                                     struct fmt_pb_walker *k,
                                     const uint8_t *data, size_t len, void *buf,
                                     size_t cap, size_t *used);

/* Finds the first length-delimited field number `field` (a string, bytes
 * or sub-message) in the serialized message data[0..len) without decoding
 * the rest: returns 1 and sets *sub and *sublen, or 0 if absent or malformed.
 * Lets a reader look at a record before paying for its decoding. */
int fmt_pb_field(const uint8_t *data, size_t len, uint32_t field,
                 const uint8_t **sub, size_t *sublen);

/* Bytes consumed so far and the file size, for progress reports. */
uint64_t fmt_pb_pos(const struct fmt_pb *r);
uint64_t fmt_pb_size(const struct fmt_pb *r);

/* Unmaps and frees the reader (NULL is allowed). */
void fmt_pb_close(struct fmt_pb *r);

/* Writer side, used by the generator and the tests.  Each returns 0 or a
 * negative errno-style code. */
int fmt_pb_write_header(FILE *f, const char *magic);
int fmt_pb_write_msg(FILE *f, const ProtobufCMessage *m);

#endif
