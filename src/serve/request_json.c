/* src/serve/request_json.c — reading request bodies: parse JSON (jansson
 * rejects invalid UTF-8 and malformed documents with a position), and turn
 * an "inputs"/"input" member that is a string or a list of strings into
 * arrays the text pipeline takes. Every failure becomes a 400 that names
 * the problem.
 *
 * Before parsing, rj_predecide() lets the planner refuse a text request
 * from a scan of the body (how many texts, which model) that builds
 * nothing: under overload most requests are refused, and parsing a body of
 * 64 long texts only to refuse it would cost a thousand times the refusal.
 * The scan only counts: jansson still parses and validates every admitted
 * body, and a count that disagrees with the parse is re-decided.
 *
 * And which served model a text request names (serve_pick_model), for
 * the TEI routes and OpenAI embeddings. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/request_json.h"
#include "serve/fields.h"

json_t *rj_parse(req_ctx *r, enum MHD_Result *res) {
  if (!r->body || r->body_len == 0) {
    *res = serve_error(r, 400, "empty body: expected a JSON object");
    return NULL;
  }
  json_error_t err;
  json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
  if (!j) {
    if (strstr(err.text, "decode byte") || strstr(err.text, "UTF-8"))
      *res = serve_error(r, 400, "invalid UTF-8 in the body at line %d column %d: %s", err.line,
                         err.column, err.text);
    else
      *res = serve_error(r, 400, "malformed JSON at line %d column %d: %s", err.line, err.column,
                         err.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    *res = serve_error(r, 400, "expected a JSON object at the top level");
    return NULL;
  }
  /* the route's members only (fields.h), before anything else is read */
  char why[1024];
  if (r->rt && r->rt->fields && serve_fields_check(j, r->rt->fields, r->rt->path, why, sizeof why)) {
    /* OpenAI's code and param for it; the name lives in j until answered */
    serve_error_hint(r, "unknown_parameter", serve_fields_unknown(j, r->rt->fields));
    *res = serve_error(r, 400, "%s", why);
    json_decref(j);
    return NULL;
  }
  return j;
}

int rj_texts(req_ctx *r, json_t *body, const char *key, rj_texts_t *out, enum MHD_Result *res) {
  char err[256];
  int st = rj_texts_get(body, key, r->srv->cfg.max_inputs, out, err, sizeof err);
  if (st) *res = serve_error(r, st, "%s", err);
  return st ? -1 : 0;
}

int rj_bool(req_ctx *r, json_t *body, const char *key, bool dflt, bool *out, enum MHD_Result *res) {
  char err[256];
  int st = rj_bool_get(body, key, dflt, out, err, sizeof err);
  if (st) *res = serve_error(r, st, "%s", err);
  return st ? -1 : 0;
}

double rj_deadline_s(req_ctx *r) {
  const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-deadline-ms");
  /* the planner's strict parser (digits and a fraction only: no exponents,
   * hex, inf or nan); the planner caps the value later */
  double s;
  if (at_plan_parse_deadline_ms(h, 0, HUGE_VAL, &s) != AT_OK) return -1; /* the route answers 400 */
  return s;
}

/* ------------------------------------------------------------ pre-scan */

#define SCAN_MAX_DEPTH 64

static const char *scan_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* p at '"': the end of the string (after its closing quote), or NULL.
 * memchr finds each candidate quote; a quote is the string's end when an
 * even number of backslashes precede it (runs are walked once: O(length)).
 * *escaped (if given) is set when the string holds any backslash. */
static const char *scan_string(const char *p, const char *e, bool *escaped) {
  const char *q = p + 1;
  for (;;) {
    const char *quote = memchr(q, '"', (size_t)(e - q));
    if (!quote) return NULL;
    size_t bs = 0;
    for (const char *b = quote; b > p + 1 && b[-1] == '\\'; b--) bs++;
    if (bs % 2 == 0) {
      if (escaped && memchr(p + 1, '\\', (size_t)(quote - p - 1))) *escaped = true;
      return quote + 1;
    }
    q = quote + 1;
  }
}

/* p at '[' or '{': past its matching bracket, or NULL; *items = its
 * top-level elements. Brackets are matched by depth only (the parse that
 * follows an admission validates the document). */
static const char *scan_container(const char *p, const char *e, size_t *items) {
  int depth = 0;
  size_t commas = 0;
  bool any = false;
  for (; p < e; p++) {
    char c = *p;
    if (c == '"') {
      if (depth == 1) any = true;
      if (!(p = scan_string(p, e, NULL))) return NULL;
      p--;
    } else if (c == '[' || c == '{') {
      if (depth == 1) any = true;
      if (++depth > SCAN_MAX_DEPTH) return NULL;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) {
        *items = any ? commas + 1 : 0;
        return p + 1;
      }
    } else if (depth == 1) {
      if (c == ',') commas++;
      else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') any = true;
    }
  }
  return NULL;
}

int rj_prescan(const char *body, size_t len, const char *key, size_t *n, const char **model,
               size_t *model_len) {
  const char *p = body, *e = body + len;
  bool seen_key = false, seen_model = false;
  *n = 0;
  *model = NULL;
  *model_len = 0;
  p = scan_ws(p, e);
  if (p >= e || *p != '{') return -1;
  p = scan_ws(p + 1, e);
  if (p < e && *p == '}') return -1; /* no members: the parse says what is missing */
  size_t klen = strlen(key);
  while (p < e) {
    if (*p != '"') return -1;
    bool esc = false;
    const char *k0 = p + 1, *k1 = scan_string(p, e, &esc);
    if (!k1 || esc) return -1; /* an escaped member name: leave it to the parse */
    size_t kl = (size_t)(k1 - 1 - k0);
    p = scan_ws(k1, e);
    if (p >= e || *p != ':') return -1;
    p = scan_ws(p + 1, e);
    if (p >= e) return -1;
    bool is_key = kl == klen && !memcmp(k0, key, klen);
    bool is_model = kl == 5 && !memcmp(k0, "model", 5);
    if (kl == 8 && !memcmp(k0, "priority", 8)) return -1; /* its class: decided after the parse */
    if ((is_key && seen_key) || (is_model && seen_model)) return -1; /* duplicates: 400 later */
    if (*p == '"') {
      bool vesc = false;
      const char *v0 = p + 1, *v1 = scan_string(p, e, &vesc);
      if (!v1) return -1;
      if (is_key) *n = 1, seen_key = true;
      if (is_model) {
        if (vesc) return -1;
        *model = v0, *model_len = (size_t)(v1 - 1 - v0), seen_model = true;
      }
      p = v1;
    } else if (*p == '[' || *p == '{') {
      size_t items = 0;
      bool arr = *p == '[';
      if (!(p = scan_container(p, e, &items))) return -1;
      if (is_key) {
        if (!arr) return -1;
        *n = items, seen_key = true;
      }
      if (is_model) return -1;
    } else { /* number, true, false, null */
      if (is_key) return -1;
      const char *v0 = p;
      while (p < e && *p != ',' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\n' &&
             *p != '\r')
        p++;
      if (is_model) {
        if ((size_t)(p - v0) != 4 || memcmp(v0, "null", 4)) return -1;
        seen_model = true; /* "model": null is no model */
      }
    }
    p = scan_ws(p, e);
    if (p >= e) return -1;
    if (*p == '}') {
      p = scan_ws(p + 1, e);
      return p == e && seen_key && *n > 0 ? 0 : -1;
    }
    if (*p != ',') return -1;
    p = scan_ws(p + 1, e);
  }
  return -1;
}

bool rj_predecide(req_ctx *r, serve_task task, const char *key, enum MHD_Result *res) {
  at_server *s = r->srv;
  size_t n, ml;
  const char *mname;
  if (!r->body || rj_prescan(r->body, r->body_len, key, &n, &mname, &ml) != 0) return false;
  if (n > s->cfg.max_inputs) return false; /* the parse path answers 413 */
  served_model *m = NULL;
  if (mname) {
    char name[64];
    if (ml >= sizeof name) return false;
    memcpy(name, mname, ml);
    name[ml] = '\0';
    m = serve_find_model(s, name);
    if (!m || m->task != task) return false; /* 404/400 from the parse path */
  } else {
    for (int i = 0; i < s->n_models && !m; i++)
      if (s->models[i].task == task) m = &s->models[i];
    if (!m) return false;
  }
  double dl = rj_deadline_s(r);
  if (dl < 0) return false; /* 400 from the parse path */
  /* the texts' bytes, guessed before parsing: the body less its JSON frame
   * (about 16 bytes, and 3 per text for quotes and commas) */
  size_t frame = 16 + 3 * n, bytes = r->body_len > frame ? r->body_len - frame : n;
  if (serve_admit(r, m, dl, n, serve_guess_tokens(m, bytes, n), res))
    return false; /* admitted: parse and run */
  atomic_fetch_add(&s->prescan_refusals, 1);
  return true; /* refused without parsing; *res is the answer */
}

/* Pick the model: "model" member if present, else the first with `task`. */
served_model *serve_pick_model(req_ctx *r, json_t *body, serve_task task, enum MHD_Result *res) {
  at_server *s = r->srv;
  json_t *mv = body ? json_object_get(body, "model") : NULL;
  if (mv && !json_is_null(mv)) {
    if (!json_is_string(mv)) {
      *res = serve_error(r, 400, "\"model\" must be a string");
      return NULL;
    }
    served_model *m = serve_find_model(s, json_string_value(mv));
    if (!m) {
      *res = serve_error(serve_error_hint(r, "model_not_found", "model"), 404,
                         "model '%s' is not served here (GET /info lists the models)",
                         json_string_value(mv));
      return NULL;
    }
    if (m->task != task) {
      *res = serve_error(r, 400, "model '%s' is %s model; this route needs %s model", m->name,
                         m->task == TASK_EMBED ? "an embedding" : "a classification",
                         task == TASK_EMBED ? "an embedding" : "a classification");
      return NULL;
    }
    return m;
  }
  for (int i = 0; i < s->n_models; i++)
    if (s->models[i].task == task) return &s->models[i];
  *res = serve_error(serve_error_hint(r, "model_not_found", "model"), 404,
                     "no %s model is served here",
                     task == TASK_EMBED ? "embedding" : "classification");
  return NULL;
}
