/* src/serve/routes.c — the route table: every HTTP route the server
 * answers, in one list (method, path, handler, whether it needs the API
 * key), and the dispatch that reads it. The handlers live with their API
 * (routes_tei.c, routes_openai.c, routes_completions.c, routes_v2.c,
 * server.c for /metrics); docs/api.md describes each, and test_serve_routes
 * holds the two together.
 *
 * DESIGN
 *   A path is matched exactly, or segment by segment where the pattern has
 *   "{m}": one non-empty segment naming a served model, looked up here, so
 *   a handler gets the model (404 "not served here" when there is none,
 *   before the method is looked at, as KServe servers answer; also when
 *   the rest of the path matches no route). A route for
 *   GET answers HEAD too (libmicrohttpd sends no body). A path that matches
 *   with another method gets 405 naming the method that works. The metrics
 *   label (r->route) is the pattern, never the model's name, so the label
 *   set is bounded; a request that matches nothing is counted as "other".
 *   Thread-safety: the table is constant; any HTTP thread. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "serve/fields.h"
#include "serve/serve_internal.h"

static const serve_route table[] = {
    /* health probes: no key needed, as balancers and kubelets send none */
    {"GET", "/health", serve_route_health, true, NULL},
    {"GET", "/v2/health/live", serve_route_health, true, NULL},
    {"GET", "/v2/health/ready", serve_route_health, true, NULL},
    /* Prometheus scrapes send no key (server.metrics_need_key asks for one) */
    {"GET", "/metrics", serve_route_metrics, true, NULL},
    /* Text Embeddings Inference style */
    {"GET", "/info", serve_route_info, false, NULL},
    {"POST", "/embed", serve_route_embed, false, serve_fields_embed},
    {"POST", "/predict", serve_route_predict, false, serve_fields_predict},
    {"POST", "/rerank", serve_route_rerank, false, serve_fields_rerank},
    {"POST", "/tokenize", serve_route_tokenize, false, serve_fields_tokenize},
    /* OpenAI */
    {"POST", "/v1/embeddings", serve_route_embeddings, false, serve_fields_embeddings},
    {"POST", "/v1/completions", serve_route_completions, false, serve_fields_completions},
    {"POST", "/v1/chat/completions", serve_route_chat_completions, false, serve_fields_chat},
    {"GET", "/v1/models", serve_route_models, false, NULL},
    {"POST", "/v1/rerank", serve_route_v1_rerank, false, serve_fields_v1_rerank}, /* Cohere/Jina shape (routes_tei.c) */
    /* KServe V2 */
    {"GET", "/v2", serve_route_v2_server, false, NULL},
    {"GET", "/v2/", serve_route_v2_server, false, NULL},
    {"GET", "/v2/models/{m}", serve_route_v2_model, false, NULL},
    {"GET", "/v2/models/{m}/ready", serve_route_health, false, NULL},
    {"POST", "/v2/models/{m}/infer", serve_route_v2_infer, false, NULL},
    /* the one version every model has ("versions": ["1"]); another is 404 below */
    {"GET", "/v2/models/{m}/versions/1", serve_route_v2_model, false, NULL},
    {"GET", "/v2/models/{m}/versions/1/ready", serve_route_health, false, NULL},
    {"POST", "/v2/models/{m}/versions/1/infer", serve_route_v2_infer, false, NULL},
};

#define N_ROUTES (sizeof table / sizeof table[0])

const serve_route *serve_routes(size_t *n) {
  *n = N_ROUTES;
  return table;
}

/* For a pattern with "{m}" at `hole`: when url has the pattern's prefix
 * and a non-empty segment there that fits name[cap], copy the segment to
 * name and return what follows it in url; else NULL. */
static const char *model_segment(const char *pattern, const char *hole, const char *url,
                                 char *name, size_t cap) {
  size_t pre = (size_t)(hole - pattern);
  if (strncmp(pattern, url, pre)) return NULL;
  const char *seg = url + pre;
  size_t len = strcspn(seg, "/");
  if (len == 0 || len >= cap) return NULL;
  memcpy(name, seg, len);
  name[len] = '\0';
  return seg + len;
}

/* Does url match pattern? The {m} segment, if any, goes to name[cap]
 * (name is "" for a pattern without one). */
static bool path_match(const char *pattern, const char *url, char *name, size_t cap) {
  const char *hole = strstr(pattern, "{m}");
  name[0] = '\0';
  if (!hole) return !strcmp(pattern, url);
  const char *rest = model_segment(pattern, hole, url, name, cap);
  return rest && !strcmp(hole + 3, rest); /* the rest after {m}, exactly */
}

static bool method_ok(const char *want, const char *method) {
  return !strcmp(want, method) || (!strcmp(want, "GET") && !strcmp(method, "HEAD"));
}

bool serve_route_open(const char *url) {
  char name[128];
  for (size_t i = 0; i < N_ROUTES; i++)
    if (table[i].open && path_match(table[i].path, url, name, sizeof name)) return true;
  return false;
}

void serve_route_label(const char *url, char *out, size_t n) {
  char name[128];
  for (size_t i = 0; i < N_ROUTES; i++)
    if (path_match(table[i].path, url, name, sizeof name)) {
      snprintf(out, n, "%s", table[i].path);
      return;
    }
  snprintf(out, n, "other");
}

enum MHD_Result serve_dispatch(req_ctx *r, const char *url, const char *method) {
  const serve_route *path_only = NULL;
  char name[128];
  for (size_t i = 0; i < N_ROUTES; i++) {
    const serve_route *rt = &table[i];
    if (!path_match(rt->path, url, name, sizeof name)) continue;
    snprintf(r->route, sizeof r->route, "%s", rt->path);
    served_model *m = NULL;
    if (name[0] && !(m = serve_find_model(r->srv, name)))
      return serve_error(r, 404, "model '%s' is not served here", name);
    if (method_ok(rt->method, method)) {
      r->rt = rt;
      return rt->fn(r, m);
    }
    if (!path_only) path_only = rt;
  }
  if (path_only)
    return serve_error(r, 405, "use %s for %s", path_only->method, path_only->path);
  snprintf(r->route, sizeof r->route, "other");
  /* /v2/models/NAME/anything: an unknown NAME is what to report, whatever
   * follows it (a known one with an unknown tail is "no route") */
  for (size_t i = 0; i < N_ROUTES; i++) {
    const char *hole = strstr(table[i].path, "{m}");
    if (!hole || !model_segment(table[i].path, hole, url, name, sizeof name)) continue;
    if (!serve_find_model(r->srv, name))
      return serve_error(r, 404, "model '%s' is not served here", name);
    const char *rest = model_segment(table[i].path, hole, url, name, sizeof name);
    if (rest && !strncmp(rest, "/versions/", 10)) { /* a version it does not have */
      int vl = (int)strcspn(rest + 10, "/");
      return serve_error(r, 404, "model '%s' has no version '%.*s' (it has version 1)", name, vl,
                         rest + 10);
    }
    break;
  }
  return serve_error(r, 404, "no route %s %s (see docs/api.md)", method, url);
}
