/* src/serve/client_id.h — who a request is from, for the rules that treat
 * clients apart (today: the hold of an early retry, holdq.h), and the
 * return slot each identified client was last told. Internal to src/serve.
 *
 * Identity, strongest first (serve_client_from):
 *   1. the API key it authenticated with (when the server has keys);
 *   2. the client-id header (server.client_id_header, default x-client-id);
 *   3. with server.trust_forwarded, the address the proxy in front saw:
 *      the last entry of X-Forwarded-For;
 *   4. a connection with no forwarding header (X-Forwarded-For, Forwarded,
 *      Via) is one client's own: the connection is the identity;
 *   5. otherwise (a proxy we do not trust, whose upstream connections carry
 *      many users' requests) the request is anonymous.
 * 1-3 are CLIENT_ID (one slot across all its connections), 4 CLIENT_CONN,
 * 5 CLIENT_NONE (never held: a popular query through a shared upstream
 * connection must not wait for someone else's slot). */
#ifndef ANYTIME_SERVE_CLIENT_ID_H
#define ANYTIME_SERVE_CLIENT_ID_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

typedef enum { CLIENT_NONE, CLIENT_CONN, CLIENT_ID } client_kind;

typedef struct serve_client {
  client_kind kind;
  uint64_t id; /* CLIENT_ID: a hash of the identity (never 0); else 0 */
} serve_client;

/* The identity of a request from its headers (NULL: absent). `auth` is its
 * Authorization header, used only when `keys_on` (the server checked it).
 * Pure. */
serve_client serve_client_from(const char *auth, const char *client_hdr, const char *xff,
                               const char *forwarded, const char *via, bool keys_on,
                               bool trust_forwarded);

/* The key the planner shares capacity by (at_plan_request.client): an
 * identified client's id; for a connection that is its client's own, its
 * peer's address (all connections from one address are one client: a
 * load tool's or an SDK's pool is one client, as it is one user); 0 for
 * an anonymous request (outside fair sharing). `peer` may be NULL (then
 * a CLIENT_CONN request is anonymous too). Pure. */
struct sockaddr;
uint64_t serve_client_share_key(serve_client who, const struct sockaddr *peer);
/* The same from a peer named as text (gRPC's "ipv4:10.0.0.7:51234"): the
 * address without its port. */
uint64_t serve_client_share_key_text(serve_client who, const char *peer);

/* A "priority" member of a JSON body (V2's "parameters"."priority",
 * /v1/embeddings): "high", "normal" or "low" (any case). Numbers are
 * refused: vLLM's integer priority puts lower values first and Triton's
 * has 1 highest and 0 "the default", so a number from either would be
 * read against its meaning. NULL or JSON null: *given = false. false for
 * anything else. Pure. */
bool serve_priority_json(const json_t *v, int *out, bool *given);

/* A request's priority class from its x-priority header: "high" (1),
 * "normal" (0), "low" (-1), or those numbers; NULL is normal. false for
 * anything else. Pure. */
bool serve_priority_parse(const char *v, int *out);

/* The return slots of identified clients: a fixed table (cap entries, a
 * power of two) keyed by serve_client.id. When it is full, a client whose
 * slot has passed, else the one with the earliest slot in its probe run,
 * gives its entry up (it then loses its hold: an early retry of it is
 * answered at once, as one from a new client is). Thread-safe (one lock). */
typedef struct serve_slots serve_slots;
at_status serve_slots_create(size_t cap, serve_slots **out);
void serve_slots_destroy(serve_slots *t);
/* The slot client `id` was last told (0: none). */
uint64_t serve_slots_get(serve_slots *t, uint64_t id);
/* The slot client `id` was last told (0: none), replaced by `told_ns`. */
uint64_t serve_slots_swap(serve_slots *t, uint64_t id, uint64_t told_ns);

#endif
