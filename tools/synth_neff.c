/* synth_neff.c -- compiled-model files (NEFF) for the generator: the public
 * 1024-byte header (written by fmt_neff_write) and a small but genuine
 * payload, a gzipped tar of info.json and an sg00/ subgraph folder.  The
 * header's hash is the SHA-256 of the payload (package version 1).
 */
#include "synth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#define ZLIB_CONST /* next_in is const: deflate only reads it */
#include <zlib.h>

#include "fmt_neff.h"

#define SYNTH_NEFF_COMPILER "2.21.18209.0+043b1bf7"

/* ---------------------------------------------------------------- SHA-256 */

static const uint32_t synth_neff_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t synth_neff_ror(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

static void synth_neff_sha256_block(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64], v[8];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = synth_neff_ror(w[i - 15], 7) ^ synth_neff_ror(w[i - 15], 18) ^
                  (w[i - 15] >> 3);
    uint32_t s1 = synth_neff_ror(w[i - 2], 17) ^ synth_neff_ror(w[i - 2], 19) ^
                  (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(v, h, sizeof v);
  for (int i = 0; i < 64; i++) {
    uint32_t s1 = synth_neff_ror(v[4], 6) ^ synth_neff_ror(v[4], 11) ^
                  synth_neff_ror(v[4], 25);
    uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    uint32_t t1 = v[7] + s1 + ch + synth_neff_k[i] + w[i];
    uint32_t s0 = synth_neff_ror(v[0], 2) ^ synth_neff_ror(v[0], 13) ^
                  synth_neff_ror(v[0], 22);
    uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    memmove(v + 1, v, 7 * sizeof *v);
    v[4] += t1;
    v[0] = t1 + s0 + maj;
  }
  for (int i = 0; i < 8; i++)
    h[i] += v[i];
}

/* Writes the SHA-256 of p[0..n) as 64 lowercase hex digits into hex[65]. */
static void synth_neff_sha256_hex(const uint8_t *p, size_t n, char hex[65]) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t tail[128] = {0};
  size_t full = n / 64 * 64, rest = n - full;
  for (size_t i = 0; i < full; i += 64)
    synth_neff_sha256_block(h, p + i);
  memcpy(tail, p + full, rest);
  tail[rest] = 0x80;
  size_t tlen = rest < 56 ? 64 : 128;
  uint64_t bits = (uint64_t)n * 8;
  for (int i = 0; i < 8; i++)
    tail[tlen - 1 - i] = (uint8_t)(bits >> (8 * i));
  for (size_t i = 0; i < tlen; i += 64)
    synth_neff_sha256_block(h, tail + i);
  for (int i = 0; i < 8; i++)
    snprintf(hex + 8 * i, 9, "%08x", h[i]);
}

/* ---------------------------------------------------------------------- tar */

/* Appends one ustar entry (a file, or a directory when data is NULL). */
static void synth_neff_tar_add(struct sbuf *t, const char *name,
                               const char *data) {
  char h[512] = {0};
  size_t len = data ? strlen(data) : 0;
  unsigned mtime = (unsigned)(SYNTH_BASE_NS / 1000000000 - 3600);
  snprintf(h, 100, "%s", name);
  snprintf(h + 100, 8, "%07o", data ? 0644 : 0755);
  snprintf(h + 108, 8, "%07o", 0);
  snprintf(h + 116, 8, "%07o", 0);
  snprintf(h + 124, 12, "%011o", (unsigned)len);
  snprintf(h + 136, 12, "%011o", mtime);
  memset(h + 148, ' ', 8);
  h[156] = data ? '0' : '5';
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  snprintf(h + 265, 32, "root");
  snprintf(h + 297, 32, "root");
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += (uint8_t)h[i];
  snprintf(h + 148, 8, "%06o", sum);
  h[155] = ' ';
  sbuf_add(t, h, sizeof h);
  if (len) {
    static const char zero[512];
    sbuf_add(t, data, len);
    sbuf_add(t, zero, (512 - len % 512) % 512);
  }
}

/* Gzips n bytes; returns 0 and a malloc'd *out of *out_len bytes. */
static int synth_neff_gzip(const void *p, size_t n, uint8_t **out,
                           size_t *out_len) {
  z_stream z = {0};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -ENOMEM;
  size_t cap = deflateBound(&z, (uLong)n) + 64;
  *out = xmalloc(cap);
  z.next_in = p;
  z.avail_in = (uInt)n;
  z.next_out = *out;
  z.avail_out = (uInt)cap;
  int zr = deflate(&z, Z_FINISH);
  *out_len = z.total_out;
  deflateEnd(&z);
  if (zr != Z_STREAM_END) {
    free(*out);
    *out = NULL;
    return -EIO;
  }
  return 0;
}

int synth_neff_write(const struct synth *s, const char *dir,
                     const struct synth_model *m) {
  struct sbuf tar = {0};
  char *info = xasprintf(
      "{\"tool_version\": \"" SYNTH_NEFF_COMPILER "\", \"model_name\": "
      "\"%s\", \"neff_hash\": \"%" PRIu64 "\", \"num_neuroncores\": 1}\n",
      m->name, m->hash);
  char *def = xasprintf("{\"name\": \"sg00\", \"mac_count\": %" PRIu64 "}\n",
                        m->mac_count);
  static const char end[1024];
  synth_neff_tar_add(&tar, "info.json", info);
  synth_neff_tar_add(&tar, "sg00/", NULL);
  synth_neff_tar_add(&tar, "sg00/def.json", def);
  sbuf_add(&tar, end, sizeof end);
  free(info);
  free(def);

  uint8_t *gz;
  size_t gz_len;
  int rc = synth_neff_gzip(tar.s, tar.len, &gz, &gz_len);
  sbuf_free(&tar);
  if (rc < 0)
    return rc;

  struct fmt_neff_header h = {.package_version = 1,
                              .major_version = 2,
                              .minor_version = 0,
                              .num_tpb = 1,
                              .requested_tpb_count = 1};
  struct synth_rng r = {synth_rng_stream(s->o.seed, 7, (uint64_t)m->k)};
  snprintf(h.build_version, sizeof h.build_version, SYNTH_NEFF_COMPILER);
  snprintf(h.name, sizeof h.name, "%s", m->name);
  synth_neff_sha256_hex(gz, gz_len, h.hash_hex);
  uint64_t u0 = synth_rng_next(&r), u1 = synth_rng_next(&r);
  snprintf(h.uuid_hex, sizeof h.uuid_hex, "%016" PRIx64 "%016" PRIx64, u0, u1);
  FILE *f = synth_fopen(dir, m->file);
  if (!f) {
    rc = -errno;
  } else {
    rc = fmt_neff_write(f, &h, gz, gz_len);
    int rc2 = synth_fclose(f);
    rc = rc ? rc : rc2;
  }
  free(gz);
  return rc;
}
