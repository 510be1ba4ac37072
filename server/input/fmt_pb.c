/* fmt_pb.c -- see fmt_pb.h. */
#include "fmt_pb.h"
#include "pbwire.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sanitizer/asan_interface.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FMT_PB_HEADER_SIZE 8u
#define FMT_PB_VARINT_MAX 10u
/* Arena size a reader starts with and returns to after an unusually large
 * record, so that one big record does not pin its memory for the rest of
 * the file. */
#define FMT_PB_ARENA_INITIAL (64u << 10)
#define FMT_PB_ARENA_RETAIN (4u << 20)
/* Hard cap of the arena of one record: 64 bytes per wire byte plus 64 KiB
 * (a decoded field is at most a few pointers wider than its encoding), and
 * never more than 256 MiB whatever the record. */
#define FMT_PB_ARENA_PER_BYTE 64u
#define FMT_PB_ARENA_MAX (256u << 20)
/* Mapped pages behind the read position are dropped in steps of this size,
 * so a file read to the end does not stay resident in the process. */
#define FMT_PB_DROP_STEP (8u << 20)

/* Under AddressSanitizer the arena keeps a poisoned gap after each
 * allocation and poisons what is not handed out, so overruns and stale
 * pointers into it are reported as they would be with malloc. */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define FMT_PB_REDZONE 16u
#else
#define FMT_PB_REDZONE 0u
#endif

/* Bump allocator handed to protobuf-c: everything one record unpacks into.
 * `exhausted` records that a request was refused, which tells "arena too
 * small" apart from "record corrupt" when unpack returns NULL. */
struct fmt_pb_arena {
  uint8_t *base;
  size_t used, cap;
  int exhausted;
};

struct fmt_pb {
  uint8_t *map; /* read-only pages; ours to advise and unmap */
  uint64_t size;
  uint64_t data_end; /* past it the file is one hole (sparse): all zeros */
  uint64_t pos;
  uint64_t dropped; /* map[0, dropped) was given back with MADV_DONTNEED */
  uint64_t page_size;
  int broken;         /* framing failed: every later call is -EPIPE */
  uint64_t broken_at; /* offset reported with it */
  struct fmt_pb_arena arena;
  ProtobufCAllocator allocator;
  const ProtobufCMessageDescriptor *wired; /* what `wire` walks */
  struct pbwire *wire;
};

static void *fmt_pb_arena_alloc(void *data, size_t n) {
  struct fmt_pb_arena *a = data;
  size_t need = ((n + 15) & ~(size_t)15) + FMT_PB_REDZONE;
  if (need < n || need > a->cap - a->used) {
    a->exhausted = 1;
    return NULL;
  }
  void *p = a->base + a->used;
  a->used += need;
  ASAN_UNPOISON_MEMORY_REGION(p, n);
  return p;
}

static void fmt_pb_arena_free(void *data, void *p) {
  (void)data;
  (void)p;
}

/* Replaces the arena's buffer by one of `cap` bytes (its content is never
 * kept: a retry unpacks from scratch).  Returns 0, or -ENOMEM and leaves
 * the old buffer in place. */
static int fmt_pb_arena_resize(struct fmt_pb_arena *a, size_t cap) {
  uint8_t *p = malloc(cap);
  if (!p)
    return -ENOMEM;
  ASAN_POISON_MEMORY_REGION(p, cap);
  ASAN_UNPOISON_MEMORY_REGION(a->base, a->cap);
  free(a->base);
  a->base = p;
  a->cap = cap;
  a->used = 0;
  return 0;
}

static void fmt_pb_arena_reset(struct fmt_pb_arena *a) {
  ASAN_POISON_MEMORY_REGION(a->base, a->used);
  a->used = 0;
  a->exhausted = 0;
}

/* Maps the whole regular file at `path` read-only.  Returns 0 and sets *map,
 * *size and *data_end (util_data_end()), or a negative errno-style code
 * and sets *cause: -ENODATA for an empty file, -EPIPE for one shorter than
 * the header, -EINVAL if it is not a regular file, else the OS error. */
static int fmt_pb_map(const char *path, void **map, uint64_t *size,
                      uint64_t *data_end, char **cause) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int rc = -errno;
    *cause = xasprintf("%s: %s", path, strerror(-rc));
    return rc;
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) < 0)
    rc = -errno;
  else if (!S_ISREG(st.st_mode))
    rc = -EINVAL;
  else if (st.st_size == 0)
    rc = -ENODATA;
  else if ((uint64_t)st.st_size < FMT_PB_HEADER_SIZE)
    rc = -EPIPE;
  else if ((*map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
                        0)) == MAP_FAILED)
    rc = -errno;
  *size = rc == 0 || rc == -EPIPE ? (uint64_t)st.st_size : 0;
  *data_end = rc == 0 ? util_data_end(fd, *size) : *size;
  close(fd);
  if (rc == -EINVAL)
    *cause = xasprintf("%s: not a regular file", path);
  else if (rc == -ENODATA)
    *cause = xasprintf("%s: empty file (no header)", path);
  else if (rc == -EPIPE)
    *cause =
        xasprintf("%s: offset %" PRIu64 ": truncated header (file is %" PRIu64
                  " bytes, the header needs %u)",
                  path, *size, *size, FMT_PB_HEADER_SIZE);
  else if (rc < 0)
    *cause = xasprintf("%s: %s", path, strerror(-rc));
  return rc;
}

int fmt_pb_open(const char *path, const char *magic, struct fmt_pb **out,
                char **cause) {
  *out = NULL;
  if (strlen(magic) != 4) {
    *cause = xasprintf("%s: magic \"%s\" is not 4 bytes", path, magic);
    return -EINVAL;
  }
  void *map = NULL;
  uint64_t size = 0, data_end = 0;
  int rc = fmt_pb_map(path, &map, &size, &data_end, cause);
  if (rc < 0)
    return rc;
  madvise(map, (size_t)size, MADV_SEQUENTIAL);
  const uint8_t *h = map;
  if (memcmp(h, magic, 4) != 0) {
    struct sbuf got = {0};
    sbuf_add_json_str(&got, (const char *)h, 4);
    *cause = xasprintf("%s: offset 0: wrong magic %s, expected \"%.4s\"", path,
                       got.s, magic);
    sbuf_free(&got);
    munmap(map, (size_t)size);
    return -EPROTO;
  }
  uint32_t version = (uint32_t)h[4] | (uint32_t)h[5] << 8 |
                     (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
  if (version != FMT_PB_VERSION) {
    *cause = xasprintf("%s: offset 4: format version %" PRIu32
                       " is not supported (this build reads version %u)",
                       path, version, FMT_PB_VERSION);
    munmap(map, (size_t)size);
    return -ENOTSUP;
  }
  struct fmt_pb *r = xcalloc(1, sizeof *r);
  r->map = map;
  r->size = size;
  r->data_end = data_end;
  r->pos = FMT_PB_HEADER_SIZE;
  r->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
  r->allocator.alloc = fmt_pb_arena_alloc;
  r->allocator.free = fmt_pb_arena_free;
  r->allocator.allocator_data = &r->arena;
  if (fmt_pb_arena_resize(&r->arena, FMT_PB_ARENA_INITIAL) < 0) {
    fmt_pb_close(r);
    *cause = xasprintf("%s: out of memory for the record arena", path);
    return -ENOMEM;
  }
  *out = r;
  return 0;
}

/* Gives back the mapped pages wholly before the read position once they add
 * up to FMT_PB_DROP_STEP.  Safe because unpacked messages never point into
 * the map: protobuf-c copies strings and bytes into the arena. */
static void fmt_pb_drop_consumed(struct fmt_pb *r) {
  uint64_t end = r->pos & ~(r->page_size - 1);
  if (end - r->dropped < FMT_PB_DROP_STEP)
    return;
  madvise(r->map + r->dropped, (size_t)(end - r->dropped), MADV_DONTNEED);
  r->dropped = end;
}

/* Marks the framing broken at `at` and returns -EPIPE. */
static int fmt_pb_fail(struct fmt_pb *r, uint64_t at, uint64_t *offset) {
  r->broken = 1;
  r->broken_at = at;
  *offset = at;
  return -EPIPE;
}

/* Decodes the varint at r->pos.  Returns its byte count (1..10) and sets
 * *v; 0 if the file ends inside it; -1 if it is longer than 10 bytes or
 * overflows 64 bits. */
static int fmt_pb_varint(const struct fmt_pb *r, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned i = 0; i < FMT_PB_VARINT_MAX; i++) {
    if (r->pos + i >= r->size)
      return 0;
    uint8_t b = r->map[r->pos + i];
    if (i == FMT_PB_VARINT_MAX - 1 && b > 1)
      return -1;
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return (int)i + 1;
    }
  }
  return -1;
}

static struct pbwire *fmt_pb_wire(const ProtobufCMessageDescriptor *d,
                                  ProtobufCAllocator *al);

/* Unpacks len bytes at data (by the reader's walker for d when it takes
 * them, else by protobuf-c), growing the arena while it runs out, up to
 * the cap for a record of that length.  Returns the message or NULL if the
 * bytes do not decode within the cap. */
static ProtobufCMessage *fmt_pb_unpack(struct fmt_pb *r,
                                       const ProtobufCMessageDescriptor *d,
                                       const uint8_t *data, size_t len) {
  size_t cap_max = len * FMT_PB_ARENA_PER_BYTE + FMT_PB_ARENA_INITIAL;
  if (cap_max > FMT_PB_ARENA_MAX)
    cap_max = FMT_PB_ARENA_MAX;
  if (r->wired != d) {
    pbwire_free(r->wire);
    r->wire = fmt_pb_wire(d, &r->allocator);
    r->wired = d;
  }
  for (;;) {
    fmt_pb_arena_reset(&r->arena);
    ProtobufCMessage *m = pbwire_read(r->wire, 0, data, len, 0);
    if (!m) { /* not taken, or the walker's arrays left no room */
      fmt_pb_arena_reset(&r->arena);
      m = protobuf_c_message_unpack(d, &r->allocator, len, data);
    }
    if (m || !r->arena.exhausted || r->arena.cap >= cap_max)
      return m;
    size_t cap = r->arena.cap * 4 < cap_max ? r->arena.cap * 4 : cap_max;
    if (fmt_pb_arena_resize(&r->arena, cap) < 0)
      return NULL;
  }
}

/* Two zero bytes where a record length belongs (two empty records in a row,
 * which no writer makes) start a zero-filled region (a preallocated or
 * sparse tail, a hole): skipped as one unit, in one pass at memory speed,
 * and a hole up to the end of the file is not read at all (constant time,
 * whatever its size).  Returns -EPIPE when the zeros run to the end of the
 * file (nothing follows), else -EBADMSG with the read position after them. */
static int fmt_pb_zeros(struct fmt_pb *r, uint64_t *offset) {
  uint64_t start = r->pos, at = start;
  while (at < r->data_end) {
    size_t n = r->size - at > FMT_PB_DROP_STEP ? FMT_PB_DROP_STEP
                                                : (size_t)(r->size - at);
    const uint8_t *p = r->map + at;
    size_t i = 0;
    while (i < n && p[i] == 0)
      i++;
    at += i;
    if (i < n)
      break;
    r->pos = at; /* give back what was scanned */
    fmt_pb_drop_consumed(r);
  }
  if (at >= r->data_end) /* zeros to the end, the hole not read at all */
    return fmt_pb_fail(r, start, offset);
  r->pos = at;
  *offset = start;
  return -EBADMSG;
}

int fmt_pb_next_raw(struct fmt_pb *r, const uint8_t **data, size_t *len,
                    uint64_t *offset) {
  if (r->broken) {
    *offset = r->broken_at;
    return -EPIPE;
  }
  *offset = r->pos;
  if (r->pos == r->size)
    return 0;
  if (r->arena.cap > FMT_PB_ARENA_RETAIN)
    fmt_pb_arena_resize(&r->arena, FMT_PB_ARENA_INITIAL);
  fmt_pb_drop_consumed(r);
  uint64_t start = r->pos, n64;
  if (r->map[r->pos] == 0 && r->pos + 1 < r->size && r->map[r->pos + 1] == 0)
    return fmt_pb_zeros(r, offset);
  int n = fmt_pb_varint(r, &n64);
  if (n <= 0 || n64 > FMT_PB_MAX_RECORD ||
      n64 > r->size - r->pos - (uint64_t)n)
    return fmt_pb_fail(r, start, offset);
  *data = r->map + r->pos + n;
  *len = (size_t)n64;
  r->pos += (uint64_t)n + n64;
  return 1;
}

ProtobufCMessage *fmt_pb_decode(struct fmt_pb *r,
                                const ProtobufCMessageDescriptor *d,
                                const uint8_t *data, size_t len) {
  return fmt_pb_unpack(r, d, data, len);
}

struct fmt_pb_walker {
  struct fmt_pb_arena a; /* fmt_pb_decode_into's buffer */
  ProtobufCAllocator al;
  struct pbwire *w;
};

/* A walker of d and the types its fields hold (fmt_pb_walker_new), with
 * allocator al. */
static struct pbwire *fmt_pb_wire(const ProtobufCMessageDescriptor *d,
                                  ProtobufCAllocator *al) {
  const ProtobufCMessageDescriptor *types[FMT_PB_WALKER_TYPES] = {d};
  size_t n = 1;
  for (size_t k = 0; k < n; k++)
    for (unsigned i = 0; i < types[k]->n_fields; i++) {
      const ProtobufCFieldDescriptor *f = &types[k]->fields[i];
      size_t j = 0;
      if (f->type != PROTOBUF_C_TYPE_MESSAGE)
        continue;
      while (j < n && types[j] != f->descriptor)
        j++;
      if (j == n && n < FMT_PB_WALKER_TYPES)
        types[n++] = f->descriptor;
    }
  return pbwire_new(types, n, al, true);
}

struct fmt_pb_walker *fmt_pb_walker_new(const ProtobufCMessageDescriptor *d) {
  struct fmt_pb_walker *k = xcalloc(1, sizeof *k);
  k->al = (ProtobufCAllocator){fmt_pb_arena_alloc, fmt_pb_arena_free, &k->a};
  k->w = fmt_pb_wire(d, &k->al);
  return k;
}

void fmt_pb_walker_free(struct fmt_pb_walker *k) {
  if (!k)
    return;
  pbwire_free(k->w);
  free(k);
}

ProtobufCMessage *fmt_pb_decode_into(const ProtobufCMessageDescriptor *d,
                                     struct fmt_pb_walker *k,
                                     const uint8_t *data, size_t len, void *buf,
                                     size_t cap, size_t *used) {
  struct fmt_pb_arena own, *a = k ? &k->a : &own;
  *a = (struct fmt_pb_arena){buf, 0, cap, 0};
  ProtobufCMessage *m = k ? pbwire_read(k->w, 0, data, len, 0) : NULL;
  if (!m) { /* not taken, or the walker's arrays left no room */
    *a = (struct fmt_pb_arena){buf, 0, cap, 0};
    ProtobufCAllocator al = {fmt_pb_arena_alloc, fmt_pb_arena_free, a};
    m = protobuf_c_message_unpack(d, &al, len, data);
  }
  *used = m ? a->used : (size_t)(a->exhausted != 0);
  return m;
}

int fmt_pb_next(struct fmt_pb *r, const ProtobufCMessageDescriptor *d,
                ProtobufCMessage **msg, uint64_t *offset) {
  const uint8_t *data;
  size_t len;
  *msg = NULL;
  int rc = fmt_pb_next_raw(r, &data, &len, offset);
  if (rc <= 0)
    return rc;
  *msg = fmt_pb_unpack(r, d, data, len);
  return *msg ? 1 : -EBADMSG;
}

/* Reads a varint from p (at most end); returns its length or 0. */
static size_t fmt_pb_wire_varint(const uint8_t *p, const uint8_t *end,
                                 uint64_t *v) {
  uint64_t x = 0;
  for (size_t i = 0; i < FMT_PB_VARINT_MAX && p + i < end; i++) {
    x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v = x;
      return i + 1;
    }
  }
  return 0;
}

int fmt_pb_field(const uint8_t *data, size_t len, uint32_t field,
                 const uint8_t **sub, size_t *sublen) {
  const uint8_t *p = data, *end = data + len;
  while (p < end) {
    uint64_t key, v;
    size_t n = fmt_pb_wire_varint(p, end, &key);
    if (!n)
      return 0;
    p += n;
    switch (key & 7) {
    case 0: /* varint */
      n = fmt_pb_wire_varint(p, end, &v);
      if (!n)
        return 0;
      p += n;
      break;
    case 1: /* 64-bit */
      if (end - p < 8)
        return 0;
      p += 8;
      break;
    case 5: /* 32-bit */
      if (end - p < 4)
        return 0;
      p += 4;
      break;
    case 2: /* length-delimited */
      n = fmt_pb_wire_varint(p, end, &v);
      if (!n || v > (uint64_t)(end - p - (ptrdiff_t)n))
        return 0;
      p += n;
      if ((key >> 3) == field) {
        *sub = p;
        *sublen = (size_t)v;
        return 1;
      }
      p += v;
      break;
    default:
      return 0;
    }
  }
  return 0;
}

uint64_t fmt_pb_pos(const struct fmt_pb *r) { return r->pos; }

uint64_t fmt_pb_size(const struct fmt_pb *r) { return r->size; }

void fmt_pb_close(struct fmt_pb *r) {
  if (!r)
    return;
  if (r->map)
    munmap(r->map, (size_t)r->size);
  ASAN_UNPOISON_MEMORY_REGION(r->arena.base, r->arena.cap);
  free(r->arena.base);
  pbwire_free(r->wire);
  free(r);
}

/* Writes n bytes; returns 0 or a negative errno-style code. */
static int fmt_pb_fwrite(FILE *f, const void *p, size_t n) {
  errno = 0;
  if (n && fwrite(p, 1, n, f) != n)
    return errno ? -errno : -EIO;
  return 0;
}

int fmt_pb_write_header(FILE *f, const char *magic) {
  if (strlen(magic) != 4)
    return -EINVAL;
  uint8_t h[FMT_PB_HEADER_SIZE];
  memcpy(h, magic, 4);
  for (unsigned i = 0; i < 4; i++)
    h[4 + i] = (uint8_t)(FMT_PB_VERSION >> (8 * i));
  return fmt_pb_fwrite(f, h, sizeof h);
}

int fmt_pb_write_msg(FILE *f, const ProtobufCMessage *m) {
  uint8_t stack[1024], prefix[FMT_PB_VARINT_MAX];
  size_t len = protobuf_c_message_get_packed_size(m);
  if (len > FMT_PB_MAX_RECORD)
    return -EMSGSIZE;
  size_t n = 0, v = len;
  while (v >= 0x80) {
    prefix[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  prefix[n++] = (uint8_t)v;
  uint8_t *buf = len <= sizeof stack ? stack : xmalloc(len);
  protobuf_c_message_pack(m, buf);
  int rc = fmt_pb_fwrite(f, prefix, n);
  if (rc == 0)
    rc = fmt_pb_fwrite(f, buf, len);
  if (buf != stack)
    free(buf);
  return rc;
}
