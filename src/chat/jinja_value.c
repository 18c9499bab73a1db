/* src/chat/jinja_value.c — the values a template computes with, and their
 * three spellings.
 *
 * Values live in the render's arena (nothing is freed before the render
 * ends; the arena has a byte cap, so a template that builds values without
 * end fails with AT_ERR_LIMIT instead of exhausting memory). Numbers are
 * doubles with an int/float tag, as @huggingface/jinja's are (JavaScript
 * numbers); objects keep insertion order, except that keys that look like
 * array indices come first in ascending order when they are read from the
 * JSON context, because that is how JavaScript's JSON.parse orders them.
 *
 * Spellings: jv_print is what {{ v }} writes (floats as "1.0", booleans
 * "true"/"false", lists and dicts as JSON with ", " and ": "); jv_raw is the
 * JavaScript String() of the underlying value, used by `~`, string `+` and
 * join; jv_json is tojson. All three bound their nesting so that a
 * self-referencing namespace fails instead of overflowing the stack.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

/* ---- arena ---------------------------------------------------------------- */
struct jchunk {
  jchunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void jarena_init(jarena *a, size_t cap) {
  a->head = NULL;
  a->total = 0;
  a->cap = cap;
}

void jarena_free(jarena *a) {
  jchunk *c = a->head;
  while (c) {
    jchunk *n = c->next;
    free(c);
    c = n;
  }
  a->head = NULL;
}

void *jarena_alloc(jarena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  if (a->cap && (n > a->cap || a->total > a->cap - n)) return NULL;
  jchunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t sz = n > 16384 ? n : 16384;
    c = malloc(sizeof *c + sz);
    if (!c) return NULL;
    c->cap = sz;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

char *jarena_strdup(jarena *a, const char *s, size_t n) {
  char *p = jarena_alloc(a, n + 1);
  if (p) {
    if (n) memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

bool jbuf_put(jbuf *b, const char *s, size_t n) {
  if (n > b->limit || b->n > b->limit - n) return false;
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) return false;
    b->p = np;
    b->cap = nc;
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
  return true;
}

bool jbuf_putc(jbuf *b, char c) {
  return jbuf_put(b, &c, 1);
}

/* ---- construction --------------------------------------------------------------- */
void jfail(jrender *r, at_status st, const char *fmt, ...) {
  if (r->err.st != AT_OK) return;
  r->err.st = st;
  r->err_off = r->at_off;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err.msg, sizeof r->err.msg, fmt, ap);
  va_end(ap);
}

static void *ralloc(jrender *r, size_t n) {
  void *p = jarena_alloc(&r->arena, n);
  if (!p) jfail(r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", r->arena.cap);
  return p;
}

jv *jv_new(jrender *r, jv_kind k) {
  jv *v = ralloc(r, sizeof *v);
  if (v) v->kind = k;
  return v;
}

jv *jv_str(jrender *r, const char *s, size_t n) {
  jv *v = jv_new(r, JV_STR);
  if (!v) return NULL;
  v->s = jarena_strdup(&r->arena, s, n);
  if (!v->s) {
    jfail(r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", r->arena.cap);
    return NULL;
  }
  v->n = n;
  return v;
}

jv *jv_num(jrender *r, jv_kind k, double d) {
  jv *v = jv_new(r, k);
  if (v) v->num = d;
  return v;
}

jv *jv_bool(jrender *r, bool b) {
  jv *v = jv_new(r, JV_BOOL);
  if (v) v->b = b;
  return v;
}

jv *jv_undef(jrender *r) {
  return jv_new(r, JV_UNDEF);
}
jv *jv_null(jrender *r) {
  return jv_new(r, JV_NULL);
}

jv *jv_func(jrender *r, jfn_kind fn, const jv *self) {
  jv *v = jv_new(r, JV_FUNC);
  if (v) {
    v->fn = fn;
    v->self = self;
  }
  return v;
}

bool jv_push(jrender *r, jv *arr, jv *item) {
  if (!item) return false;
  if (arr->arr.n == arr->arr.cap) {
    size_t nc = arr->arr.cap ? arr->arr.cap * 2 : 4;
    jv **nv = ralloc(r, nc * sizeof *nv);
    if (!nv) return false;
    if (arr->arr.n) memcpy(nv, arr->arr.v, arr->arr.n * sizeof *nv);
    arr->arr.v = nv;
    arr->arr.cap = nc;
  }
  arr->arr.v[arr->arr.n++] = item;
  return true;
}

#define JMAP_INDEX_FROM 16

static size_t key_hash(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
  return (size_t)h;
}

/* Position of key k in m, or SIZE_MAX. */
static size_t jmap_find(const jmap *m, const char *k, size_t n) {
  if (m->nslots) {
    size_t mask = m->nslots - 1;
    for (size_t s = key_hash(k, n) & mask;; s = (s + 1) & mask) {
      size_t at = m->slots[s];
      if (at == 0) return SIZE_MAX;
      at--;
      if (m->klens[at] == n && memcmp(m->keys[at], k, n) == 0) return at;
    }
  }
  for (size_t i = 0; i < m->n; i++)
    if (m->klens[i] == n && memcmp(m->keys[i], k, n) == 0) return i;
  return SIZE_MAX;
}

jv *jmap_get(const jmap *m, const char *k, size_t n) {
  size_t at = jmap_find(m, k, n);
  return at == SIZE_MAX ? NULL : m->vals[at];
}

static void slot_put(jmap *m, size_t at) {
  size_t mask = m->nslots - 1, s = key_hash(m->keys[at], m->klens[at]) & mask;
  while (m->slots[s]) s = (s + 1) & mask;
  m->slots[s] = at + 1;
}

/* (Re)build the index for at least `want` keys. */
static bool jmap_reindex(jrender *r, jmap *m, size_t want) {
  size_t ns = 64;
  while (ns < 2 * want) ns *= 2;
  size_t *slots = ralloc(r, ns * sizeof *slots); /* zeroed */
  if (!slots) return false;
  m->slots = slots;
  m->nslots = ns;
  for (size_t i = 0; i < m->n; i++) slot_put(m, i);
  return true;
}

/* Add a key known to be new (JSON objects from jansson have unique keys). */
static bool jmap_append(jrender *r, jmap *m, const char *k, size_t n, jv *v) {
  if (!v) return false;
  if (m->n == m->cap) {
    size_t nc = m->cap ? m->cap * 2 : m->want ? m->want : 4;
    const char **nk = ralloc(r, nc * sizeof *nk);
    size_t *nl = ralloc(r, nc * sizeof *nl);
    jv **nv = ralloc(r, nc * sizeof *nv);
    if (!nk || !nl || !nv) return false;
    if (m->n) {
      memcpy(nk, m->keys, m->n * sizeof *nk);
      memcpy(nl, m->klens, m->n * sizeof *nl);
      memcpy(nv, m->vals, m->n * sizeof *nv);
    }
    m->keys = nk;
    m->klens = nl;
    m->vals = nv;
    m->cap = nc;
  }
  m->keys[m->n] = k;
  m->klens[m->n] = n;
  m->vals[m->n++] = v;
  if (m->nslots && 2 * m->n > m->nslots) return jmap_reindex(r, m, m->n);
  if (m->nslots)
    slot_put(m, m->n - 1);
  else if (m->n >= JMAP_INDEX_FROM)
    return jmap_reindex(r, m, m->n);
  return true;
}

bool jmap_set(jrender *r, jmap *m, const char *k, size_t n, jv *v) {
  if (!v) return false;
  size_t at = jmap_find(m, k, n);
  if (at != SIZE_MAX) {
    m->vals[at] = v;
    return true;
  }
  return jmap_append(r, m, k, n, v);
}

/* A canonical array index ("0", "17", not "017"), as JavaScript orders them. */
static bool index_key(const char *k, size_t n, unsigned long long *idx) {
  if (n == 0 || n > 10 || (n > 1 && k[0] == '0')) return false;
  unsigned long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (k[i] < '0' || k[i] > '9') return false;
    v = v * 10 + (unsigned long long)(k[i] - '0');
  }
  if (v >= 4294967295ULL) return false;
  *idx = v;
  return true;
}

static bool add_json_member(jrender *r, jv *o, const char *k, json_t *val, int depth) {
  size_t kn = strlen(k);
  char *key = jarena_strdup(&r->arena, k, kn); /* jansson's key dies with the tree */
  if (!key) {
    jfail(r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", r->arena.cap);
    return false;
  }
  return jmap_append(r, &o->map, key, kn, jv_from_json(r, val, depth + 1));
}

typedef struct index_key_ref {
  unsigned long long idx;
  const char *key;
} index_key_ref;

static int cmp_index_key(const void *a, const void *b) {
  unsigned long long x = ((const index_key_ref *)a)->idx, y = ((const index_key_ref *)b)->idx;
  return x < y ? -1 : x > y;
}

static jv *object_from_json(jrender *r, json_t *j, int depth) {
  jv *o = jv_new(r, JV_OBJECT);
  if (!o) return NULL;
  /* index-like keys first, ascending; then the rest in document order */
  size_t nidx = 0;
  const char *k;
  json_t *val;
  json_object_foreach(j, k, val) {
    unsigned long long idx;
    if (index_key(k, strlen(k), &idx)) nidx++;
  }
  if (nidx) {
    index_key_ref *refs = ralloc(r, nidx * sizeof *refs);
    if (!refs) return NULL;
    size_t i = 0;
    json_object_foreach(j, k, val) {
      unsigned long long idx;
      if (index_key(k, strlen(k), &idx)) refs[i++] = (index_key_ref){idx, k};
    }
    qsort(refs, nidx, sizeof *refs, cmp_index_key);
    for (i = 0; i < nidx; i++)
      if (!add_json_member(r, o, refs[i].key, json_object_get(j, refs[i].key), depth)) return NULL;
  }
  json_object_foreach(j, k, val) {
    unsigned long long idx;
    if (index_key(k, strlen(k), &idx)) continue;
    if (!add_json_member(r, o, k, val, depth)) return NULL;
  }
  return o;
}

jv *jv_from_json(jrender *r, const void *ptr, int depth) {
  json_t *j = (json_t *)ptr;
  if (depth > JINJA_MAX_VALUE_DEPTH) {
    jfail(r, AT_ERR_LIMIT, "the context nests deeper than %d levels", JINJA_MAX_VALUE_DEPTH);
    return NULL;
  }
  switch (json_typeof(j)) {
    case JSON_NULL: return jv_null(r);
    case JSON_TRUE: return jv_bool(r, true);
    case JSON_FALSE: return jv_bool(r, false);
    case JSON_INTEGER: return jv_num(r, JV_INT, (double)json_integer_value(j));
    case JSON_REAL: {
      double d = json_real_value(j);
      return jv_num(r, isfinite(d) && d == floor(d) ? JV_INT : JV_FLOAT, d);
    }
    case JSON_STRING: return jv_str(r, json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
      jv *a = jv_new(r, JV_ARRAY);
      if (!a) return NULL;
      size_t i;
      json_t *e;
      json_array_foreach(j, i, e) {
        if (!jv_push(r, a, jv_from_json(r, e, depth + 1))) return NULL;
      }
      return a;
    }
    case JSON_OBJECT: return object_from_json(r, j, depth);
  }
  return jv_undef(r);
}

/* ---- predicates ------------------------------------------------------------------- */
bool jv_truthy(const jv *v) {
  switch (v->kind) {
    case JV_UNDEF:
    case JV_NULL: return false;
    case JV_BOOL: return v->b;
    case JV_INT:
    case JV_FLOAT: return v->num != 0 && !isnan(v->num);
    case JV_STR: return v->n > 0;
    case JV_ARRAY: return v->arr.n > 0;
    case JV_OBJECT: return v->map.n > 0;
    case JV_NAMESPACE:
    case JV_FUNC: return true;
  }
  return false;
}

const char *jv_type_name(const jv *v) {
  static const char *names[] = {"undefined", "none", "boolean", "integer",   "float",
                                "string",    "list", "dict",    "namespace", "function"};
  if (v->kind == JV_ARRAY && v->tuple) return "tuple";
  return names[v->kind];
}

static bool is_num(const jv *v) {
  return v->kind == JV_INT || v->kind == JV_FLOAT;
}

/* JavaScript's Number("...") for the loose equality of a string and a number. */
static double js_to_number(const jv *s) {
  size_t b = 0, e = s->n, k;
  while ((k = js_space_at(s->s, s->n, b)) > 0) b += k;
  while (e > b && (k = js_space_before(s->s, e)) > 0) e -= k;
  if (b == e) return 0;
  char buf[128];
  if (e - b >= sizeof buf) return NAN;
  memcpy(buf, s->s + b, e - b);
  buf[e - b] = '\0';
  if (strcmp(buf, "Infinity") == 0 || strcmp(buf, "+Infinity") == 0) return INFINITY;
  if (strcmp(buf, "-Infinity") == 0) return -INFINITY;
  for (char *c = buf; *c; c++) /* no hex floats, "inf", "nan" from strtod */
    if (strchr("0123456789+-.eE", *c) == NULL) return NAN;
  char *end;
  double d = strtod(buf, &end);
  return *end ? NAN : d;
}

static bool primitive(const jv *v) {
  return is_num(v) || v->kind == JV_BOOL || v->kind == JV_STR;
}

static bool same_object(const jv *a, const jv *b) {
  if (a->kind == JV_FUNC && b->kind == JV_FUNC)
    return a->fn == b->fn && a->self == b->self && a->macro == b->macro;
  return a == b;
}

/* JavaScript == between primitives (string, number, boolean). */
static bool loose_eq_primitive(const jv *a, const jv *b) {
  if (a->kind == JV_STR && b->kind == JV_STR) return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  double x = a->kind == JV_BOOL ? a->b : a->kind == JV_STR ? js_to_number(a) : a->num;
  double y = b->kind == JV_BOOL ? b->b : b->kind == JV_STR ? js_to_number(b) : b->num;
  return x == y;
}

/* JavaScript ==, on the raw values: null and undefined equal each other only;
 * primitives compare after ToNumber; an object equals only itself, or a
 * primitive that equals its String() (so [] == false, [1] == 1). */
bool jv_loose_eq(jrender *r, const jv *a, const jv *b) {
  bool an = a->kind == JV_UNDEF || a->kind == JV_NULL,
       bn = b->kind == JV_UNDEF || b->kind == JV_NULL;
  if (an || bn) return an && bn;
  bool ap = primitive(a), bp = primitive(b);
  if (ap && bp) return loose_eq_primitive(a, b);
  if (!ap && !bp) return same_object(a, b);
  const jv *obj = ap ? b : a, *prim = ap ? a : b;
  jbuf buf = {NULL, 0, 0, r->max_output};
  bool ok = jv_raw(r, &buf, obj, 0);
  jv tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.kind = JV_STR;
  tmp.s = buf.p ? buf.p : "";
  tmp.n = buf.n;
  bool eq = ok && loose_eq_primitive(&tmp, prim);
  free(buf.p);
  return eq;
}

/* JavaScript ===, on the raw values. */
bool jv_strict_eq(const jv *a, const jv *b) {
  if (is_num(a) && is_num(b)) return a->num == b->num;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case JV_UNDEF:
    case JV_NULL: return true;
    case JV_BOOL: return a->b == b->b;
    case JV_STR: return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
    default: return same_object(a, b);
  }
}

/* ---- numbers ----------------------------------------------------------------------- */
void js_number(char *buf, size_t cap, double d) {
  if (isnan(d)) {
    snprintf(buf, cap, "NaN");
    return;
  }
  if (isinf(d)) {
    snprintf(buf, cap, d < 0 ? "-Infinity" : "Infinity");
    return;
  }
  if (d == 0) {
    snprintf(buf, cap, "0");
    return;
  }
  /* shortest digits that round-trip */
  char tmp[40];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
    if (strtod(tmp, NULL) == d) break;
  }
  /* tmp: [-]D.DDDDe[+-]XX -> digits and exponent */
  const char *p = tmp;
  bool neg = *p == '-';
  if (neg) p++;
  char dig[20];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') dig[nd++] = *p;
  while (nd > 1 && dig[nd - 1] == '0') nd--;
  int e = atoi(p + 1) + 1; /* value = 0.DIGITS * 10^e */
  char out[64];
  int o = 0;
  if (neg) out[o++] = '-';
  if (nd <= e && e <= 21) {
    for (int i = 0; i < nd; i++) out[o++] = dig[i];
    for (int i = nd; i < e; i++) out[o++] = '0';
  } else if (0 < e && e <= 21) {
    for (int i = 0; i < e; i++) out[o++] = dig[i];
    out[o++] = '.';
    for (int i = e; i < nd; i++) out[o++] = dig[i];
  } else if (-6 < e && e <= 0) {
    out[o++] = '0';
    out[o++] = '.';
    for (int i = 0; i < -e; i++) out[o++] = '0';
    for (int i = 0; i < nd; i++) out[o++] = dig[i];
  } else {
    out[o++] = dig[0];
    if (nd > 1) {
      out[o++] = '.';
      for (int i = 1; i < nd; i++) out[o++] = dig[i];
    }
    o += snprintf(out + o, sizeof out - (size_t)o, "e%c%d", e - 1 < 0 ? '-' : '+', abs(e - 1));
  }
  out[o] = '\0';
  snprintf(buf, cap, "%s", out);
}

/* FloatValue.toString(): -0 -> "-0.0", integral -> toFixed(1), else toString. */
static void float_print(char *buf, size_t cap, double d) {
  if (d == 0 && signbit(d)) {
    snprintf(buf, cap, "-0.0");
  } else if (isfinite(d) && d == floor(d) && fabs(d) < 1e21) {
    js_number(buf, cap, d);
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, ".0");
  } else {
    js_number(buf, cap, d);
  }
}

/* ---- spellings ----------------------------------------------------------------------- */
static bool too_deep(jrender *r, int depth) {
  if (depth <= JINJA_MAX_VALUE_DEPTH) return false;
  jfail(r, AT_ERR_LIMIT, "a value nests deeper than %d levels (a namespace that holds itself?)",
        JINJA_MAX_VALUE_DEPTH);
  return true;
}

static bool outfail(jrender *r) {
  jfail(r, AT_ERR_LIMIT, "the output exceeds the limit of %zu bytes", r->max_output);
  return false;
}

static bool put(jrender *r, jbuf *out, const char *s, size_t n) {
  return jbuf_put(out, s, n) || outfail(r);
}
static bool puts_(jrender *r, jbuf *out, const char *s) {
  return put(r, out, s, strlen(s));
}

bool jv_print(jrender *r, jbuf *out, const jv *v, int depth) {
  char num[64];
  switch (v->kind) {
    case JV_UNDEF: return puts_(r, out, "undefined");
    case JV_NULL: return puts_(r, out, "null");
    case JV_BOOL: return puts_(r, out, v->b ? "true" : "false");
    case JV_INT: js_number(num, sizeof num, v->num); return puts_(r, out, num);
    case JV_FLOAT: float_print(num, sizeof num, v->num); return puts_(r, out, num);
    case JV_STR: return put(r, out, v->s, v->n);
    case JV_ARRAY:
    case JV_OBJECT:
    case JV_NAMESPACE: {
      jjson_fmt f = {0, false, false, NULL, NULL};
      return jv_json(r, out, v, &f, depth);
    }
    case JV_FUNC: return puts_(r, out, "[function]");
  }
  return true;
}

bool jv_raw(jrender *r, jbuf *out, const jv *v, int depth) {
  char num[64];
  if (too_deep(r, depth)) return false;
  switch (v->kind) {
    case JV_INT:
    case JV_FLOAT: js_number(num, sizeof num, v->num); return puts_(r, out, num);
    case JV_ARRAY: /* Array.prototype.toString: the elements' toString, joined by "," */
      for (size_t i = 0; i < v->arr.n; i++) {
        if (i && !puts_(r, out, ",")) return false;
        if (!jv_print(r, out, v->arr.v[i], depth + 1)) return false;
      }
      return true;
    case JV_OBJECT:
    case JV_NAMESPACE: return puts_(r, out, "[object Map]");
    default: return jv_print(r, out, v, depth);
  }
}

static bool json_str_out(jrender *r, jbuf *out, const char *s, size_t n, bool ascii) {
  if (!puts_(r, out, "\"")) return false;
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char ebuf[16];
    if (c == '"')
      esc = "\\\"";
    else if (c == '\\')
      esc = "\\\\";
    else if (c == '\n')
      esc = "\\n";
    else if (c == '\r')
      esc = "\\r";
    else if (c == '\t')
      esc = "\\t";
    else if (c == '\b')
      esc = "\\b";
    else if (c == '\f')
      esc = "\\f";
    else if (c < 0x20) {
      snprintf(ebuf, sizeof ebuf, "\\u%04x", c);
      esc = ebuf;
    } else if (ascii && c >= 0x7f) {
      /* ensure_ascii: \uXXXX per UTF-16 unit (0x7f itself included, as @huggingface/jinja does) */
      unsigned cp = c;
      size_t len = 1;
      if (c >= 0xF0)
        len = 4, cp = c & 0x07;
      else if (c >= 0xE0)
        len = 3, cp = c & 0x0F;
      else if (c >= 0xC0)
        len = 2, cp = c & 0x1F;
      if (i + len > n) len = 1, cp = c;
      for (size_t k = 1; k < len; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
      if (!put(r, out, s + i - run, run)) return false;
      run = 0;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        snprintf(ebuf, sizeof ebuf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        snprintf(ebuf, sizeof ebuf, "\\u%04x", cp);
      }
      if (!puts_(r, out, ebuf)) return false;
      i += len - 1;
      continue;
    }
    if (esc) {
      if (!put(r, out, s + i - run, run) || !puts_(r, out, esc)) return false;
      run = 0;
    } else {
      run++;
    }
  }
  return put(r, out, s + n - run, run) && puts_(r, out, "\"");
}

static bool newline_indent(jrender *r, jbuf *out, int indent, int level) {
  if (!puts_(r, out, "\n")) return false;
  for (int i = 0; i < indent * level; i++)
    if (!puts_(r, out, " ")) return false;
  return true;
}

static bool put_sep(jrender *r, jbuf *out, const jv *custom, const char *dflt) {
  return custom ? put(r, out, custom->s, custom->n) : puts_(r, out, dflt);
}

bool jv_json(jrender *r, jbuf *out, const jv *v, const jjson_fmt *f, int depth) {
  char num[64];
  if (too_deep(r, depth)) return false;
  int indent = f->indent;
  bool ascii = f->ascii, undef_null = f->undef_null;
  const char *item_sep = indent > 0 ? "," : ", ";
  switch (v->kind) {
    case JV_NULL: return puts_(r, out, "null");
    case JV_UNDEF: return puts_(r, out, undef_null ? "null" : "undefined");
    case JV_BOOL: return puts_(r, out, v->b ? "true" : "false");
    case JV_INT:
    case JV_FLOAT:
      if (!isfinite(v->num)) return puts_(r, out, "null");
      js_number(num, sizeof num, v->num);
      return puts_(r, out, num);
    case JV_STR: return json_str_out(r, out, v->s, v->n, ascii);
    case JV_ARRAY:
      if (v->tuple) {
        jfail(r, AT_ERR_INVALID_ARG, "cannot convert a tuple to JSON");
        return false;
      }
      if (!puts_(r, out, "[")) return false;
      for (size_t i = 0; i < v->arr.n; i++) {
        if (i && !put_sep(r, out, f->item_sep, item_sep)) return false;
        if (indent > 0 && !newline_indent(r, out, indent, depth + 1)) return false;
        if (!jv_json(r, out, v->arr.v[i], f, depth + 1)) return false;
      }
      if (indent > 0 && v->arr.n && !newline_indent(r, out, indent, depth)) return false;
      return puts_(r, out, "]");
    case JV_OBJECT:
    case JV_NAMESPACE:
      if (!puts_(r, out, "{")) return false;
      for (size_t i = 0; i < v->map.n; i++) {
        if (i && !put_sep(r, out, f->item_sep, item_sep)) return false;
        if (indent > 0 && !newline_indent(r, out, indent, depth + 1)) return false;
        if (!json_str_out(r, out, v->map.keys[i], v->map.klens[i], ascii) ||
            !put_sep(r, out, f->key_sep, ": ") || !jv_json(r, out, v->map.vals[i], f, depth + 1))
          return false;
      }
      if (indent > 0 && v->map.n && !newline_indent(r, out, indent, depth)) return false;
      return puts_(r, out, "}");
    case JV_FUNC: jfail(r, AT_ERR_INVALID_ARG, "cannot convert a function to JSON"); return false;
  }
  return true;
}

size_t utf16_length(const char *s, size_t n) {
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c & 0xC0) == 0x80) continue;
    u += c >= 0xF0 ? 2 : 1;
  }
  return u;
}
