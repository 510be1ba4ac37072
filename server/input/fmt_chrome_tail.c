/* fmt_chrome_tail.c -- see fmt_chrome_tail.h. */
#include "fmt_chrome_tail.h"
#include "jsrc.h"
#include "jtok.h"
#include "jval.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FMT_CHROME_TAIL_BYTES 65536

/* The byte before b[*i] that is not JSON whitespace, *i moved onto it
 * (one past it); -1 at the start of the buffer. */
static int fmt_chrome_tail_prev(const unsigned char *b, size_t *i) {
  while (*i > 0 && jtok_blank(b[*i - 1]))
    (*i)--;
  return *i > 0 ? b[*i - 1] : -1;
}

/* The string whose closing quote is b[*i - 1]: its text is b[*s, *s + *n)
 * and *i moves before its opening quote.  Returns 0, or -1 when it holds a
 * backslash or a control character or has no opening quote. */
static int fmt_chrome_tail_string(const unsigned char *b, size_t *i, size_t *s,
                                  size_t *n) {
  size_t end = *i - 1, j = end;
  for (; j > 0 && b[j - 1] != '"'; j--)
    if (b[j - 1] == '\\' || b[j - 1] < 0x20)
      return -1;
  if (j == 0)
    return -1;
  *s = j;
  *n = end - j;
  *i = j - 1;
  return 0;
}

/* A number or literal ending at b[*i - 1]: as fmt_chrome_tail_string. */
static int fmt_chrome_tail_bare(const unsigned char *b, size_t *i, size_t *s,
                                size_t *n) {
  size_t j = *i;
  while (j > 0 && b[j - 1] && strchr("+-.0123456789eEaflnrstuINfiy", b[j - 1]))
    j--;
  if (j == *i)
    return -1;
  *s = j;
  *n = *i - j;
  *i = j;
  return 0;
}

/* The object or array whose closing bracket is b[*i - 1]: *i moves before
 * its opening bracket.  Returns 0; 1 when the window holds no opening
 * bracket for it (*i is then 0); -1 when its brackets do not match. */
static int fmt_chrome_tail_nested(const unsigned char *b, size_t *i) {
  unsigned char stack[64];
  int depth = 0;
  bool in_str = false;
  for (size_t j = *i; j > 0; j--) {
    unsigned char c = b[j - 1];
    if (in_str) { /* a quote ends it unless an odd run of \ escapes it */
      size_t k = j - 1;
      while (c == '"' && k > 0 && b[k - 1] == '\\')
        k--;
      in_str = !(c == '"' && (j - 1 - k) % 2 == 0);
    } else if (c == '"') {
      in_str = true;
    } else if (c == '}' || c == ']') {
      if (depth == (int)sizeof stack)
        return -1;
      stack[depth++] = c;
    } else if (c == '{' || c == '[') {
      if (depth == 0 || stack[--depth] != (c == '{' ? '}' : ']'))
        return -1;
      if (depth == 0) {
        *i = j - 1;
        return 0;
      }
    }
  }
  *i = 0;
  return 1;
}

/* Reads the members of b[0, len) backwards from the top-level '}' to the
 * traceEvents array; returns as fmt_chrome_tail_base(). */
static int fmt_chrome_tail_members(const unsigned char *b, size_t len,
                                   int64_t *base_ns) {
  size_t i = len, s = 0, n = 0, ks, kn;
  int found = 0;
  if (fmt_chrome_tail_prev(b, &i) != '}')
    return -1;
  i--;
  for (;;) {
    int c = fmt_chrome_tail_prev(b, &i), rc;
    if (c == '}' || c == ']') {
      rc = fmt_chrome_tail_nested(b, &i);
      if (rc == 1) /* an array larger than the window: the events' */
        return c == ']' ? found : -1;
    } else if (c == '"') {
      rc = fmt_chrome_tail_string(b, &i, &s, &n);
    } else {
      rc = fmt_chrome_tail_bare(b, &i, &s, &n);
    }
    bool nested = c == '}' || c == ']';
    if (rc || fmt_chrome_tail_prev(b, &i) != ':')
      return -1;
    i--;
    if (fmt_chrome_tail_prev(b, &i) != '"' ||
        fmt_chrome_tail_string(b, &i, &ks, &kn))
      return -1;
    if (kn == 11 && !memcmp(b + ks, "traceEvents", 11))
      return c == ']' ? found : -1;
    int64_t ns;
    if (!found && !nested && kn == 19 &&
        !memcmp(b + ks, "baseTimeNanoseconds", 19) &&
        !jval_decimal(b + s, n, 0, &ns)) {
      *base_ns = ns;
      found = 1;
    }
    if (fmt_chrome_tail_prev(b, &i) != ',')
      return -1;
    i--;
  }
}

int fmt_chrome_tail_base(const char *path, int64_t *base_ns) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0)
    return -1;
  int rc = -1;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 2 &&
      !jsrc_is_gzip(fd)) {
    size_t len = sb.st_size > FMT_CHROME_TAIL_BYTES ? FMT_CHROME_TAIL_BYTES
                                                    : (size_t)sb.st_size;
    unsigned char *b = malloc(len);
    if (b && pread(fd, b, len, sb.st_size - (off_t)len) == (ssize_t)len)
      rc = fmt_chrome_tail_members(b, len, base_ns);
    free(b);
  }
  close(fd);
  return rc;
}
