/* src/chat/jinja_builtins.c — filters, tests, global functions and the
 * methods of strings and dicts.
 *
 * Which filter applies to which type follows @huggingface/jinja: a filter
 * written without parentheses (`x|trim`) and one with (`x|indent(2)`) go
 * through two different tables there, and a filter that a type does not have
 * is an error, never a silent pass-through. Extras over @huggingface/jinja:
 * `e`/`escape` (HTML escaping, as Jinja's escape filter; autoescape is off).
 * Case mapping uses utf8proc's simple mappings; `title` and `capitalize`
 * behave as JavaScript's versions do (ASCII word starts upper-cased, the
 * rest left as it is).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "chat/jinja.h"

static jv *ferr(jrender *r, const char *fmt, ...) AT_PRINTF(2, 3);
static jv *ferr(jrender *r, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jfail(r, AT_ERR_INVALID_ARG, "%s", msg);
  return NULL;
}

static bool name_is(const char *s, size_t n, const char *w) {
  return n == strlen(w) && memcmp(s, w, n) == 0;
}

static jbuf sbuf(jrender *r) {
  return (jbuf){NULL, 0, 0, r->max_output};
}

static jv *sdone(jrender *r, jbuf *b, bool ok) {
  if (!ok) {
    free(b->p);
    jfail(r, AT_ERR_LIMIT, "the output exceeds the limit of %zu bytes", r->max_output);
    return NULL;
  }
  jv *v = jv_str(r, b->p ? b->p : "", b->n);
  free(b->p);
  return v;
}

/* ---- strings ------------------------------------------------------------------ */
static size_t trim_start(const char *s, size_t n) {
  size_t b = 0, k;
  while ((k = js_space_at(s, n, b)) > 0) b += k;
  return b;
}

static size_t trim_end(const char *s, size_t n, size_t floor) {
  size_t e = n, k;
  while (e > floor && (k = js_space_before(s, e)) > 0) e -= k;
  return e;
}

static jv *case_map(jrender *r, const jv *v, bool upper, bool first_only) {
  jbuf b = sbuf(r);
  bool ok = true;
  size_t i = 0;
  while (i < v->n && ok) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t k =
        utf8proc_iterate((const utf8proc_uint8_t *)v->s + i, (utf8proc_ssize_t)(v->n - i), &cp);
    if (k <= 0) { /* invalid UTF-8: copy the byte */
      ok = jbuf_putc(&b, v->s[i++]);
      continue;
    }
    if (first_only && i > 0) {
      ok = jbuf_put(&b, v->s + i, v->n - i);
      break;
    }
    utf8proc_int32_t m = upper ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
    utf8proc_uint8_t enc[4];
    utf8proc_ssize_t en = utf8proc_encode_char(m, enc);
    ok = jbuf_put(&b, (const char *)enc, (size_t)en);
    i += (size_t)k;
  }
  return sdone(r, &b, ok);
}

static bool ascii_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static jv *title(jrender *r, const jv *v) {
  char *s = jarena_strdup(&r->arena, v->s, v->n);
  if (!s) {
    jfail(r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", r->arena.cap);
    return NULL;
  }
  for (size_t i = 0; i < v->n; i++)
    if (ascii_word(s[i]) && (i == 0 || !ascii_word(s[i - 1])) && s[i] >= 'a' && s[i] <= 'z')
      s[i] = (char)(s[i] - 32);
  jv *res = jv_new(r, JV_STR);
  if (res) {
    res->s = s;
    res->n = v->n;
  }
  return res;
}

static bool has_prefix(const jv *s, const jv *p, bool suffix) {
  if (p->n > s->n) return false;
  return memcmp(s->s + (suffix ? s->n - p->n : 0), p->s, p->n) == 0;
}

static jv *starts_ends(jrender *r, const jv *self, jargs *a, bool suffix) {
  if (a->npos == 0) return ferr(r, "%s() requires an argument", suffix ? "endswith" : "startswith");
  const jv *p = a->pos[0];
  if (p->kind == JV_STR) return jv_bool(r, has_prefix(self, p, suffix));
  if (p->kind != JV_ARRAY)
    return ferr(r, "%s() takes a string or a tuple of strings", suffix ? "endswith" : "startswith");
  for (size_t i = 0; i < p->arr.n; i++) {
    if (p->arr.v[i]->kind != JV_STR)
      return ferr(r, "%s() tuple elements must be strings", suffix ? "endswith" : "startswith");
    if (has_prefix(self, p->arr.v[i], suffix)) return jv_bool(r, true);
  }
  return jv_bool(r, false);
}

static jv *split(jrender *r, const jv *self, jargs *a) {
  const jv *sep = a->npos > 0 ? a->pos[0] : NULL;
  double maxsplit = -1;
  if (sep && sep->kind != JV_STR && sep->kind != JV_NULL)
    return ferr(r, "split() separator must be a string or none");
  if (a->npos > 1) {
    if (a->pos[1]->kind != JV_INT) return ferr(r, "split() maxsplit must be an integer");
    maxsplit = a->pos[1]->num;
  }
  jv *res = jv_new(r, JV_ARRAY);
  if (!res) return NULL;
  const char *s = self->s;
  size_t n = self->n;
  if (!sep || sep->kind == JV_NULL) {
    size_t i = trim_start(s, n);
    while (i < n) {
      size_t e = i, k;
      while (e < n && js_space_at(s, n, e) == 0) e++;
      if (maxsplit != -1 && (double)res->arr.n >= maxsplit) {
        if (!jv_push(r, res, jv_str(r, s + i, n - i))) return NULL;
        return res;
      }
      if (!jv_push(r, res, jv_str(r, s + i, e - i))) return NULL;
      i = e;
      while ((k = js_space_at(s, n, i)) > 0) i += k;
    }
    return res;
  }
  if (sep->n == 0) return ferr(r, "empty separator");
  size_t start = 0;
  for (size_t i = 0; i + sep->n <= n;) {
    if (memcmp(s + i, sep->s, sep->n) == 0 && (maxsplit == -1 || (double)res->arr.n < maxsplit)) {
      if (!jv_push(r, res, jv_str(r, s + start, i - start))) return NULL;
      i += sep->n;
      start = i;
    } else {
      i++;
    }
  }
  if (!jv_push(r, res, jv_str(r, s + start, n - start))) return NULL;
  return res;
}

static size_t cp_len(const char *s, size_t n, size_t i) {
  size_t e = i + 1;
  while (e < n && ((unsigned char)s[e] & 0xC0) == 0x80) e++;
  return e - i;
}

static jv *replace(jrender *r, const jv *self, jargs *a) {
  if (a->npos < 2) return ferr(r, "replace() requires two arguments");
  const jv *old = a->pos[0], *nw = a->pos[1];
  if (old->kind != JV_STR || nw->kind != JV_STR)
    return ferr(r, "replace() arguments must be strings");
  const jv *count = a->npos > 2 ? a->pos[2] : jmap_get(&a->kw, "count", 5);
  if (count && count->kind != JV_INT && count->kind != JV_NULL)
    return ferr(r, "replace() count must be an integer or none");
  double left = count && count->kind == JV_INT && count->num >= 0 ? count->num : INFINITY;
  jbuf b = sbuf(r);
  bool ok = true;
  size_t i = 0;
  if (old->n == 0) {
    while (ok && i <= self->n) {
      if (left > 0) {
        ok = jbuf_put(&b, nw->s, nw->n);
        left--;
      }
      if (i == self->n) break;
      size_t k = cp_len(self->s, self->n, i);
      ok = ok && jbuf_put(&b, self->s + i, k);
      i += k;
    }
    return sdone(r, &b, ok);
  }
  while (ok && i < self->n) {
    if (left > 0 && i + old->n <= self->n && memcmp(self->s + i, old->s, old->n) == 0) {
      ok = jbuf_put(&b, nw->s, nw->n);
      i += old->n;
      left--;
    } else {
      ok = jbuf_putc(&b, self->s[i++]);
    }
  }
  return sdone(r, &b, ok);
}

static jv *strip(jrender *r, const jv *v, bool front, bool back) {
  size_t b = front ? trim_start(v->s, v->n) : 0;
  size_t e = back ? trim_end(v->s, v->n, b) : v->n;
  return jv_str(r, v->s + b, e - b);
}

static jv *escape_html(jrender *r, const jv *v) {
  jbuf b = sbuf(r);
  bool ok = true;
  for (size_t i = 0; i < v->n && ok; i++) {
    switch (v->s[i]) {
      case '&': ok = jbuf_put(&b, "&amp;", 5); break;
      case '<': ok = jbuf_put(&b, "&lt;", 4); break;
      case '>': ok = jbuf_put(&b, "&gt;", 4); break;
      case '"': ok = jbuf_put(&b, "&#34;", 5); break;
      case '\'': ok = jbuf_put(&b, "&#39;", 5); break;
      default: ok = jbuf_putc(&b, v->s[i]);
    }
  }
  return sdone(r, &b, ok);
}

static jv *indent(jrender *r, const jv *v, double width, bool first, bool blank) {
  jbuf b = sbuf(r);
  bool ok = true;
  size_t i = 0, line = 0;
  for (;;) {
    size_t e = i;
    while (e < v->n && v->s[e] != '\n') e++;
    bool empty = e == i;
    if (!((!first && line == 0) || (!blank && empty)))
      for (double k = 0; k < width && ok; k++) ok = jbuf_putc(&b, ' ');
    ok = ok && jbuf_put(&b, v->s + i, e - i);
    if (e >= v->n || !ok) break;
    ok = jbuf_putc(&b, '\n');
    i = e + 1;
    line++;
  }
  return sdone(r, &b, ok);
}

/* parseInt(s, 10) / parseFloat(s); false when JavaScript gives NaN. */
static bool parse_number(const jv *v, bool integer, double *out) {
  size_t b = trim_start(v->s, v->n);
  char buf[64];
  size_t n = 0;
  for (size_t i = b; i < v->n && n < sizeof buf - 1; i++) buf[n++] = v->s[i];
  buf[n] = '\0';
  const char *p = buf;
  if (integer) {
    char *end;
    if (!(p[0] >= '0' && p[0] <= '9') &&
        !((p[0] == '-' || p[0] == '+') && p[1] >= '0' && p[1] <= '9'))
      return false;
    *out = strtod(p, &end); /* digits only: cut at the first non-digit */
    size_t k = (p[0] == '-' || p[0] == '+') ? 1 : 0;
    while (p[k] >= '0' && p[k] <= '9') k++;
    buf[k] = '\0';
    *out = strtod(buf, NULL);
    return true;
  }
  if (strncmp(p, "Infinity", 8) == 0 || strncmp(p, "+Infinity", 9) == 0) {
    *out = INFINITY;
    return true;
  }
  if (strncmp(p, "-Infinity", 9) == 0) {
    *out = -INFINITY;
    return true;
  }
  size_t k = 0;
  if (p[k] == '-' || p[k] == '+') k++;
  size_t ds = k;
  while (p[k] >= '0' && p[k] <= '9') k++;
  if (p[k] == '.') {
    k++;
    while (p[k] >= '0' && p[k] <= '9') k++;
  }
  if (k == ds || (k == ds + 1 && p[ds] == '.')) return false;
  if (p[k] == 'e' || p[k] == 'E') {
    size_t e = k + 1;
    if (p[e] == '-' || p[e] == '+') e++;
    if (p[e] >= '0' && p[e] <= '9') {
      while (p[e] >= '0' && p[e] <= '9') e++;
      k = e;
    }
  }
  buf[k] = '\0';
  *out = strtod(buf, NULL);
  return true;
}

/* ---- functions ------------------------------------------------------------------------ */
static jv *raise(jrender *r, jargs *a) {
  jbuf b = sbuf(r);
  bool ok = true;
  for (size_t i = 0; i < a->npos && ok; i++) {
    if (i) ok = jbuf_putc(&b, ',');
    ok = ok && jv_print(r, &b, a->pos[i], 0);
  }
  if (r->err.st == AT_OK) {
    jfail(r, AT_ERR_INVALID_ARG, "%s", b.p ? b.p : "");
    r->raised = true;
  }
  free(b.p);
  return NULL;
}

static jv *range(jrender *r, jargs *a) {
  for (size_t i = 0; i < a->npos; i++)
    if (a->pos[i]->kind != JV_INT) return ferr(r, "range() takes integers");
  if (a->npos == 0 || a->npos > 3) return ferr(r, "range() takes 1 to 3 arguments");
  double start = 0, stop, step = 1;
  if (a->npos == 1) {
    stop = a->pos[0]->num;
  } else {
    start = a->pos[0]->num;
    stop = a->pos[1]->num;
    if (a->npos == 3) step = a->pos[2]->num;
  }
  if (step == 0) return ferr(r, "range() step must not be zero");
  jv *res = jv_new(r, JV_ARRAY);
  for (double i = start; res && (step > 0 ? i < stop : i > stop); i += step) {
    if (++r->iterations > JINJA_MAX_ITERATIONS) {
      jfail(r, AT_ERR_LIMIT, "range() longer than %d items", JINJA_MAX_ITERATIONS);
      return NULL;
    }
    if (!jv_push(r, res, jv_num(r, JV_INT, i))) return NULL;
  }
  return res;
}

static jv *strftime_now(jrender *r, jargs *a) {
  static const char *const months[] = {"January",   "February", "March",    "April",
                                       "May",       "June",     "July",     "August",
                                       "September", "October",  "November", "December"};
  if (a->npos < 1 || a->pos[0]->kind != JV_STR)
    return ferr(r, "strftime_now() takes a format string");
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  const jv *f = a->pos[0];
  jbuf b = sbuf(r);
  bool ok = true;
  for (size_t i = 0; i < f->n && ok; i++) {
    char tmp[32];
    if (f->s[i] != '%' || i + 1 >= f->n || !strchr("YmdbBHM%", f->s[i + 1])) {
      ok = jbuf_putc(&b, f->s[i]);
      continue;
    }
    char c = f->s[++i];
    switch (c) {
      case 'Y': snprintf(tmp, sizeof tmp, "%d", tm.tm_year + 1900); break;
      case 'm': snprintf(tmp, sizeof tmp, "%02d", tm.tm_mon + 1); break;
      case 'd': snprintf(tmp, sizeof tmp, "%02d", tm.tm_mday); break;
      case 'b': snprintf(tmp, sizeof tmp, "%.3s", months[tm.tm_mon]); break;
      case 'B': snprintf(tmp, sizeof tmp, "%s", months[tm.tm_mon]); break;
      case 'H': snprintf(tmp, sizeof tmp, "%02d", tm.tm_hour); break;
      case 'M': snprintf(tmp, sizeof tmp, "%02d", tm.tm_min); break;
      default: snprintf(tmp, sizeof tmp, "%%"); break;
    }
    ok = jbuf_put(&b, tmp, strlen(tmp));
  }
  return sdone(r, &b, ok);
}

static jv *namespace_(jrender *r, jargs *a) {
  jv *ns = jv_new(r, JV_NAMESPACE);
  if (!ns) return NULL;
  if (a->npos > 1) return ferr(r, "namespace() takes at most one positional argument");
  if (a->npos == 1) {
    const jv *src = a->pos[0];
    if (src->kind == JV_OBJECT) {
      for (size_t i = 0; i < src->map.n; i++)
        if (!jmap_set(r, &ns->map, src->map.keys[i], src->map.klens[i], src->map.vals[i]))
          return NULL;
    } else if (src->kind == JV_ARRAY) {
      for (size_t i = 0; i < src->arr.n; i++) {
        const jv *p = src->arr.v[i];
        if (p->kind != JV_ARRAY || p->arr.n != 2 || p->arr.v[0]->kind != JV_STR)
          return ferr(r, "namespace() expects [key, value] pairs");
        if (!jmap_set(r, &ns->map, p->arr.v[0]->s, p->arr.v[0]->n, p->arr.v[1])) return NULL;
      }
    } else {
      return ferr(r, "namespace() cannot take a %s", jv_type_name(src));
    }
  }
  for (size_t i = 0; i < a->kw.n; i++)
    if (!jmap_set(r, &ns->map, a->kw.keys[i], a->kw.klens[i], a->kw.vals[i])) return NULL;
  return ns;
}

static jv *pairs(jrender *r, const jv *o, int which) { /* 0 items, 1 keys, 2 values */
  jv *res = jv_new(r, JV_ARRAY);
  for (size_t i = 0; res && i < o->map.n; i++) {
    jv *k = jv_str(r, o->map.keys[i], o->map.klens[i]), *item = k;
    if (which == 2) item = o->map.vals[i];
    if (which == 0) {
      item = jv_new(r, JV_ARRAY);
      if (!item || !jv_push(r, item, k) || !jv_push(r, item, o->map.vals[i])) return NULL;
    }
    if (!jv_push(r, res, item)) return NULL;
  }
  return res;
}

jv *jinja_call_builtin(jrender *r, const jv *fn, jargs *a) {
  const jv *self = fn->self;
  switch (fn->fn) {
    case F_RAISE: return raise(r, a);
    case F_RANGE: return range(r, a);
    case F_STRFTIME: return strftime_now(r, a);
    case F_NAMESPACE: return namespace_(r, a);
    case F_STR_UPPER: return case_map(r, self, true, false);
    case F_STR_LOWER: return case_map(r, self, false, false);
    case F_STR_STRIP: return strip(r, self, true, true);
    case F_STR_LSTRIP: return strip(r, self, true, false);
    case F_STR_RSTRIP: return strip(r, self, false, true);
    case F_STR_TITLE: return title(r, self);
    case F_STR_CAPITALIZE: return case_map(r, self, true, true);
    case F_STR_STARTSWITH: return starts_ends(r, self, a, false);
    case F_STR_ENDSWITH: return starts_ends(r, self, a, true);
    case F_STR_SPLIT: return split(r, self, a);
    case F_STR_REPLACE: return replace(r, self, a);
    case F_OBJ_GET: {
      if (a->npos < 1 || a->pos[0]->kind != JV_STR) return ferr(r, "get() takes a string key");
      jv *v = jmap_get(&self->map, a->pos[0]->s, a->pos[0]->n);
      if (v) return v;
      return a->npos > 1 ? a->pos[1] : jv_null(r);
    }
    case F_OBJ_ITEMS: return pairs(r, self, 0);
    case F_OBJ_KEYS: return pairs(r, self, 1);
    case F_OBJ_VALUES: return pairs(r, self, 2);
    case F_MACRO: break;
  }
  return ferr(r, "not callable here");
}

/* ---- tests ------------------------------------------------------------------------------- */
bool jinja_test(jrender *r, const jv *v, const char *name, size_t n, const jv *arg, bool *ok) {
  jv_kind k = v->kind;
  if (name_is(name, n, "odd") || name_is(name, n, "even")) {
    if (k != JV_INT) {
      ferr(r, "cannot test a %s with %s", jv_type_name(v),
           name_is(name, n, "odd") ? "odd" : "even");
      return false;
    }
    bool odd = fmod(v->num, 2) != 0;
    *ok = name_is(name, n, "odd") ? odd : !odd;
    return true;
  }
  if (name_is(name, n, "boolean"))
    *ok = k == JV_BOOL;
  else if (name_is(name, n, "callable"))
    *ok = k == JV_FUNC;
  else if (name_is(name, n, "false"))
    *ok = k == JV_BOOL && !v->b;
  else if (name_is(name, n, "true"))
    *ok = k == JV_BOOL && v->b;
  else if (name_is(name, n, "none"))
    *ok = k == JV_NULL;
  else if (name_is(name, n, "string"))
    *ok = k == JV_STR;
  else if (name_is(name, n, "number"))
    *ok = k == JV_INT || k == JV_FLOAT;
  else if (name_is(name, n, "integer"))
    *ok = k == JV_INT;
  else if (name_is(name, n, "iterable"))
    *ok = (k == JV_ARRAY && !v->tuple) || k == JV_STR;
  else if (name_is(name, n, "mapping"))
    *ok = k == JV_OBJECT;
  else if (name_is(name, n, "sequence"))
    *ok = k == JV_ARRAY || k == JV_OBJECT || k == JV_STR;
  else if (name_is(name, n, "defined"))
    *ok = k != JV_UNDEF;
  else if (name_is(name, n, "undefined"))
    *ok = k == JV_UNDEF;
  else if (name_is(name, n, "lower") || name_is(name, n, "upper")) {
    if (k != JV_STR) {
      *ok = false;
      return true;
    }
    jv *m = case_map(r, v, name_is(name, n, "upper"), false);
    if (!m) return false;
    *ok = m->n == v->n && memcmp(m->s, v->s, v->n) == 0;
  } else if (name_is(name, n, "equalto") || name_is(name, n, "eq")) {
    *ok = arg && jv_strict_eq(v, arg);
  } else {
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(n < 60 ? n : 60), name);
    ferr(r, "unknown test '%s'", nm);
    return false;
  }
  return true;
}

/* ---- filters ------------------------------------------------------------------------------ */
static jv *kwarg(jargs *a, size_t pos, const char *name) {
  if (!a) return NULL;
  if (pos < a->npos) return a->pos[pos];
  return jmap_get(&a->kw, name, strlen(name));
}

static jv *join(jrender *r, const jv *operand, jargs *a) {
  const jv *sep = kwarg(a, 0, "separator");
  if (sep && sep->kind != JV_STR) return ferr(r, "join separator must be a string");
  jbuf b = sbuf(r);
  bool ok = true;
  if (operand->kind == JV_STR) {
    for (size_t i = 0; i < operand->n && ok;) {
      size_t k = cp_len(operand->s, operand->n, i);
      if (i && sep) ok = jbuf_put(&b, sep->s, sep->n);
      ok = ok && jbuf_put(&b, operand->s + i, k);
      i += k;
    }
    return sdone(r, &b, ok);
  }
  for (size_t i = 0; i < operand->arr.n && ok; i++) {
    const jv *x = operand->arr.v[i];
    if (i && sep) ok = jbuf_put(&b, sep->s, sep->n);
    if (ok && x->kind != JV_NULL && x->kind != JV_UNDEF) ok = jv_raw(r, &b, x, 1);
  }
  if (!ok && r->err.st) {
    free(b.p);
    return NULL;
  }
  return sdone(r, &b, ok);
}

static jv *tojson(jrender *r, const jv *operand, jargs *a) {
  jv *ind = a ? jmap_get(&a->kw, "indent", 6) : NULL;
  jv *asc = a ? jmap_get(&a->kw, "ensure_ascii", 12) : NULL;
  jv *sk = a ? jmap_get(&a->kw, "sort_keys", 9) : NULL;
  jv *sep = a ? jmap_get(&a->kw, "separators", 10) : NULL;
  if (ind && ind->kind != JV_INT && ind->kind != JV_NULL)
    return ferr(r, "tojson indent must be an integer");
  if (asc && asc->kind != JV_BOOL) return ferr(r, "tojson ensure_ascii must be a boolean");
  if (sk && sk->kind != JV_BOOL) return ferr(r, "tojson sort_keys must be a boolean");
  if (sk && sk->b) return ferr(r, "tojson(sort_keys=true) is not supported");
  jjson_fmt f = {0, asc && asc->b, true, NULL, NULL};
  if (sep && sep->kind == JV_ARRAY) {
    if (sep->arr.n != 2 || sep->arr.v[0]->kind != JV_STR || sep->arr.v[1]->kind != JV_STR)
      return ferr(r, "tojson separators must be a tuple of two strings");
    f.item_sep = sep->arr.v[0];
    f.key_sep = sep->arr.v[1];
  } else if (sep && sep->kind != JV_NULL) {
    return ferr(r, "tojson separators must be a tuple of two strings");
  }
  if (ind && ind->kind == JV_INT && ind->num < 0)
    return ferr(r, "tojson indent must not be negative");
  f.indent = ind && ind->kind == JV_INT ? (int)fmin(ind->num, 64) : 0;
  jbuf b = sbuf(r);
  bool ok = jv_json(r, &b, operand, &f, 0);
  if (!ok) {
    free(b.p);
    return NULL;
  }
  return sdone(r, &b, true);
}

static jv *attr_path(jrender *r, jv *item, const jv *path) {
  size_t i = 0;
  while (i <= path->n) {
    size_t e = i;
    while (e < path->n && path->s[e] != '.') e++;
    if (item->kind == JV_OBJECT || item->kind == JV_NAMESPACE) {
      item = jmap_get(&item->map, path->s + i, e - i);
      if (!item) return jv_undef(r);
    } else if (item->kind == JV_ARRAY) {
      size_t idx = 0, k = i;
      if (k == e) return jv_undef(r);
      for (; k < e && path->s[k] >= '0' && path->s[k] <= '9'; k++)
        idx = idx * 10 + (size_t)(path->s[k] - '0');
      if (k == i || idx >= item->arr.n) return jv_undef(r);
      item = item->arr.v[idx];
    } else {
      return jv_undef(r);
    }
    i = e + 1;
  }
  return item;
}

static jv *select_reject(jrender *r, const jv *operand, jargs *a, const jnode *call, bool select) {
  for (size_t i = 0; i < operand->arr.n; i++)
    if (operand->arr.v[i]->kind != JV_OBJECT && operand->arr.v[i]->kind != JV_NAMESPACE)
      return ferr(r, "%s can only be applied to a list of dicts",
                  select ? "selectattr" : "rejectattr");
  for (size_t i = 0; i < call->items.n; i++)
    if (call->items.v[i]->kind != N_STR)
      return ferr(r, "the arguments of %s must be strings", select ? "selectattr" : "rejectattr");
  if (a->npos < 1)
    return ferr(r, "%s needs an attribute name", select ? "selectattr" : "rejectattr");
  jv *res = jv_new(r, JV_ARRAY);
  for (size_t i = 0; res && i < operand->arr.n; i++) {
    jv *item = operand->arr.v[i];
    jv *attr = jmap_get(&item->map, a->pos[0]->s, a->pos[0]->n);
    bool ok = false;
    if (attr && a->npos >= 2) {
      if (!jinja_test(r, attr, a->pos[1]->s, a->pos[1]->n, a->npos > 2 ? a->pos[2] : NULL, &ok))
        return NULL;
    } else if (attr) {
      ok = jv_truthy(attr);
    }
    if (ok == select && !jv_push(r, res, item)) return NULL;
  }
  return res;
}

static jv *map_attr(jrender *r, const jv *operand, jargs *a) {
  jv *attr = jmap_get(&a->kw, "attribute", 9);
  if (!attr) return ferr(r, "map() is supported with attribute= only");
  if (attr->kind != JV_STR) return ferr(r, "map() attribute must be a string");
  jv *def = jmap_get(&a->kw, "default", 7);
  jv *res = jv_new(r, JV_ARRAY);
  for (size_t i = 0; res && i < operand->arr.n; i++) {
    jv *item = operand->arr.v[i];
    if (item->kind != JV_OBJECT && item->kind != JV_NAMESPACE)
      return ferr(r, "map() items must be dicts");
    jv *v = attr_path(r, item, attr);
    if (!v) return NULL;
    if (v->kind == JV_UNDEF && def) v = def;
    if (!jv_push(r, res, v)) return NULL;
  }
  return res;
}

static jv *spelled(jrender *r, const jv *v, bool json) {
  jbuf b = sbuf(r);
  jjson_fmt f = {0, false, false, NULL, NULL};
  bool ok = json ? jv_json(r, &b, v, &f, 0) : jv_print(r, &b, v, 0);
  if (!ok) {
    free(b.p);
    return NULL;
  }
  return sdone(r, &b, true);
}

/* Filters written without parentheses. */
static jv *filter_plain(jrender *r, jv *v, const char *name, size_t n) {
#define IS(w) name_is(name, n, w)
  if (v->kind == JV_ARRAY) {
    if (IS("list")) return v;
    if ((IS("first") || IS("last")) && v->arr.n == 0) /* @huggingface/jinja fails there too */
      return ferr(r, "filter '%s' applied to an empty list", IS("first") ? "first" : "last");
    if (IS("first")) return v->arr.v[0];
    if (IS("last")) return v->arr.v[v->arr.n - 1];
    if (IS("length")) return jv_num(r, JV_INT, (double)v->arr.n);
    if (IS("reverse")) {
      jv *res = jv_new(r, JV_ARRAY);
      for (size_t i = v->arr.n; res && i > 0; i--)
        if (!jv_push(r, res, v->arr.v[i - 1])) return NULL;
      return res;
    }
    if (IS("join")) return join(r, v, NULL);
    if (IS("string")) return spelled(r, v, true);
  } else if (v->kind == JV_STR) {
    if (IS("length")) return jv_num(r, JV_INT, (double)utf16_length(v->s, v->n));
    if (IS("upper")) return case_map(r, v, true, false);
    if (IS("lower")) return case_map(r, v, false, false);
    if (IS("title")) return title(r, v);
    if (IS("capitalize")) return case_map(r, v, true, true);
    if (IS("trim")) return strip(r, v, true, true);
    if (IS("indent")) return indent(r, v, 4, false, false);
    if (IS("join") || IS("string")) return v;
    if (IS("e") || IS("escape")) return escape_html(r, v);
    if (IS("int") || IS("float")) {
      double d;
      if (!parse_number(v, IS("int"), &d)) d = 0;
      return jv_num(r, IS("int") ? JV_INT : JV_FLOAT, d);
    }
  } else if (v->kind == JV_INT || v->kind == JV_FLOAT) {
    if (IS("abs")) return jv_num(r, v->kind, fabs(v->num));
    if (IS("int")) return jv_num(r, JV_INT, floor(v->num));
    if (IS("float")) return jv_num(r, JV_FLOAT, v->num);
    if (IS("string")) return spelled(r, v, false);
  } else if (v->kind == JV_OBJECT) {
    if (IS("items")) return pairs(r, v, 0);
    if (IS("length")) return jv_num(r, JV_INT, (double)v->map.n);
    if (IS("keys")) return pairs(r, v, 1);
    if (IS("values")) return pairs(r, v, 2);
  } else if (v->kind == JV_BOOL) {
    if (IS("bool")) return v;
    if (IS("int")) return jv_num(r, JV_INT, v->b);
    if (IS("float")) return jv_num(r, JV_FLOAT, v->b);
    if (IS("string")) return jv_str(r, v->b ? "true" : "false", v->b ? 4 : 5);
  }
#undef IS
  return NULL;
}

/* Filters written with parentheses (a, call non-NULL). */
static jv *filter_call(jrender *r, jv *v, const char *name, size_t n, jargs *a, const jnode *call) {
#define IS(w) name_is(name, n, w)
  if (IS("join")) {
    if (v->kind != JV_STR && v->kind != JV_ARRAY) return NULL;
    return join(r, v, a);
  }
  if (IS("int") || IS("float")) {
    jv *def = kwarg(a, 0, "default");
    if (v->kind == JV_STR) {
      double d;
      if (!parse_number(v, IS("int"), &d))
        return def ? def : jv_num(r, IS("int") ? JV_INT : JV_FLOAT, 0);
      return jv_num(r, IS("int") ? JV_INT : JV_FLOAT, d);
    }
    if (v->kind == JV_INT || v->kind == JV_FLOAT) return v;
    if (v->kind == JV_BOOL) return jv_num(r, IS("int") ? JV_INT : JV_FLOAT, v->b);
    return NULL;
  }
  if (IS("default")) {
    jv *def = a->npos > 0 ? a->pos[0] : NULL;
    jv *boolean = a->npos > 1 ? a->pos[1] : jmap_get(&a->kw, "boolean", 7);
    if (boolean && boolean->kind != JV_BOOL)
      return ferr(r, "default()'s boolean flag must be a boolean");
    if (v->kind == JV_UNDEF || (boolean && boolean->b && !jv_truthy(v)))
      return def ? def : jv_str(r, "", 0);
    return v;
  }
  if (v->kind == JV_ARRAY) {
    if (IS("selectattr") || IS("rejectattr")) return select_reject(r, v, a, call, IS("selectattr"));
    if (IS("map")) return map_attr(r, v, a);
  } else if (v->kind == JV_STR) {
    if (IS("indent")) {
      jv *w = kwarg(a, 0, "width"), *f = kwarg(a, 1, "first"), *b = kwarg(a, 2, "blank");
      if (w && w->kind != JV_INT) return ferr(r, "indent width must be an integer");
      return indent(r, v, w ? fmin(w->num, 1024) : 4, f && jv_truthy(f), b && jv_truthy(b));
    }
    if (IS("replace")) return replace(r, v, a);
  } else if (v->kind == JV_OBJECT) {
    jv *m = NULL;
    if (IS("get"))
      m = jv_func(r, F_OBJ_GET, v);
    else if (IS("items"))
      m = jv_func(r, F_OBJ_ITEMS, v);
    else if (IS("keys"))
      m = jv_func(r, F_OBJ_KEYS, v);
    else if (IS("values"))
      m = jv_func(r, F_OBJ_VALUES, v);
    if (m) return jinja_call_builtin(r, m, a);
  }
#undef IS
  return NULL;
}

jv *jinja_filter(jrender *r, jv *operand, const char *name, size_t n, jargs *a, const jnode *call) {
  if (name_is(name, n, "safe")) return operand;
  if (name_is(name, n, "tojson")) return tojson(r, operand, a);
  jv *res = a ? filter_call(r, operand, name, n, a, call) : filter_plain(r, operand, name, n);
  if (res || r->err.st) return res;
  char nm[64];
  snprintf(nm, sizeof nm, "%.*s", (int)(n < 60 ? n : 60), name);
  return ferr(r, "filter '%s' cannot be applied to a %s", nm, jv_type_name(operand));
}
