/* src/serve/client_id.c — a request's client identity, its priority class,
 * and the identified clients' return slots (client_id.h says which identity
 * wins and why).
 *
 * DESIGN
 *   Identities are hashed (FNV-1a over a kind tag and the value), so the
 *   table keeps no key or header text. The slot table is open-addressed
 *   with a probe run of SLOT_PROBE entries under one mutex: a lookup is a
 *   handful of compares, taken only on a refusal.
 */
#include "serve/client_id.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "core/internal.h"

#define SLOT_PROBE 8

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static serve_client id_of(char tag, const char *s, size_t n) {
  uint64_t h = fnv(1469598103934665603ull, &tag, 1);
  return (serve_client){CLIENT_ID, fnv(h, s, n) | 1};
}

/* The last entry of an X-Forwarded-For list, trimmed; NULL if empty. */
static const char *last_hop(const char *xff, size_t *len) {
  const char *start = strrchr(xff, ',');
  start = start ? start + 1 : xff;
  while (*start == ' ' || *start == '\t') start++;
  size_t n = strlen(start);
  while (n && (start[n - 1] == ' ' || start[n - 1] == '\t')) n--;
  *len = n;
  return n ? start : NULL;
}

serve_client serve_client_from(const char *auth, const char *client_hdr, const char *xff,
                               const char *forwarded, const char *via, bool keys_on,
                               bool trust_forwarded) {
  if (keys_on && auth && strncasecmp(auth, "Bearer ", 7) == 0 && auth[7])
    return id_of('k', auth + 7, strlen(auth + 7));
  if (client_hdr && client_hdr[0]) return id_of('c', client_hdr, strlen(client_hdr));
  size_t n;
  const char *hop;
  if (trust_forwarded && xff && (hop = last_hop(xff, &n))) return id_of('a', hop, n);
  if (xff || forwarded || via) return (serve_client){CLIENT_NONE, 0};
  return (serve_client){CLIENT_CONN, 0};
}

uint64_t serve_client_share_key(serve_client who, const struct sockaddr *peer) {
  if (who.kind == CLIENT_ID) return who.id;
  if (who.kind != CLIENT_CONN || !peer) return 0;
  if (peer->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)peer;
    return id_of('4', (const char *)&a->sin_addr, sizeof a->sin_addr).id;
  }
  if (peer->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)peer;
    return id_of('6', (const char *)&a->sin6_addr, sizeof a->sin6_addr).id;
  }
  return 0; /* a Unix socket: no address to tell clients apart by */
}

uint64_t serve_client_share_key_text(serve_client who, const char *peer) {
  if (who.kind == CLIENT_ID) return who.id;
  if (who.kind != CLIENT_CONN || !peer || !peer[0]) return 0;
  const char *colon = strrchr(peer, ':');
  size_t n = colon && colon != peer ? (size_t)(colon - peer) : strlen(peer);
  return id_of('t', peer, n).id;
}

bool serve_priority_json(const json_t *v, int *out, bool *given) {
  *given = false;
  *out = 0;
  if (!v || json_is_null(v)) return true;
  if (!json_is_string(v)) return false; /* numbers: see client_id.h */
  const char *s = json_string_value(v);
  if (!strcasecmp(s, "high")) return *out = 1, *given = true;
  if (!strcasecmp(s, "normal")) return *out = 0, *given = true;
  if (!strcasecmp(s, "low")) return *out = -1, *given = true;
  return false;
}

bool serve_priority_parse(const char *v, int *out) {
  static const struct {
    const char *name;
    int prio;
  } k[] = {{"high", 1}, {"1", 1}, {"normal", 0}, {"0", 0}, {"low", -1}, {"-1", -1}};
  *out = 0;
  if (!v) return true;
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    if (!strcasecmp(v, k[i].name)) return *out = k[i].prio, true;
  return false;
}

typedef struct slot {
  uint64_t id, told_ns;
} slot;

struct serve_slots {
  pthread_mutex_t lock;
  size_t mask;
  slot *s;
};

at_status serve_slots_create(size_t cap, serve_slots **out) {
  *out = NULL;
  if (cap < SLOT_PROBE || (cap & (cap - 1)))
    return at_fail(AT_ERR_INVALID_ARG, "slot table: %zu is not a power of two >= %d", cap,
                   SLOT_PROBE);
  serve_slots *t = calloc(1, sizeof *t);
  if (!t || !(t->s = calloc(cap, sizeof *t->s))) {
    free(t);
    return at_fail(AT_ERR_NOMEM, "out of memory");
  }
  pthread_mutex_init(&t->lock, NULL);
  t->mask = cap - 1;
  *out = t;
  return AT_OK;
}

void serve_slots_destroy(serve_slots *t) {
  if (!t) return;
  pthread_mutex_destroy(&t->lock);
  free(t->s);
  free(t);
}

/* The entry client `id` has in its probe run, or, when it has none, the
 * one it would take: the first empty entry, else the earliest slot of the
 * run (a passed one first). Entries are never emptied, so an id is never
 * past an empty one. *found says which. Caller holds t->lock. */
static slot *probe(serve_slots *t, uint64_t id, bool *found) {
  size_t home = (size_t)(id ^ (id >> 29)) & t->mask;
  slot *take = &t->s[home];
  for (size_t k = 0; k < SLOT_PROBE; k++) {
    slot *e = &t->s[(home + k) & t->mask];
    if (e->id == id) return *found = true, e;
    if (take->id != 0 && (e->id == 0 || e->told_ns < take->told_ns)) take = e;
  }
  *found = false;
  return take;
}

/* The slot of `id` (0: none), replaced by told_ns when `set`. */
static uint64_t slots_access(serve_slots *t, uint64_t id, bool set, uint64_t told_ns) {
  bool found;
  pthread_mutex_lock(&t->lock);
  slot *e = probe(t, id, &found);
  uint64_t old = found ? e->told_ns : 0;
  if (set) *e = (slot){id, told_ns};
  pthread_mutex_unlock(&t->lock);
  return old;
}

uint64_t serve_slots_get(serve_slots *t, uint64_t id) { return slots_access(t, id, false, 0); }

uint64_t serve_slots_swap(serve_slots *t, uint64_t id, uint64_t told_ns) {
  return slots_access(t, id, true, told_ns);
}
