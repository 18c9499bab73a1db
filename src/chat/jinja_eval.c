/* src/chat/jinja_eval.c — walks a parsed template and writes its output.
 *
 * Semantics are @huggingface/jinja's where it differs from Python Jinja, since
 * byte-identity with it is the contract (docs/chat_templates.md): `==` is
 * JavaScript's loose equality and `in` over a list its strict one; undefined
 * renders as nothing and its attributes are undefined, but arithmetic on it
 * fails; `for` opens a scope (a `set` inside a loop does not leak out, use a
 * namespace); a macro sees the variables of the scope it is called from, a
 * {% call %} block's caller() those of the scope the block stands in;
 * `break`/`continue` drop the output of the iteration they end in.
 *
 * Bounds: loop iterations (JINJA_MAX_ITERATIONS per render, range() counted
 * too), macro call depth (JINJA_MAX_CALLS), output size (the caller's
 * max_output) and memory (the render arena's cap) all fail with AT_ERR_LIMIT.
 * Expression recursion follows the AST, whose depth the parser bounded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

struct jscope {
  jscope *parent;
  jmap vars;
};

typedef enum ctl { CTL_NONE, CTL_BREAK, CTL_CONTINUE } ctl;

typedef struct ev {
  jrender *r;
  ctl ctl;
  int loops; /* enclosing for-loops (break/continue need one) */
} ev;

static jv *eval(ev *E, jscope *s, const jnode *x);
static bool exec_block(ev *E, jscope *s, const jlist *body, jbuf *out);

static jscope *scope_new(jrender *r, jscope *parent) {
  jscope *s = jarena_alloc(&r->arena, sizeof *s);
  if (!s)
    jfail(r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", r->arena.cap);
  else
    s->parent = parent;
  return s;
}

static jv *lookup(ev *E, jscope *s, const char *name, size_t n) {
  for (; s; s = s->parent) {
    jv *v = jmap_get(&s->vars, name, n);
    if (v) return v;
  }
  if (n == 9 && memcmp(name, "namespace", 9) == 0) return jv_func(E->r, F_NAMESPACE, NULL);
  return jv_undef(E->r);
}

static jv *fail(ev *E, const char *what, const jnode *x) {
  if (x && E->r->err.st == AT_OK) E->r->at_off = x->off;
  jfail(E->r, AT_ERR_INVALID_ARG, "%s", what);
  return NULL;
}

static bool emit(ev *E, jbuf *out, const char *s, size_t n) {
  if (jbuf_put(out, s, n)) return true;
  jfail(E->r, AT_ERR_LIMIT, "the output exceeds the limit of %zu bytes", E->r->max_output);
  return false;
}

/* A string value from a jbuf built by one of the spellings. */
static jv *str_of(ev *E, jbuf *b) {
  jv *v = jv_str(E->r, b->p ? b->p : "", b->n);
  free(b->p);
  return v;
}

static jbuf scratch(ev *E) {
  return (jbuf){NULL, 0, 0, E->r->max_output};
}

/* ---- operators --------------------------------------------------------------------- */
static bool numeric_like(const jv *v) {
  return v->kind == JV_INT || v->kind == JV_FLOAT || v->kind == JV_BOOL;
}
static double numval(const jv *v) {
  return v->kind == JV_BOOL ? (double)v->b : v->num;
}

static jv *concat_raw(ev *E, const jv *a, const jv *b) {
  jbuf buf = scratch(E);
  if (!jv_raw(E->r, &buf, a, 0) || !jv_raw(E->r, &buf, b, 0)) {
    free(buf.p);
    return NULL;
  }
  return str_of(E, &buf);
}

static jv *arith(ev *E, jop op, const jv *l, const jv *rt) {
  double a = l->num, b = rt->num, res = 0;
  bool isf = l->kind == JV_FLOAT || rt->kind == JV_FLOAT;
  /* as Python: x / 0, x // 0 and x % 0 raise, for integers and floats alike (a NaN
   * "integer" from -0 // 0 could otherwise index a list) */
  if ((op == OP_DIV || op == OP_FLOORDIV || op == OP_MOD) && b == 0)
    return fail(E, "division by zero", NULL);
  switch (op) {
    case OP_ADD: res = a + b; break;
    case OP_SUB: res = a - b; break;
    case OP_MUL: res = a * b; break;
    case OP_DIV: return jv_num(E->r, JV_FLOAT, a / b);
    case OP_FLOORDIV: res = floor(a / b); break;
    case OP_MOD: res = fmod(a, b); break;
    case OP_LT: return jv_bool(E->r, a < b);
    case OP_GT: return jv_bool(E->r, a > b);
    case OP_LE: return jv_bool(E->r, a <= b);
    case OP_GE: return jv_bool(E->r, a >= b);
    default: return NULL;
  }
  /* Python's integers have no bound; ours are doubles: one past their range is refused
   * rather than carried on as inf (inf - inf would be a NaN index) */
  if (!isf && !isfinite(res)) return fail(E, "an integer result is too large", NULL);
  return jv_num(E->r, isf ? JV_FLOAT : JV_INT, res);
}

static jv *power(ev *E, const jv *l, const jv *rt) {
  double a = numval(l), b = numval(rt);
  if (a == 0 && b < 0) return fail(E, "0.0 cannot be raised to a negative power", NULL);
  double res = pow(a, b);
  if (!isfinite(res)) return fail(E, "exponentiation result is not a finite real number", NULL);
  bool isf = l->kind == JV_FLOAT || rt->kind == JV_FLOAT || b < 0;
  return jv_num(E->r, isf ? JV_FLOAT : JV_INT, res);
}

static jv *membership(ev *E, jop op, const jv *l, const jv *rt) {
  bool found = false;
  if (rt->kind == JV_ARRAY) {
    for (size_t i = 0; i < rt->arr.n && !found; i++) found = jv_strict_eq(rt->arr.v[i], l);
  } else if (l->kind == JV_STR && rt->kind == JV_STR) {
    found = l->n == 0;
    for (size_t i = 0; !found && l->n <= rt->n && i <= rt->n - l->n; i++)
      found = memcmp(rt->s + i, l->s, l->n) == 0;
  } else if (l->kind == JV_STR && rt->kind == JV_OBJECT) {
    found = jmap_get(&rt->map, l->s, l->n) != NULL;
  } else {
    return NULL;
  }
  return jv_bool(E->r, op == OP_IN ? found : !found);
}

static jv *binop(ev *E, jscope *s, const jnode *x) {
  jv *l = eval(E, s, x->a);
  if (!l) return NULL;
  if (x->op == OP_AND) return jv_truthy(l) ? eval(E, s, x->b) : l;
  if (x->op == OP_OR) return jv_truthy(l) ? l : eval(E, s, x->b);
  jv *rt = eval(E, s, x->b);
  if (!rt) return NULL;
  jop op = x->op;
  if (op == OP_EQ || op == OP_NE) return jv_bool(E->r, jv_loose_eq(E->r, l, rt) == (op == OP_EQ));
  if (l->kind == JV_UNDEF || rt->kind == JV_UNDEF) {
    if (rt->kind == JV_UNDEF && (op == OP_IN || op == OP_NOT_IN))
      return jv_bool(E->r, op == OP_NOT_IN);
    return fail(E, "cannot apply an operator to an undefined value", x);
  }
  if (l->kind == JV_NULL || rt->kind == JV_NULL)
    return fail(E, "cannot apply an operator to none", x);
  if (op == OP_CONCAT) return concat_raw(E, l, rt);
  if (op == OP_POW && numeric_like(l) && numeric_like(rt)) return power(E, l, rt);
  jv *res = NULL;
  bool ln = l->kind == JV_INT || l->kind == JV_FLOAT,
       rn = rt->kind == JV_INT || rt->kind == JV_FLOAT;
  if (ln && rn) {
    res = arith(E, op, l, rt);
  } else if (l->kind == JV_ARRAY && rt->kind == JV_ARRAY) {
    if (op == OP_ADD) {
      res = jv_new(E->r, JV_ARRAY);
      for (size_t i = 0; res && i < l->arr.n; i++)
        if (!jv_push(E->r, res, l->arr.v[i])) return NULL;
      for (size_t i = 0; res && i < rt->arr.n; i++)
        if (!jv_push(E->r, res, rt->arr.v[i])) return NULL;
      return res;
    }
  } else if (rt->kind == JV_ARRAY && (op == OP_IN || op == OP_NOT_IN)) {
    return membership(E, op, l, rt);
  }
  if (res || E->r->err.st) return res;
  if (op == OP_ADD && (l->kind == JV_STR || rt->kind == JV_STR)) return concat_raw(E, l, rt);
  if ((op == OP_IN || op == OP_NOT_IN) && l->kind == JV_STR &&
      (rt->kind == JV_STR || rt->kind == JV_OBJECT))
    return membership(E, op, l, rt);
  char msg[128];
  snprintf(msg, sizeof msg, "unsupported operator between %s and %s", jv_type_name(l),
           jv_type_name(rt));
  return fail(E, msg, x);
}

static jv *unop(ev *E, jscope *s, const jnode *x) {
  jv *a = eval(E, s, x->a);
  if (!a) return NULL;
  if (x->op == OP_NOT) return jv_bool(E->r, !jv_truthy(a));
  if (!numeric_like(a)) return fail(E, "unary - or + applied to a non-number", x);
  double v = (x->op == OP_NEG ? -1 : 1) * numval(a);
  return jv_num(E->r, a->kind == JV_FLOAT ? JV_FLOAT : JV_INT, v);
}

/* ---- member access, slices ------------------------------------------------------------ */
/* The n-th code point of s (negative from the end), or NULL. */
static jv *str_index(ev *E, const jv *sv, double idx) {
  size_t count = 0;
  for (size_t i = 0; i < sv->n; i++)
    if (((unsigned char)sv->s[i] & 0xC0) != 0x80) count++;
  double k = idx < 0 ? (double)count + idx : idx;
  if (!(k >= 0 && k < (double)count) || k != floor(k)) return jv_undef(E->r); /* NaN too */
  size_t want = (size_t)k, cp = 0;
  for (size_t i = 0; i < sv->n; i++) {
    if (((unsigned char)sv->s[i] & 0xC0) == 0x80) continue;
    if (cp++ == want) {
      size_t e = i + 1;
      while (e < sv->n && ((unsigned char)sv->s[e] & 0xC0) == 0x80) e++;
      return jv_str(E->r, sv->s + i, e - i);
    }
  }
  return jv_undef(E->r);
}

static jv *builtin_property(ev *E, const jv *obj, const char *name, size_t n) {
  static const struct {
    const char *name;
    jfn_kind fn;
  } str_methods[] = {{"upper", F_STR_UPPER},           {"lower", F_STR_LOWER},
                     {"strip", F_STR_STRIP},           {"title", F_STR_TITLE},
                     {"capitalize", F_STR_CAPITALIZE}, {"rstrip", F_STR_RSTRIP},
                     {"lstrip", F_STR_LSTRIP},         {"startswith", F_STR_STARTSWITH},
                     {"endswith", F_STR_ENDSWITH},     {"split", F_STR_SPLIT},
                     {"replace", F_STR_REPLACE}},
    obj_methods[] = {
        {"get", F_OBJ_GET}, {"items", F_OBJ_ITEMS}, {"keys", F_OBJ_KEYS}, {"values", F_OBJ_VALUES}};
  bool is_len = n == 6 && memcmp(name, "length", 6) == 0;
  if (obj->kind == JV_STR) {
    if (is_len) return jv_num(E->r, JV_INT, (double)utf16_length(obj->s, obj->n));
    for (size_t i = 0; i < sizeof str_methods / sizeof str_methods[0]; i++)
      if (strlen(str_methods[i].name) == n && memcmp(str_methods[i].name, name, n) == 0)
        return jv_func(E->r, str_methods[i].fn, obj);
  } else if (obj->kind == JV_ARRAY) {
    if (is_len) return jv_num(E->r, JV_INT, (double)obj->arr.n);
  } else if (obj->kind == JV_OBJECT) {
    for (size_t i = 0; i < sizeof obj_methods / sizeof obj_methods[0]; i++)
      if (strlen(obj_methods[i].name) == n && memcmp(obj_methods[i].name, name, n) == 0)
        return jv_func(E->r, obj_methods[i].fn, obj);
  }
  return jv_undef(E->r);
}

static bool slice_bound(ev *E, jscope *s, const jnode *x, bool *has, double *v) {
  *has = false;
  if (!x) return true;
  jv *b = eval(E, s, x);
  if (!b) return false;
  if (b->kind == JV_UNDEF) return true;
  if (b->kind != JV_INT) {
    fail(E, "slice bounds must be integers", x);
    return false;
  }
  *has = true;
  *v = b->num;
  return true;
}

/* Python/JavaScript slice indices over `len` items: positions into *idx. */
static bool slice_positions(ev *E, size_t len, bool hs, double start, bool he, double stop, bool hp,
                            double step, size_t **idx, size_t *count) {
  if (!hp) step = 1;
  if (step == 0) {
    fail(E, "slice step cannot be zero", NULL);
    return false;
  }
  double L = (double)len;
  if (step > 0) {
    start = !hs ? 0 : start < 0 ? fmax(L + start, 0) : fmin(start, L);
    stop = !he ? L : stop < 0 ? fmax(L + stop, 0) : fmin(stop, L);
  } else {
    start = !hs ? L - 1 : start < 0 ? fmax(L + start, -1) : fmin(start, L - 1);
    stop = !he ? -1 : stop < -1 ? fmax(L + stop, -1) : fmin(stop, L - 1);
  }
  double dir = step > 0 ? 1 : -1;
  size_t n = 0;
  *idx = jarena_alloc(&E->r->arena, (len + 1) * sizeof **idx);
  if (!*idx) {
    jfail(E->r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", E->r->arena.cap);
    return false;
  }
  for (double i = start; dir * i < dir * stop && n <= len; i += step) (*idx)[n++] = (size_t)i;
  *count = n;
  return true;
}

static jv *eval_slice(ev *E, jscope *s, const jv *obj, const jnode *sl) {
  if (obj->kind != JV_ARRAY && obj->kind != JV_STR)
    return fail(E, "only lists and strings can be sliced", sl);
  bool hs, he, hp;
  double a = 0, b = 0, c = 0;
  if (!slice_bound(E, s, sl->a, &hs, &a) || !slice_bound(E, s, sl->b, &he, &b) ||
      !slice_bound(E, s, sl->c, &hp, &c))
    return NULL;
  if (obj->kind == JV_ARRAY) {
    size_t *idx, n;
    if (!slice_positions(E, obj->arr.n, hs, a, he, b, hp, c, &idx, &n)) return NULL;
    jv *res = jv_new(E->r, JV_ARRAY);
    for (size_t i = 0; res && i < n; i++)
      if (!jv_push(E->r, res, obj->arr.v[idx[i]])) return NULL;
    return res;
  }
  /* strings slice by code point */
  size_t ncp = 0;
  for (size_t i = 0; i < obj->n; i++)
    if (((unsigned char)obj->s[i] & 0xC0) != 0x80) ncp++;
  size_t *starts = jarena_alloc(&E->r->arena, (ncp + 1) * sizeof *starts);
  if (!starts) return fail(E, "out of memory", sl);
  for (size_t i = 0, k = 0; i < obj->n; i++)
    if (((unsigned char)obj->s[i] & 0xC0) != 0x80) starts[k++] = i;
  starts[ncp] = obj->n;
  size_t *idx, n;
  if (!slice_positions(E, ncp, hs, a, he, b, hp, c, &idx, &n)) return NULL;
  jbuf buf = scratch(E);
  for (size_t i = 0; i < n; i++) {
    size_t k = idx[i];
    if (!emit(E, &buf, obj->s + starts[k], starts[k + 1] - starts[k])) {
      free(buf.p);
      return NULL;
    }
  }
  return str_of(E, &buf);
}

static jv *eval_member(ev *E, jscope *s, const jnode *x) {
  jv *obj = eval(E, s, x->a);
  if (!obj) return NULL;
  jv *prop;
  if (x->flag && x->b->kind == N_SLICE) return eval_slice(E, s, obj, x->b);
  if (x->flag)
    prop = eval(E, s, x->b);
  else if (x->b->kind == N_INT)
    prop = jv_num(E->r, JV_INT, x->b->num);
  else
    prop = jv_str(E->r, x->b->s, x->b->n);
  if (!prop) return NULL;
  if (obj->kind == JV_OBJECT || obj->kind == JV_NAMESPACE) {
    if (prop->kind != JV_STR) return fail(E, "a dict key must be a string", x);
    jv *v = jmap_get(&obj->map, prop->s, prop->n);
    return v ? v : builtin_property(E, obj, prop->s, prop->n);
  }
  if (obj->kind == JV_ARRAY || obj->kind == JV_STR) {
    if (prop->kind == JV_INT) {
      if (obj->kind == JV_STR) return str_index(E, obj, prop->num);
      double k = prop->num < 0 ? (double)obj->arr.n + prop->num : prop->num;
      if (!(k >= 0 && k < (double)obj->arr.n)) return jv_undef(E->r); /* NaN too */
      return obj->arr.v[(size_t)k];
    }
    if (prop->kind == JV_STR) return builtin_property(E, obj, prop->s, prop->n);
    return fail(E, "a list index must be an integer", x);
  }
  if (prop->kind != JV_STR) return fail(E, "an attribute name must be a string", x);
  return jv_undef(E->r);
}

/* ---- calls ------------------------------------------------------------------------------ */
static bool eval_args(ev *E, jscope *s, const jlist *items, jargs *a) {
  memset(a, 0, sizeof *a);
  a->pos = jarena_alloc(&E->r->arena, (items->n + 1) * sizeof *a->pos);
  if (!a->pos) {
    jfail(E->r, AT_ERR_LIMIT, "the template used more than %zu bytes of memory", E->r->arena.cap);
    return false;
  }
  for (size_t i = 0; i < items->n; i++) {
    const jnode *it = items->v[i];
    if (it->kind == N_KWARG) continue;
    if (!(a->pos[a->npos++] = eval(E, s, it))) return false;
  }
  for (size_t i = 0; i < items->n; i++) {
    const jnode *it = items->v[i];
    if (it->kind != N_KWARG) continue;
    if (jmap_get(&a->kw, it->s, it->n)) {
      fail(E, "a keyword argument is given twice", it);
      return false;
    }
    if (!jmap_set(E->r, &a->kw, it->s, it->n, eval(E, s, it->a))) return false;
  }
  return true;
}

static jv *call_macro(ev *E, jscope *caller, const jv *fn, jargs *a) {
  const jnode *m = fn->macro;
  if (++E->r->depth > JINJA_MAX_CALLS) {
    jfail(E->r, AT_ERR_LIMIT, "macros call each other deeper than %d levels", JINJA_MAX_CALLS);
    return NULL;
  }
  jscope *ms = scope_new(E->r, fn->closure ? fn->closure : caller);
  if (!ms) return NULL;
  if (a->npos > m->items.n) return fail(E, "a macro got more arguments than it takes", m);
  const jnode *pending[64];
  size_t np = 0;
  size_t kw_used = 0;
  for (size_t i = 0; i < m->items.n; i++) {
    const jnode *p = m->items.v[i];
    jv *v = i < a->npos ? a->pos[i] : NULL;
    if (!v && (v = jmap_get(&a->kw, p->s, p->n)) != NULL) kw_used++;
    if (!v && p->kind == N_KWARG && np < 64) pending[np++] = p;
    if (!jmap_set(E->r, &ms->vars, p->s, p->n, v ? v : jv_undef(E->r))) return NULL;
  }
  if (kw_used < a->kw.n) return fail(E, "a macro got a keyword argument it does not take", m);
  for (size_t i = 0; i < np; i++)
    if (!jmap_set(E->r, &ms->vars, pending[i]->s, pending[i]->n, eval(E, ms, pending[i]->a)))
      return NULL;
  jbuf out = scratch(E);
  ev inner = {E->r, CTL_NONE, 0};
  bool ok = exec_block(&inner, ms, &m->body, &out);
  E->r->depth--;
  if (!ok) {
    free(out.p);
    return NULL;
  }
  return str_of(E, &out);
}

static jv *eval_call(ev *E, jscope *s, const jnode *x) {
  jargs a;
  if (!eval_args(E, s, &x->items, &a)) return NULL;
  jv *fn = eval(E, s, x->a);
  if (!fn) return NULL;
  if (fn->kind != JV_FUNC) {
    char msg[96];
    snprintf(msg, sizeof msg, "cannot call a value of type %s", jv_type_name(fn));
    return fail(E, msg, x);
  }
  if (fn->fn == F_MACRO) return call_macro(E, s, fn, &a);
  return jinja_call_builtin(E->r, fn, &a);
}

static jv *eval_filter(ev *E, jscope *s, const jnode *x) {
  jv *operand = eval(E, s, x->a);
  if (!operand) return NULL;
  const jnode *f = x->b;
  if (f->kind == N_IDENT) return jinja_filter(E->r, operand, f->s, f->n, NULL, NULL);
  if (f->a->kind != N_IDENT) return fail(E, "a filter must be a name", f);
  jargs a;
  if (!eval_args(E, s, &f->items, &a)) return NULL;
  return jinja_filter(E->r, operand, f->a->s, f->a->n, &a, f);
}

static jv *eval_collection(ev *E, jscope *s, const jnode *x) {
  jv *v = jv_new(E->r, x->kind == N_OBJECT ? JV_OBJECT : JV_ARRAY);
  if (!v) return NULL;
  v->tuple = x->kind == N_TUPLE;
  if (x->kind != N_OBJECT) {
    for (size_t i = 0; i < x->items.n; i++)
      if (!jv_push(E->r, v, eval(E, s, x->items.v[i]))) return NULL;
    return v;
  }
  for (size_t i = 0; i + 1 < x->items.n; i += 2) {
    jv *k = eval(E, s, x->items.v[i]);
    if (!k) return NULL;
    if (k->kind != JV_STR) return fail(E, "dict keys must be strings", x->items.v[i]);
    if (!jmap_set(E->r, &v->map, k->s, k->n, eval(E, s, x->items.v[i + 1]))) return NULL;
  }
  return v;
}

static jv *eval(ev *E, jscope *s, const jnode *x) {
  if (E->r->err.st) return NULL;
  E->r->at_off = x->off;
  switch (x->kind) {
    case N_STR: return jv_str(E->r, x->s, x->n);
    case N_INT: return jv_num(E->r, JV_INT, x->num);
    case N_FLOAT: return jv_num(E->r, JV_FLOAT, x->num);
    case N_IDENT: return lookup(E, s, x->s, x->n);
    case N_ARRAY:
    case N_TUPLE:
    case N_OBJECT: return eval_collection(E, s, x);
    case N_MEMBER: return eval_member(E, s, x);
    case N_CALL: return eval_call(E, s, x);
    case N_UNARY: return unop(E, s, x);
    case N_BINARY: return binop(E, s, x);
    case N_FILTER: return eval_filter(E, s, x);
    case N_TEST: {
      jv *v = eval(E, s, x->a);
      bool ok;
      if (!v || !jinja_test(E->r, v, x->s, x->n, NULL, &ok)) return NULL;
      return jv_bool(E->r, x->flag ? !ok : ok);
    }
    case N_SELECT: {
      jv *t = eval(E, s, x->b);
      if (!t) return NULL;
      return jv_truthy(t) ? eval(E, s, x->a) : jv_undef(E->r);
    }
    case N_TERNARY: {
      jv *c = eval(E, s, x->a);
      if (!c) return NULL;
      return eval(E, s, jv_truthy(c) ? x->b : x->c);
    }
    default: return fail(E, "a statement where an expression was expected", x);
  }
}

/* ---- statements ------------------------------------------------------------------------- */
static bool assign(ev *E, jscope *s, const jnode *target, jv *v) {
  if (target->kind == N_IDENT) return jmap_set(E->r, &s->vars, target->s, target->n, v);
  if (target->kind == N_TUPLE) {
    if (v->kind != JV_ARRAY) return fail(E, "cannot unpack a non-list", target);
    if (v->arr.n != target->items.n)
      return fail(
          E, v->arr.n < target->items.n ? "too few items to unpack" : "too many items to unpack",
          target);
    for (size_t i = 0; i < target->items.n; i++) {
      const jnode *t = target->items.v[i];
      if (t->kind != N_IDENT) return fail(E, "can only unpack into names", t);
      if (!jmap_set(E->r, &s->vars, t->s, t->n, v->arr.v[i])) return false;
    }
    return true;
  }
  /* ns.attr = v */
  jv *obj = eval(E, s, target->a);
  if (!obj) return false;
  if (obj->kind != JV_NAMESPACE)
    return fail(E, "cannot assign an attribute of a non-namespace", target);
  if (target->flag || target->b->kind != N_IDENT)
    return fail(E, "namespace attributes are assigned as ns.name", target);
  return jmap_set(E->r, &obj->map, target->b->s, target->b->n, v);
}

static bool exec_set(ev *E, jscope *s, const jnode *x) {
  jv *v;
  if (x->b) {
    v = eval(E, s, x->b);
  } else {
    jbuf buf = scratch(E);
    if (!exec_block(E, s, &x->body, &buf)) {
      free(buf.p);
      return false;
    }
    v = str_of(E, &buf);
  }
  return v && assign(E, s, x->a, v);
}

static bool count_iteration(ev *E) {
  if (++E->r->iterations <= JINJA_MAX_ITERATIONS) return true;
  jfail(E->r, AT_ERR_LIMIT, "more than %d loop iterations", JINJA_MAX_ITERATIONS);
  return false;
}

static jv *loop_object(ev *E, jv **items, size_t n, size_t i) {
  jrender *r = E->r;
  jv *o = jv_new(r, JV_OBJECT);
  if (!o) return NULL;
  jmap *m = &o->map;
  m->want = 9;
  bool ok = jmap_set(r, m, "index", 5, jv_num(r, JV_INT, (double)(i + 1))) &&
            jmap_set(r, m, "index0", 6, jv_num(r, JV_INT, (double)i)) &&
            jmap_set(r, m, "revindex", 8, jv_num(r, JV_INT, (double)(n - i))) &&
            jmap_set(r, m, "revindex0", 9, jv_num(r, JV_INT, (double)(n - i - 1))) &&
            jmap_set(r, m, "first", 5, jv_bool(r, i == 0)) &&
            jmap_set(r, m, "last", 4, jv_bool(r, i == n - 1)) &&
            jmap_set(r, m, "length", 6, jv_num(r, JV_INT, (double)n)) &&
            jmap_set(r, m, "previtem", 8, i > 0 ? items[i - 1] : jv_undef(r)) &&
            jmap_set(r, m, "nextitem", 8, i + 1 < n ? items[i + 1] : jv_undef(r));
  return ok ? o : NULL;
}

static bool check_target(ev *E, const jnode *target, const jv *item) {
  if (target->kind != N_TUPLE) return true;
  if (item->kind != JV_ARRAY || item->tuple)
    return fail(E, "cannot unpack a non-list loop item", target);
  if (item->arr.n != target->items.n)
    return fail(
        E, item->arr.n < target->items.n ? "too few items to unpack" : "too many items to unpack",
        target);
  return true;
}

static bool exec_for(ev *E, jscope *s, const jnode *x, jbuf *out) {
  jscope *scope = scope_new(E->r, s);
  if (!scope) return false;
  jv *it = eval(E, scope, x->b);
  if (!it) return false;
  jv *list = it;
  if (it->kind == JV_OBJECT) {
    list = jv_new(E->r, JV_ARRAY);
    for (size_t i = 0; list && i < it->map.n; i++)
      if (!jv_push(E->r, list, jv_str(E->r, it->map.keys[i], it->map.klens[i]))) return false;
    if (!list) return false;
  } else if (it->kind != JV_ARRAY) {
    char msg[96];
    snprintf(msg, sizeof msg, "cannot loop over a value of type %s", jv_type_name(it));
    return fail(E, msg, x);
  }
  jv **items = jarena_alloc(&E->r->arena, (list->arr.n + 1) * sizeof *items);
  if (!items) return fail(E, "out of memory", x);
  size_t n = 0;
  for (size_t i = 0; i < list->arr.n; i++) {
    jv *cur = list->arr.v[i];
    if (!count_iteration(E) || !check_target(E, x->a, cur)) return false;
    if (x->c) {
      jscope *ls = scope_new(E->r, scope);
      if (!ls || !assign(E, ls, x->a, cur)) return false;
      jv *t = eval(E, ls, x->c);
      if (!t) return false;
      if (!jv_truthy(t)) continue;
    }
    items[n++] = cur;
  }
  bool none = true;
  E->loops++;
  for (size_t i = 0; i < n; i++) {
    if (!count_iteration(E)) return false;
    jv *loop = loop_object(E, items, n, i);
    if (!loop || !jmap_set(E->r, &scope->vars, "loop", 4, loop) ||
        !assign(E, scope, x->a, items[i]))
      return false;
    size_t mark = out->n;
    if (!exec_block(E, scope, &x->body, out)) return false;
    if (E->ctl != CTL_NONE) {
      ctl c = E->ctl;
      E->ctl = CTL_NONE;
      out->n = mark; /* @huggingface/jinja drops the interrupted iteration's output */
      if (out->p) out->p[mark] = '\0';
      if (c == CTL_BREAK) break;
      continue;
    }
    none = false;
  }
  E->loops--;
  if (none) return exec_block(E, scope, &x->alt, out);
  return true;
}

/* {% call %}: the macro runs with `caller` bound to the block (whose own
 * variables are those where the block stands). */
static bool exec_call_block(ev *E, jscope *s, const jnode *x, jbuf *out) {
  jv *callerfn = jv_func(E->r, F_MACRO, NULL);
  if (!callerfn) return false;
  callerfn->macro = x;
  callerfn->closure = s;
  jargs a;
  if (!eval_args(E, s, &x->a->items, &a)) return false;
  jv *fn = eval(E, s, x->a->a);
  if (!fn) return false;
  if (fn->kind != JV_FUNC) {
    fail(E, "{% call %} of something that is not a macro", x);
    return false;
  }
  jscope *cs = scope_new(E->r, s);
  if (!cs || !jmap_set(E->r, &cs->vars, "caller", 6, callerfn)) return false;
  jv *v = fn->fn == F_MACRO ? call_macro(E, cs, fn, &a) : jinja_call_builtin(E->r, fn, &a);
  if (!v) return false;
  if (v->kind == JV_NULL || v->kind == JV_UNDEF) return true;
  return jv_print(E->r, out, v, 0);
}

static bool exec_node(ev *E, jscope *s, const jnode *x, jbuf *out) {
  E->r->at_off = x->off;
  switch (x->kind) {
    case S_TEXT: return x->s ? emit(E, out, x->s, x->n) : true;
    case S_IF: {
      jv *t = eval(E, s, x->a);
      if (!t) return false;
      return exec_block(E, s, jv_truthy(t) ? &x->body : &x->alt, out);
    }
    case S_FOR: return exec_for(E, s, x, out);
    case S_CALL: return exec_call_block(E, s, x, out);
    case S_SET: return exec_set(E, s, x);
    case S_MACRO: {
      jv *fn = jv_func(E->r, F_MACRO, NULL);
      if (!fn) return false;
      fn->macro = x;
      return jmap_set(E->r, &s->vars, x->s, x->n, fn);
    }
    case S_BREAK:
    case S_CONTINUE:
      if (E->loops == 0) return fail(E, "break or continue outside a loop", x);
      E->ctl = x->kind == S_BREAK ? CTL_BREAK : CTL_CONTINUE;
      return true;
    default: {
      jv *v = eval(E, s, x);
      if (!v) return false;
      if (v->kind == JV_NULL || v->kind == JV_UNDEF) return true;
      return jv_print(E->r, out, v, 0);
    }
  }
}

static bool exec_block(ev *E, jscope *s, const jlist *body, jbuf *out) {
  for (size_t i = 0; i < body->n; i++) {
    if (!exec_node(E, s, body->v[i], out)) return false;
    if (E->ctl != CTL_NONE) return true;
  }
  return true;
}

bool jinja_render(jrender *r, const jlist *program, jv *ctx, jbuf *out) {
  static const char *const reserved[] = {"false", "true",         "none", "raise_exception",
                                         "range", "strftime_now", "True", "False",
                                         "None",  "namespace"};
  jscope *g = scope_new(r, NULL);
  if (!g) return false;
  for (size_t i = 0; i < ctx->map.n; i++)
    for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
      if (ctx->map.klens[i] == strlen(reserved[k]) &&
          memcmp(ctx->map.keys[i], reserved[k], ctx->map.klens[i]) == 0) {
        jfail(r, AT_ERR_INVALID_ARG, "the context may not set the built-in '%s'", reserved[k]);
        return false;
      }
  bool ok = jmap_set(r, &g->vars, "false", 5, jv_bool(r, false)) &&
            jmap_set(r, &g->vars, "true", 4, jv_bool(r, true)) &&
            jmap_set(r, &g->vars, "none", 4, jv_null(r)) &&
            jmap_set(r, &g->vars, "raise_exception", 15, jv_func(r, F_RAISE, NULL)) &&
            jmap_set(r, &g->vars, "range", 5, jv_func(r, F_RANGE, NULL)) &&
            jmap_set(r, &g->vars, "strftime_now", 12, jv_func(r, F_STRFTIME, NULL)) &&
            jmap_set(r, &g->vars, "True", 4, jv_bool(r, true)) &&
            jmap_set(r, &g->vars, "False", 5, jv_bool(r, false)) &&
            jmap_set(r, &g->vars, "None", 4, jv_null(r));
  for (size_t i = 0; ok && i < ctx->map.n; i++)
    ok = jmap_set(r, &g->vars, ctx->map.keys[i], ctx->map.klens[i], ctx->map.vals[i]);
  if (!ok) return false;
  ev E = {r, CTL_NONE, 0};
  return exec_block(&E, g, program, out) && r->err.st == AT_OK;
}
