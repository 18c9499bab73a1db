/* tests/fuzz/fuzz_auth.c — libFuzzer driver for the API-key file reader and
 * the Bearer check (src/serve/auth.c). The input is split at its first NUL:
 * a key file's text, then an Authorization header value. Properties: no
 * crash; a file that loads holds at most AUTH_MAX_KEYS keys; the check is a
 * pure function (the same answer twice); an empty set passes everything;
 * every key line the file accepted passes as "Bearer KEY". The header value
 * also goes to the client identity (src/serve/client_id.c) as each of its
 * inputs: pure, an identity is never 0, and an untrusted forwarded header
 * alone is anonymous. Seeds: tests/fuzz/corpus/auth/. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/auth.h"
#include "serve/client_id.h"

static void check_identity(const char *h) {
  for (int trust = 0; trust < 2; trust++) {
    serve_client a = serve_client_from(h, NULL, h, NULL, NULL, true, trust);
    serve_client b = serve_client_from(h, NULL, h, NULL, NULL, true, trust);
    if (a.kind != b.kind || a.id != b.id) abort();
    if ((a.kind == CLIENT_ID) != (a.id != 0)) abort();
    serve_client c = serve_client_from(NULL, h, NULL, NULL, NULL, false, trust);
    if (c.kind != (h[0] ? CLIENT_ID : CLIENT_CONN)) abort();
    serve_client x = serve_client_from(NULL, NULL, h, NULL, NULL, false, trust);
    if (!trust && x.kind != CLIENT_NONE) abort();
    if (x.kind == CLIENT_CONN || (x.kind == CLIENT_ID && !x.id)) abort();
  }
  int prio = 7;
  if (serve_priority_parse(h, &prio) ? prio < -1 || prio > 1 : prio != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t flen = nul ? (size_t)(nul - data) : size;
  char *hdr = malloc(size - flen + 1);
  if (!hdr) return 0;
  size_t hlen = nul ? size - flen - 1 : 0;
  memcpy(hdr, nul ? nul + 1 : data, hlen);
  hdr[hlen] = 0;
  check_identity(hdr);
  serve_auth a = {0};
  bool empty_pass = serve_auth_check(&a, hdr);
  if (!empty_pass) abort();
  if (serve_auth_add_text(&a, (const char *)data, flen, "fuzz") == AT_OK) {
    if (a.n < 0 || a.n > AUTH_MAX_KEYS) abort();
    bool x = serve_auth_check(&a, hdr), y = serve_auth_check(&a, hdr);
    if (x != y) abort();
    /* every accepted line passes */
    size_t i = 0;
    while (i < flen) {
      size_t e = i;
      while (e < flen && data[e] != '\n') e++;
      size_t s = i, t = e;
      while (s < t && isspace(data[s])) s++;
      while (t > s && isspace(data[t - 1])) t--;
      if (t > s && data[s] != '#' && t - s <= AUTH_MAX_KEY_LEN && !memchr(data + s, 0, t - s)) {
        char h[AUTH_MAX_KEY_LEN + 8];
        memcpy(h, "Bearer ", 7);
        memcpy(h + 7, data + s, t - s);
        h[7 + t - s] = 0;
        if (strlen(h) == 7 + t - s && !serve_auth_check(&a, h)) abort();
      }
      i = e + 1;
    }
  }
  free(hdr);
  return 0;
}
