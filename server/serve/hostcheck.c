/* hostcheck.c -- see hostcheck.h. */
#include "hostcheck.h"

#include <string.h>
#include <strings.h>

bool hostcheck_allowed(const char *host, const char *bind) {
  char name[256];
  size_t n;
  const char *port;
  if (host[0] == '[') {
    const char *close_br = strchr(host, ']');
    if (!close_br)
      return false;
    n = (size_t)(close_br - host) + 1;
    port = close_br + 1;
  } else {
    n = strcspn(host, ":");
    port = host + n;
  }
  if (n == 0 || n >= sizeof name)
    return false;
  if (*port == ':') {
    port++;
    if (!*port || strspn(port, "0123456789") != strlen(port))
      return false;
  } else if (*port) {
    return false;
  }
  memcpy(name, host, n);
  name[n] = '\0';
  if (strcasecmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0 ||
      strcmp(name, "[::1]") == 0)
    return true;
  /* the literal --bind address, when it names one interface */
  if (!bind || !*bind || strcmp(bind, "0.0.0.0") == 0 ||
      strcmp(bind, "::") == 0)
    return false;
  if (strchr(bind, ':')) /* IPv6 literal: compare inside the brackets */
    return name[0] == '[' && strlen(bind) == n - 2 &&
           strncasecmp(name + 1, bind, n - 2) == 0;
  return strcasecmp(name, bind) == 0;
}

bool hostcheck_same_origin(const char *site, const char *origin,
                           const char *host) {
  const char *o = origin;
  if (site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
    return false;
  if (!origin)
    return true;
  if (strncasecmp(o, "http://", 7) == 0)
    o += 7;
  else if (strncasecmp(o, "https://", 8) == 0)
    o += 8;
  return o != origin && host && strcasecmp(o, host) == 0;
}
