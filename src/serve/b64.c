/* src/serve/b64.c — base64 encoding of response bytes (see b64.h). */
#include "serve/b64.h"

#include <stdlib.h>

char *serve_b64_encode(const unsigned char *p, size_t n) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = malloc((n + 2) / 3 * 4 + 1);
  if (!o) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    o[k++] = tbl[v >> 18 & 63];
    o[k++] = tbl[v >> 12 & 63];
    o[k++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
    o[k++] = i + 2 < n ? tbl[v & 63] : '=';
  }
  o[k] = '\0';
  return o;
}
