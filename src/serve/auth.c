/* src/serve/auth.c — API keys and the constant-time Bearer check (see
 * auth.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "model/sha256.h"
#include "serve/auth.h"

at_status serve_auth_add(serve_auth *a, const char *key, size_t len) {
  if (len < AUTH_MIN_KEY_LEN || len > AUTH_MAX_KEY_LEN)
    return at_fail(AT_ERR_INVALID_ARG, "an API key must be %d to %d characters long (one is %zu)",
                   AUTH_MIN_KEY_LEN, AUTH_MAX_KEY_LEN, len);
  for (size_t i = 0; i < len; i++)
    if (!isgraph((unsigned char)key[i]))
      return at_fail(AT_ERR_INVALID_ARG, "an API key may hold only printable ASCII characters "
                     "without spaces (one has byte %zu = 0x%02x)", i, (unsigned char)key[i]);
  if (a->n >= AUTH_MAX_KEYS) return at_fail(AT_ERR_LIMIT, "more than %d API keys", AUTH_MAX_KEYS);
  at_sha256_once(key, len, a->digest[a->n++]);
  return AT_OK;
}

at_status serve_auth_add_text(serve_auth *a, const char *text, size_t len, const char *label) {
  size_t i = 0;
  int line = 0;
  while (i < len) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    line++;
    size_t s = i, t = e;
    while (s < t && isspace((unsigned char)text[s])) s++;
    while (t > s && isspace((unsigned char)text[t - 1])) t--;
    if (t > s && text[s] != '#') {
      at_status st = serve_auth_add(a, text + s, t - s);
      if (st != AT_OK) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", at_last_error());
        return at_fail(st, "%s line %d: %s", label, line, detail);
      }
    }
    i = e + 1;
  }
  return AT_OK;
}

bool serve_auth_check(const serve_auth *a, const char *header) {
  if (a->n == 0) return true;
  if (!header || strncasecmp(header, "Bearer ", 7) != 0) return false;
  const char *k = header + 7;
  while (*k == ' ') k++;
  size_t len = strlen(k);
  while (len && (k[len - 1] == ' ' || k[len - 1] == '\t')) len--;
  if (len == 0 || len > AUTH_MAX_KEY_LEN) return false;
  uint8_t d[32];
  at_sha256_once(k, len, d);
  unsigned match = 0;
  for (int i = 0; i < a->n; i++) { /* every key, no early exit */
    unsigned diff = 0;
    for (int b = 0; b < 32; b++) diff |= (unsigned)(a->digest[i][b] ^ d[b]);
    match |= (unsigned)(diff == 0);
  }
  return match != 0;
}
