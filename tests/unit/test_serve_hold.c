/* tests/unit/test_serve_hold.c — the held-refusal rule (serve_hold_decide,
 * src/serve/holdq.c) and its queue: the same request again on a connection
 * before the slot its last 429 gave is held to that slot (at most 1 s);
 * a different request on that connection — a client pool or a proxy
 * sharing it — never is (the first version held any request, and an
 * open-loop pool at ρ = 5 answered in 437 ms at p99); a request on time
 * is not; holds off or a non-deadline refusal never hold, but every
 * refusal is remembered. Who a client is (serve_client_from): its API key,
 * then its client-id header, then (trusted proxy only) the forwarded
 * address; a connection without forwarding headers is its own client; a
 * proxied request otherwise is anonymous. An identified client's slot holds
 * across connections and bodies; the slot table keeps clients apart and
 * gives up passed slots first. The queue starts, flushes and stops clean
 * (its resumes are exercised through the real server: serve_admission.sh). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "serve/client_id.h"
#include "serve/holdq.h"
#include "testutil.h"

#define MS 1000000ull

static void test_same_request_early_is_held(void **state) {
  (void)state;
  conn_state cs = {0};
  const char *a = "{\"inputs\":\"the movie was good\"}", *b = "{\"inputs\":\"the movie was bad\"}";
  uint64_t sa = serve_body_sig(a, strlen(a)), sb = serve_body_sig(b, strlen(b));
  assert_true(sa != 0 && sb != 0 && sa != sb);
  /* a first refusal: answered now, its slot remembered */
  assert_int_equal(serve_hold_decide(&cs, 1000 * MS, 0.040, sa, true), 0);
  assert_int_equal(cs.told_ns, 1040 * MS);
  /* the same body again 1 ms later: held to the slot it was told */
  assert_int_equal(serve_hold_decide(&cs, 1001 * MS, 0.050, sa, true), 1040 * MS);
  assert_int_equal(cs.told_ns, 1051 * MS); /* and told the next one */
  /* another body on the same connection, early: not held */
  assert_int_equal(serve_hold_decide(&cs, 1002 * MS, 0.010, sb, true), 0);
  assert_int_equal(cs.refused_sig, sb);
  /* on time (at or after the slot): not held */
  assert_int_equal(serve_hold_decide(&cs, 1012 * MS, 0.010, sb, true), 0);
  /* holds off, or not a deadline refusal: never held, still remembered */
  assert_int_equal(serve_hold_decide(&cs, 1013 * MS, 0.010, sb, false), 0);
  assert_int_equal(cs.told_ns, 1023 * MS);
  /* a slot further than 1 s away: held 1 s */
  cs.told_ns = 5000 * MS;
  assert_int_equal(serve_hold_decide(&cs, 1014 * MS, 0.010, sb, true),
                   1014 * MS + SERVE_HOLD_MAX_NS);
  /* no usable advice: remembered as "now" */
  serve_hold_decide(&cs, 2000 * MS, -1, sb, true);
  assert_int_equal(cs.told_ns, 2000 * MS);
}

static void test_signature(void **state) {
  (void)state;
  /* long bodies: the ends and the length decide, the middle does not */
  static char x[4096], y[4096];
  memset(x, 'a', sizeof x);
  memcpy(y, x, sizeof y);
  y[2000] = 'b';
  assert_true(serve_body_sig(x, sizeof x) == serve_body_sig(y, sizeof y));
  y[4095] = 'b';
  assert_true(serve_body_sig(x, sizeof x) != serve_body_sig(y, sizeof y));
  assert_true(serve_body_sig(x, 100) != serve_body_sig(x, 101));
  assert_true(serve_body_sig(NULL, 0) != 0);
}

static void test_client_identity(void **state) {
  (void)state;
  /* the key wins when the server checks keys; ignored otherwise */
  serve_client k1 = serve_client_from("Bearer key-one", "app-7", NULL, NULL, NULL, true, false);
  serve_client k2 = serve_client_from("Bearer key-two", "app-7", NULL, NULL, NULL, true, false);
  serve_client c7 = serve_client_from("Bearer key-one", "app-7", NULL, NULL, NULL, false, false);
  serve_client c7b = serve_client_from(NULL, "app-7", "10.0.0.1", NULL, NULL, false, false);
  assert_int_equal(k1.kind, CLIENT_ID);
  assert_true(k1.id != 0 && k1.id != k2.id && k1.id != c7.id);
  assert_int_equal(c7.kind, CLIENT_ID);
  assert_true(c7.id == c7b.id); /* the header names it wherever it comes from */
  /* a header value equal to a key is another identity (kind tags) */
  serve_client ck = serve_client_from(NULL, "key-one", NULL, NULL, NULL, false, false);
  assert_true(ck.id != k1.id);
  /* forwarded: trusted -> the last hop; not trusted -> anonymous */
  serve_client f1 = serve_client_from(NULL, NULL, "1.2.3.4, 10.0.0.9 ", NULL, NULL, false, true);
  serve_client f2 = serve_client_from(NULL, NULL, "10.0.0.9", NULL, NULL, false, true);
  serve_client f3 = serve_client_from(NULL, NULL, "10.0.0.8", NULL, NULL, false, true);
  assert_int_equal(f1.kind, CLIENT_ID);
  assert_true(f1.id == f2.id && f1.id != f3.id);
  assert_int_equal(serve_client_from(NULL, NULL, "10.0.0.9", NULL, NULL, false, false).kind,
                   CLIENT_NONE);
  assert_int_equal(serve_client_from(NULL, NULL, NULL, "for=1.2.3.4", NULL, false, true).kind,
                   CLIENT_NONE);
  assert_int_equal(serve_client_from(NULL, NULL, NULL, NULL, "1.1 nginx", false, false).kind,
                   CLIENT_NONE);
  assert_int_equal(serve_client_from(NULL, "", NULL, NULL, NULL, false, false).kind, CLIENT_CONN);
  assert_int_equal(serve_client_from("Bearer k", NULL, NULL, NULL, NULL, false, false).kind,
                   CLIENT_CONN);
}

/* The key capacity is shared by (issue 41): an identified client's id; a
 * connection's own client by its peer address, whatever the port; nothing
 * for an anonymous request or an unknown address family. */
static void test_share_key(void **state) {
  (void)state;
  serve_client id = serve_client_from(NULL, "app-7", NULL, NULL, NULL, false, false);
  serve_client conn = serve_client_from(NULL, NULL, NULL, NULL, NULL, false, false);
  serve_client none = serve_client_from(NULL, NULL, "10.0.0.9", NULL, NULL, false, false);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(1234)};
  struct sockaddr_in b = a, c = a;
  b.sin_port = htons(999);
  inet_pton(AF_INET, "10.1.2.3", &a.sin_addr);
  inet_pton(AF_INET, "10.1.2.3", &b.sin_addr);
  inet_pton(AF_INET, "10.1.2.4", &c.sin_addr);
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
  inet_pton(AF_INET6, "::1", &v6.sin6_addr);
  const struct sockaddr *pa = (const struct sockaddr *)&a, *pb = (const struct sockaddr *)&b,
                        *pc = (const struct sockaddr *)&c, *p6 = (const struct sockaddr *)&v6;
  assert_true(serve_client_share_key(id, pa) == id.id); /* the id, wherever it comes from */
  uint64_t ka = serve_client_share_key(conn, pa);
  assert_true(ka != 0 && ka == serve_client_share_key(conn, pb)); /* the port does not matter */
  assert_true(ka != serve_client_share_key(conn, pc));
  assert_true(serve_client_share_key(conn, p6) != 0 && serve_client_share_key(conn, p6) != ka);
  assert_true(serve_client_share_key(none, pa) == 0);
  assert_true(serve_client_share_key(conn, NULL) == 0);
  struct sockaddr other = {.sa_family = AF_UNIX};
  assert_true(serve_client_share_key(conn, &other) == 0);
  /* gRPC names its peer as text: the address without the port */
  uint64_t t1 = serve_client_share_key_text(conn, "ipv4:10.1.2.3:5000");
  assert_true(t1 != 0 && t1 == serve_client_share_key_text(conn, "ipv4:10.1.2.3:6000"));
  assert_true(t1 != serve_client_share_key_text(conn, "ipv4:10.1.2.4:5000"));
  assert_true(serve_client_share_key_text(id, "ipv4:10.1.2.3:5000") == id.id);
  assert_true(serve_client_share_key_text(none, "ipv4:10.1.2.3:5000") == 0);
  assert_true(serve_client_share_key_text(conn, NULL) == 0);
}

/* "priority" in a JSON body: the words only (numbers mean opposite things
 * to vLLM's and Triton's clients). */
static void test_body_priority(void **state) {
  (void)state;
  int p;
  bool given;
  json_t *v;
  assert_true(serve_priority_json(NULL, &p, &given) && !given && p == 0);
  assert_true(serve_priority_json(v = json_null(), &p, &given) && !given), json_decref(v);
  assert_true(serve_priority_json(v = json_string("high"), &p, &given) && given && p == 1);
  json_decref(v);
  assert_true(serve_priority_json(v = json_string("LOW"), &p, &given) && given && p == -1);
  json_decref(v);
  assert_true(serve_priority_json(v = json_string("normal"), &p, &given) && given && p == 0);
  json_decref(v);
  assert_false(serve_priority_json(v = json_integer(-1), &p, &given)), json_decref(v);
  assert_false(serve_priority_json(v = json_integer(1), &p, &given)), json_decref(v);
  assert_false(serve_priority_json(v = json_string("1"), &p, &given)), json_decref(v);
  assert_false(serve_priority_json(v = json_string("urgent"), &p, &given)), json_decref(v);
  assert_false(serve_priority_json(v = json_real(1.0), &p, &given)), json_decref(v);
  assert_false(serve_priority_json(v = json_true(), &p, &given)), json_decref(v);
}

static void test_slots(void **state) {
  (void)state;
  serve_slots *t;
  assert_int_equal(serve_slots_create(12, &t), AT_ERR_INVALID_ARG);
  assert_int_equal(serve_slots_create(16, &t), AT_OK);
  /* a client's slot, told at 1040 ms: an early request (any connection,
   * any body) is held to it; another client is not */
  assert_int_equal(serve_slots_swap(t, 11, serve_hold_told(1000 * MS, 0.040)), 0);
  uint64_t old = serve_slots_swap(t, 11, serve_hold_told(1001 * MS, 0.050));
  assert_int_equal(old, 1040 * MS);
  assert_int_equal(serve_hold_until(old, 1001 * MS, true), 1040 * MS);
  assert_int_equal(serve_hold_until(old, 1001 * MS, false), 0);
  assert_int_equal(serve_hold_until(old, 1041 * MS, true), 0); /* on time */
  assert_int_equal(serve_slots_swap(t, 13, 1 * MS), 0);
  /* far out: held at most SERVE_HOLD_MAX_NS */
  assert_int_equal(serve_hold_until(1000 * MS + 10 * SERVE_HOLD_MAX_NS, 1000 * MS, true),
                   1000 * MS + SERVE_HOLD_MAX_NS);
  /* full: 40 clients in 16 entries, each keeps its own slot while it lasts,
   * and a client still in the table reads back its own slot, never another's */
  for (uint64_t id = 101; id < 141; id += 2) serve_slots_swap(t, id, id * MS);
  for (uint64_t id = 101; id < 141; id += 2) {
    uint64_t got = serve_slots_swap(t, id, id * MS);
    assert_true(got == 0 || got == id * MS);
  }
  assert_int_equal(serve_slots_swap(t, 139, 5 * MS), 139 * MS); /* the last one written */
  serve_slots_destroy(t);
  serve_slots_destroy(NULL);
}

static void test_queue_flush(void **state) {
  (void)state;
  serve_holdq *q = NULL;
  assert_int_equal(serve_holdq_create(&q), AT_OK);
  assert_int_equal(serve_holdq_len(q), 0);
  serve_holdq_flush(q);
  serve_holdq_destroy(q);
  serve_holdq_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_request_early_is_held),
      cmocka_unit_test(test_signature),
      cmocka_unit_test(test_queue_flush),
      cmocka_unit_test(test_client_identity),
      cmocka_unit_test(test_share_key),
      cmocka_unit_test(test_body_priority),
      cmocka_unit_test(test_slots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
