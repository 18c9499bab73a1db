/* src/chat/jinja_parse.c — tokens to an AST (recursive descent).
 *
 * The grammar and its precedence are @huggingface/jinja's, lowest first:
 * `a if c else b` (without else: a "select", undefined when c is false),
 * or, and, not, comparisons and in / not in, + - ~, * / // %, **, `is` tests,
 * `|` filters, unary sign, calls / member access / subscripts and slices,
 * primaries (literals, names, (tuples), [lists], {dicts}). Statements: if /
 * elif / else, for (tuple targets, `if` filter, else), set (names, tuples,
 * ns.attr, block set), macro, call blocks, break, continue. {% filter %},
 * {% include %} and the like, argument unpacking (*args, **kwargs) and
 * unknown tags are refused with a line:column error.
 *
 * Depth: every recursive entry counts against JINJA_MAX_DEPTH so that a
 * hostile template cannot overflow the stack.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct parser {
  jarena *a;
  const jtoken *t;
  size_t n, i;
  int depth;
  jerror *err;
  const char *src;
  size_t srclen;
  bool failed;
} parser;

static void *pfail(parser *P, size_t off, const char *fmt, ...) AT_PRINTF(3, 4);
static void *pfail(parser *P, size_t off, const char *fmt, ...) {
  if (P->failed) return NULL;
  P->failed = true;
  va_list ap;
  va_start(ap, fmt);
  jinja_fail_at(P->err, P->src, P->srclen, off, fmt, ap);
  va_end(ap);
  return NULL;
}

static size_t here(const parser *P) {
  return P->i < P->n ? P->t[P->i].off : P->srclen;
}

static bool is(const parser *P, jtok_kind k) {
  return P->i < P->n && P->t[P->i].kind == k;
}

static bool is_kw(const parser *P, size_t at, const char *w) {
  return at < P->n && P->t[at].kind == T_IDENT && P->t[at].n == strlen(w) &&
         memcmp(P->t[at].s, w, P->t[at].n) == 0;
}

static bool tok_is(const jtoken *t, const char *s) {
  return t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}

/* {% name ... where name is one of the NULL-terminated list */
static bool is_stmt(const parser *P, const char *const *names) {
  if (!is(P, T_OPEN_STMT)) return false;
  for (; *names; names++)
    if (is_kw(P, P->i + 1, *names)) return true;
  return false;
}

static const char *kind_name(jtok_kind k) {
  static const char *names[] = {
      "text", "number",   "string",   "name", "'='",        "'('",  "')'",    "'{%'", "'%}'",
      "'{{'", "'}}'",     "'['",      "']'",  "'{'",        "'}'",  "','",    "'.'",  "':'",
      "'|'",  "operator", "operator", "'**'", "comparison", "sign", "comment"};
  return names[k];
}

static bool expect(parser *P, jtok_kind k, const char *what) {
  if (is(P, k)) {
    P->i++;
    return true;
  }
  if (P->i >= P->n) return pfail(P, P->srclen, "unexpected end of template, expected %s", what);
  pfail(P, here(P), "expected %s, found %s", what, kind_name(P->t[P->i].kind));
  return false;
}

static jnode *node(parser *P, jnode_kind k, size_t off) {
  jnode *x = jarena_alloc(P->a, sizeof *x);
  if (!x) return pfail(P, off, "out of memory");
  x->kind = k;
  x->off = off;
  return x;
}

/* A growable list built in malloc'd memory and copied into the arena. */
typedef struct vec {
  jnode **v;
  size_t n, cap;
} vec;

static bool vpush(parser *P, vec *v, jnode *x) {
  if (!x) return false;
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 8;
    jnode **nv = realloc(v->v, nc * sizeof *nv);
    if (!nv) return pfail(P, here(P), "out of memory");
    v->v = nv;
    v->cap = nc;
  }
  v->v[v->n++] = x;
  return true;
}

static bool vfinish(parser *P, vec *v, jlist *out) {
  out->n = v->n;
  out->v = NULL;
  if (v->n) {
    out->v = jarena_alloc(P->a, v->n * sizeof *out->v);
    if (out->v) memcpy(out->v, v->v, v->n * sizeof *out->v);
  }
  free(v->v);
  v->v = NULL;
  if (v->n && !out->v) return pfail(P, here(P), "out of memory");
  return !P->failed;
}

static bool enter(parser *P) {
  if (++P->depth > JINJA_MAX_DEPTH) {
    pfail(P, here(P), "nested too deeply (more than %d levels)", JINJA_MAX_DEPTH);
    return false;
  }
  return true;
}

static jnode *parse_expr(parser *P);
static jnode *parse_primary(parser *P);
static jnode *parse_any(parser *P);

/* ---- expressions -------------------------------------------------------------- */
static jnode *parse_sequence(parser *P, bool primary) {
  size_t off = here(P);
  jnode *first = primary ? parse_primary(P) : parse_expr(P);
  if (!first || !is(P, T_COMMA)) return first;
  vec v = {0};
  vpush(P, &v, first);
  while (is(P, T_COMMA) && !P->failed) {
    P->i++;
    if (!vpush(P, &v, primary ? parse_primary(P) : parse_expr(P))) break;
  }
  jnode *t = node(P, N_TUPLE, off);
  if (!t) {
    free(v.v);
    return NULL;
  }
  return vfinish(P, &v, &t->items) ? t : NULL;
}

/* Arguments of a call (mode_params: a macro's parameter list). */
static bool parse_args(parser *P, jlist *out, bool mode_params) {
  if (!expect(P, T_LPAREN, "'('")) return false;
  vec v = {0};
  bool saw_kw = false;
  while (!is(P, T_RPAREN) && !P->failed) {
    if (P->i >= P->n) {
      pfail(P, P->srclen, "unexpected end of template in an argument list");
      break;
    }
    if (is(P, T_POW) || (is(P, T_MUL) && tok_is(&P->t[P->i], "*"))) {
      pfail(P, here(P), "argument unpacking (* and **) is not supported");
      break;
    }
    size_t off = here(P);
    jnode *arg = parse_expr(P);
    if (!arg) break;
    if (is(P, T_EQUALS)) {
      P->i++;
      if (arg->kind != N_IDENT) {
        pfail(P, off, "expected a name before '='");
        break;
      }
      jnode *kw = node(P, N_KWARG, off);
      if (!kw) break;
      kw->s = arg->s;
      kw->n = arg->n;
      kw->a = parse_expr(P);
      if (!kw->a) break;
      arg = kw;
      saw_kw = true;
    } else if (saw_kw) {
      pfail(P, off,
            mode_params ? "a parameter without default follows one with a default"
                        : "a positional argument follows a keyword argument");
      break;
    }
    if (mode_params && arg->kind != N_IDENT && arg->kind != N_KWARG) {
      pfail(P, off, "expected a parameter name");
      break;
    }
    if (mode_params && v.n >= 64) {
      pfail(P, off, "a macro takes at most 64 parameters");
      break;
    }
    if (mode_params) {
      for (size_t k = 0; k < v.n; k++)
        if (v.v[k]->n == arg->n && memcmp(v.v[k]->s, arg->s, arg->n) == 0) {
          pfail(P, off, "duplicate parameter '%.*s'", (int)arg->n, arg->s);
          break;
        }
    }
    if (!vpush(P, &v, arg)) break;
    if (is(P, T_COMMA)) P->i++;
  }
  if (P->failed) {
    free(v.v);
    return false;
  }
  P->i++; /* ')' */
  return vfinish(P, &v, out);
}

static jnode *parse_subscript(parser *P, size_t off) {
  jnode *parts[3] = {NULL, NULL, NULL};
  size_t np = 0;
  bool slice = false;
  while (!is(P, T_RBRACKET)) {
    if (P->i >= P->n) return pfail(P, P->srclen, "unexpected end of template in a subscript");
    if (np == 3) return pfail(P, here(P), "a slice takes at most 3 parts");
    if (is(P, T_COLON)) {
      parts[np++] = NULL;
      P->i++;
      slice = true;
    } else {
      parts[np] = parse_expr(P);
      if (!parts[np++]) return NULL;
      if (is(P, T_COLON)) {
        P->i++;
        slice = true;
      }
    }
  }
  if (np == 0) return pfail(P, off, "empty subscript []");
  if (!slice) return parts[0];
  jnode *s = node(P, N_SLICE, off);
  if (!s) return NULL;
  s->a = parts[0];
  s->b = parts[1];
  s->c = parts[2];
  return s;
}

static jnode *parse_member(parser *P, jnode *obj) {
  while (obj && (is(P, T_DOT) || is(P, T_LBRACKET))) {
    size_t off = here(P);
    bool computed = is(P, T_LBRACKET);
    P->i++;
    jnode *m = node(P, N_MEMBER, off);
    if (!m) return NULL;
    m->a = obj;
    m->flag = computed;
    if (computed) {
      m->b = parse_subscript(P, off);
      if (!m->b || !expect(P, T_RBRACKET, "']'")) return NULL;
    } else {
      m->b = parse_primary(P);
      if (!m->b) return NULL;
      if (m->b->kind != N_IDENT && m->b->kind != N_INT)
        return pfail(P, m->b->off, "expected a name or an integer after '.'");
    }
    obj = m;
  }
  return obj;
}

static jnode *parse_call(parser *P, jnode *callee) {
  if (!enter(P)) return NULL;
  jnode *c = node(P, N_CALL, here(P));
  if (!c) return NULL;
  c->a = callee;
  if (!parse_args(P, &c->items, false)) return NULL;
  jnode *e = parse_member(P, c);
  if (e && is(P, T_LPAREN)) e = parse_call(P, e);
  P->depth--;
  return e;
}

static jnode *parse_call_member(parser *P) {
  jnode *m = parse_member(P, parse_primary(P));
  if (m && is(P, T_LPAREN)) return parse_call(P, m);
  return m;
}

static jnode *parse_unary_sign(parser *P) {
  if (!enter(P)) return NULL;
  jnode *r;
  if ((is(P, T_UNARY) || is(P, T_ADD)) && (tok_is(&P->t[P->i], "-") || tok_is(&P->t[P->i], "+"))) {
    r = node(P, N_UNARY, here(P));
    if (!r) return NULL;
    r->op = P->t[P->i].s[0] == '-' ? OP_NEG : OP_POS;
    P->i++;
    r->a = parse_unary_sign(P);
    if (!r->a) return NULL;
  } else {
    r = parse_call_member(P);
  }
  P->depth--;
  return r;
}

static jnode *parse_filter(parser *P) {
  jnode *operand = parse_unary_sign(P);
  while (operand && is(P, T_PIPE)) {
    size_t off = here(P);
    P->i++;
    jnode *f = parse_primary(P);
    if (!f) return NULL;
    if (f->kind != N_IDENT) return pfail(P, f->off, "expected a filter name after '|'");
    if (is(P, T_LPAREN)) f = parse_call(P, f);
    if (!f) return NULL;
    jnode *x = node(P, N_FILTER, off);
    if (!x) return NULL;
    x->a = operand;
    x->b = f;
    operand = x;
  }
  return operand;
}

static jnode *parse_test(parser *P) {
  jnode *operand = parse_filter(P);
  while (operand && is_kw(P, P->i, "is")) {
    size_t off = here(P);
    P->i++;
    bool neg = is_kw(P, P->i, "not");
    if (neg) P->i++;
    jnode *t = parse_primary(P);
    if (!t) return NULL;
    if (t->kind != N_IDENT) return pfail(P, t->off, "expected a test name after 'is'");
    jnode *x = node(P, N_TEST, off);
    if (!x) return NULL;
    x->a = operand;
    x->s = t->s;
    x->n = t->n;
    x->flag = neg;
    operand = x;
  }
  return operand;
}

static jnode *binary(parser *P, jop op, size_t off, jnode *l, jnode *r) {
  if (!l || !r) return NULL;
  jnode *x = node(P, N_BINARY, off);
  if (!x) return NULL;
  x->op = op;
  x->a = l;
  x->b = r;
  return x;
}

static jop op_of(const jtoken *t) {
  static const struct {
    const char *s;
    jop op;
  } ops[] = {{"+", OP_ADD},       {"-", OP_SUB}, {"~", OP_CONCAT}, {"*", OP_MUL}, {"/", OP_DIV},
             {"//", OP_FLOORDIV}, {"%", OP_MOD}, {"**", OP_POW},   {"==", OP_EQ}, {"!=", OP_NE},
             {"<", OP_LT},        {">", OP_GT},  {"<=", OP_LE},    {">=", OP_GE}};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    if (tok_is(t, ops[k].s)) return ops[k].op;
  return OP_NONE;
}

static jnode *parse_power(parser *P) {
  jnode *l = parse_test(P);
  while (l && is(P, T_POW)) {
    size_t off = here(P);
    P->i++;
    l = binary(P, OP_POW, off, l, parse_test(P));
  }
  return l;
}

static jnode *parse_mul(parser *P) {
  jnode *l = parse_power(P);
  while (l && is(P, T_MUL)) {
    size_t off = here(P);
    jop op = op_of(&P->t[P->i++]);
    l = binary(P, op, off, l, parse_power(P));
  }
  return l;
}

static jnode *parse_add(parser *P) {
  jnode *l = parse_mul(P);
  while (l && is(P, T_ADD)) {
    size_t off = here(P);
    jop op = op_of(&P->t[P->i++]);
    l = binary(P, op, off, l, parse_mul(P));
  }
  return l;
}

static jnode *parse_compare(parser *P) {
  jnode *l = parse_add(P);
  while (l) {
    size_t off = here(P);
    jop op;
    if (is_kw(P, P->i, "not") && is_kw(P, P->i + 1, "in")) {
      op = OP_NOT_IN;
      P->i += 2;
    } else if (is_kw(P, P->i, "in")) {
      op = OP_IN;
      P->i++;
    } else if (is(P, T_CMP)) {
      op = op_of(&P->t[P->i++]);
    } else {
      break;
    }
    l = binary(P, op, off, l, parse_add(P));
  }
  return l;
}

static jnode *parse_not(parser *P) {
  if (!is_kw(P, P->i, "not")) return parse_compare(P);
  if (!enter(P)) return NULL;
  jnode *x = node(P, N_UNARY, here(P));
  if (!x) return NULL;
  P->i++;
  x->op = OP_NOT;
  x->a = parse_not(P);
  P->depth--;
  return x->a ? x : NULL;
}

static jnode *parse_and(parser *P) {
  jnode *l = parse_not(P);
  while (l && is_kw(P, P->i, "and")) {
    size_t off = here(P);
    P->i++;
    l = binary(P, OP_AND, off, l, parse_not(P));
  }
  return l;
}

static jnode *parse_or(parser *P) {
  jnode *l = parse_and(P);
  while (l && is_kw(P, P->i, "or")) {
    size_t off = here(P);
    P->i++;
    l = binary(P, OP_OR, off, l, parse_and(P));
  }
  return l;
}

static jnode *parse_expr(parser *P) {
  if (!enter(P)) return NULL;
  jnode *a = parse_or(P);
  if (a && is_kw(P, P->i, "if")) {
    size_t off = here(P);
    P->i++;
    jnode *test = parse_or(P);
    if (!test) return NULL;
    if (is_kw(P, P->i, "else")) {
      P->i++;
      jnode *x = node(P, N_TERNARY, off);
      if (!x) return NULL;
      x->a = test;
      x->b = a;
      x->c = parse_expr(P);
      a = x->c ? x : NULL;
    } else {
      jnode *x = node(P, N_SELECT, off);
      if (!x) return NULL;
      x->a = a;
      x->b = test;
      a = x;
    }
  }
  P->depth--;
  return a;
}

static jnode *parse_number(parser *P, const jtoken *t) {
  jnode *x = node(P, N_INT, t->off);
  if (!x) return NULL;
  char buf[64];
  size_t n = t->n < sizeof buf - 1 ? t->n : sizeof buf - 1;
  memcpy(buf, t->s, n);
  buf[n] = '\0';
  x->num = strtod(buf, NULL);
  if (memchr(t->s, '.', t->n)) x->kind = N_FLOAT;
  return x;
}

static jnode *parse_collection(parser *P, const jtoken *t, bool dict) {
  jnode *x = node(P, dict ? N_OBJECT : N_ARRAY, t->off);
  if (!x) return NULL;
  vec v = {0};
  jtok_kind close = dict ? T_RBRACE : T_RBRACKET;
  while (!is(P, close) && !P->failed) {
    if (P->i >= P->n) {
      pfail(P, t->off, "%s is not closed", dict ? "'{'" : "'['");
      break;
    }
    if (!vpush(P, &v, parse_expr(P))) break;
    if (dict) {
      if (!expect(P, T_COLON, "':' between a key and its value")) break;
      if (!vpush(P, &v, parse_expr(P))) break;
    }
    if (is(P, T_COMMA)) P->i++;
  }
  if (P->failed) {
    free(v.v);
    return NULL;
  }
  P->i++;
  return vfinish(P, &v, &x->items) ? x : NULL;
}

static jnode *parse_primary(parser *P) {
  if (P->i >= P->n)
    return pfail(P, P->srclen, "unexpected end of template, expected an expression");
  if (!enter(P)) return NULL;
  const jtoken *t = &P->t[P->i++];
  jnode *x = NULL;
  switch (t->kind) {
    case T_NUMBER: x = parse_number(P, t); break;
    case T_STRING: {
      size_t total = t->n, j = P->i;
      while (j < P->n && P->t[j].kind == T_STRING) total += P->t[j++].n;
      x = node(P, N_STR, t->off);
      char *s = jarena_alloc(P->a, total + 1);
      if (!x || !s) return pfail(P, t->off, "out of memory");
      memcpy(s, t->s, t->n);
      size_t at = t->n;
      while (is(P, T_STRING)) {
        memcpy(s + at, P->t[P->i].s, P->t[P->i].n);
        at += P->t[P->i++].n;
      }
      x->s = s;
      x->n = total;
      break;
    }
    case T_IDENT:
      x = node(P, N_IDENT, t->off);
      if (x) {
        x->s = t->s;
        x->n = t->n;
      }
      break;
    case T_LPAREN:
      x = parse_sequence(P, false);
      if (x && !expect(P, T_RPAREN, "')'")) x = NULL;
      break;
    case T_LBRACKET: x = parse_collection(P, t, false); break;
    case T_LBRACE: x = parse_collection(P, t, true); break;
    default: return pfail(P, t->off, "unexpected %s in an expression", kind_name(t->kind));
  }
  P->depth--;
  return x;
}

/* ---- statements ------------------------------------------------------------------- */
/* Parse statements until {% one-of-stop %}; leaves P at that '{%'. */
static bool parse_block(parser *P, const char *const *stop, jlist *out, size_t open_off,
                        const char *what) {
  vec v = {0};
  while (!is_stmt(P, stop) && !P->failed) {
    if (P->i >= P->n) {
      pfail(P, open_off, "%s is not closed (expected {%% %s %%})", what, stop[0]);
      break;
    }
    if (!vpush(P, &v, parse_any(P))) break;
  }
  if (P->failed) {
    free(v.v);
    return false;
  }
  return vfinish(P, &v, out);
}

static bool end_tag(parser *P, const char *name) {
  if (!expect(P, T_OPEN_STMT, "'{%'")) return false;
  if (!is_kw(P, P->i, name)) return pfail(P, here(P), "expected %s", name);
  P->i++;
  return expect(P, T_CLOSE_STMT, "'%}'");
}

static jnode *parse_if(parser *P, size_t off) {
  if (!enter(P)) return NULL;
  jnode *x = node(P, S_IF, off);
  if (!x) return NULL;
  x->a = parse_expr(P);
  if (!x->a || !expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
  static const char *const stops[] = {"endif", "elif", "else", NULL};
  if (!parse_block(P, stops, &x->body, off, "{% if %}")) return NULL;
  if (is_kw(P, P->i + 1, "elif")) {
    size_t eoff = P->t[P->i].off;
    P->i += 2;
    jnode *e = parse_if(P, eoff);
    if (!e) return NULL;
    x->alt.v = jarena_alloc(P->a, sizeof(jnode *));
    if (!x->alt.v) return pfail(P, eoff, "out of memory");
    x->alt.v[0] = e;
    x->alt.n = 1;
  } else if (is_kw(P, P->i + 1, "else")) {
    P->i += 2;
    if (!expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
    static const char *const endif[] = {"endif", NULL};
    if (!parse_block(P, endif, &x->alt, off, "{% if %}")) return NULL;
  }
  P->depth--;
  return x;
}

static jnode *parse_for(parser *P, size_t off) {
  jnode *x = node(P, S_FOR, off);
  if (!x) return NULL;
  x->a = parse_sequence(P, true);
  if (!x->a) return NULL;
  if (x->a->kind != N_IDENT && x->a->kind != N_TUPLE)
    return pfail(P, x->a->off, "expected a name or names after 'for'");
  if (!is_kw(P, P->i, "in")) return pfail(P, here(P), "expected 'in' after the loop variable");
  P->i++;
  jnode *it = parse_expr(P);
  if (!it) return NULL;
  if (it->kind == N_SELECT) {
    x->b = it->a;
    x->c = it->b;
  } else {
    x->b = it;
  }
  if (!expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
  static const char *const stops[] = {"endfor", "else", NULL};
  if (!parse_block(P, stops, &x->body, off, "{% for %}")) return NULL;
  if (is_kw(P, P->i + 1, "else")) {
    P->i += 2;
    if (!expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
    static const char *const endfor[] = {"endfor", NULL};
    if (!parse_block(P, endfor, &x->alt, off, "{% for %}")) return NULL;
  }
  return end_tag(P, "endfor") ? x : NULL;
}

static jnode *parse_set(parser *P, size_t off) {
  jnode *x = node(P, S_SET, off);
  if (!x) return NULL;
  x->a = parse_sequence(P, false);
  if (!x->a) return NULL;
  if (x->a->kind != N_IDENT && x->a->kind != N_TUPLE && x->a->kind != N_MEMBER)
    return pfail(P, x->a->off, "cannot assign to this expression");
  if (is(P, T_EQUALS)) {
    P->i++;
    x->b = parse_sequence(P, false);
    if (!x->b) return NULL;
  } else {
    if (!expect(P, T_CLOSE_STMT, "'=' or '%}'")) return NULL;
    static const char *const stops[] = {"endset", NULL};
    if (!parse_block(P, stops, &x->body, off, "{% set %}")) return NULL;
    P->i += 2;
  }
  return expect(P, T_CLOSE_STMT, "'%}'") ? x : NULL;
}

static jnode *parse_macro(parser *P, size_t off) {
  jnode *x = node(P, S_MACRO, off);
  if (!x) return NULL;
  jnode *name = parse_primary(P);
  if (!name) return NULL;
  if (name->kind != N_IDENT) return pfail(P, name->off, "expected a macro name");
  x->s = name->s;
  x->n = name->n;
  if (!parse_args(P, &x->items, true) || !expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
  static const char *const stops[] = {"endmacro", NULL};
  if (!parse_block(P, stops, &x->body, off, "{% macro %}")) return NULL;
  return end_tag(P, "endmacro") ? x : NULL;
}

/* {% call [(params)] macro(args) %}body{% endcall %}: body becomes caller(). */
static jnode *parse_call_block(parser *P, size_t off) {
  jnode *x = node(P, S_CALL, off);
  if (!x) return NULL;
  if (is(P, T_LPAREN) && !parse_args(P, &x->items, true)) return NULL;
  jnode *callee = parse_primary(P);
  if (!callee) return NULL;
  if (callee->kind != N_IDENT) return pfail(P, callee->off, "expected a macro name after 'call'");
  x->a = node(P, N_CALL, here(P));
  if (!x->a) return NULL;
  x->a->a = callee;
  if (!parse_args(P, &x->a->items, false) || !expect(P, T_CLOSE_STMT, "'%}'")) return NULL;
  static const char *const stops[] = {"endcall", NULL};
  if (!parse_block(P, stops, &x->body, off, "{% call %}")) return NULL;
  return end_tag(P, "endcall") ? x : NULL;
}

static jnode *parse_statement(parser *P) {
  size_t off = here(P);
  P->i++; /* {% */
  if (!is(P, T_IDENT)) {
    if (P->i >= P->n) return pfail(P, off, "unexpected end of template after '{%%'");
    return pfail(P, here(P), "expected a statement name after '{%%'");
  }
  const jtoken *t = &P->t[P->i++];
  jnode *x = NULL;
  if (tok_is(t, "if")) {
    x = parse_if(P, off);
    if (x && !end_tag(P, "endif")) x = NULL;
  } else if (tok_is(t, "for")) {
    x = parse_for(P, off);
  } else if (tok_is(t, "set")) {
    x = parse_set(P, off);
  } else if (tok_is(t, "macro")) {
    x = parse_macro(P, off);
  } else if (tok_is(t, "break") || tok_is(t, "continue")) {
    x = node(P, tok_is(t, "break") ? S_BREAK : S_CONTINUE, off);
    if (x && !expect(P, T_CLOSE_STMT, "'%}'")) x = NULL;
  } else if (tok_is(t, "call")) {
    x = parse_call_block(P, off);
  } else if (tok_is(t, "filter") || tok_is(t, "include") || tok_is(t, "import") ||
             tok_is(t, "extends") || tok_is(t, "block") || tok_is(t, "raw") || tok_is(t, "with")) {
    return pfail(P, t->off, "{%% %.*s %%} is not supported by anytime's chat templates", (int)t->n,
                 t->s);
  } else {
    return pfail(P, t->off, "unknown or misplaced statement '%.*s'", (int)t->n, t->s);
  }
  return x;
}

static jnode *parse_any(parser *P) {
  if (!enter(P)) return NULL;
  const jtoken *t = &P->t[P->i];
  jnode *x = NULL;
  switch (t->kind) {
    case T_COMMENT:
      P->i++;
      x = node(P, S_TEXT, t->off); /* renders nothing */
      break;
    case T_TEXT:
      P->i++;
      x = node(P, S_TEXT, t->off);
      if (x) {
        x->s = t->s;
        x->n = t->n;
      }
      break;
    case T_OPEN_STMT: x = parse_statement(P); break;
    case T_OPEN_EXPR:
      P->i++;
      x = parse_expr(P);
      if (x && !expect(P, T_CLOSE_EXPR, "'}}'")) x = NULL;
      break;
    default: return pfail(P, t->off, "unexpected %s", kind_name(t->kind));
  }
  P->depth--;
  return x;
}

bool jinja_parse(jarena *a, const jtoken *toks, size_t ntoks, const char *src, size_t srclen,
                 jlist *program, jerror *err) {
  parser P = {.a = a, .t = toks, .n = ntoks, .err = err, .src = src, .srclen = srclen};
  vec v = {0};
  while (P.i < P.n && !P.failed)
    if (!vpush(&P, &v, parse_any(&P))) break;
  if (P.failed) {
    free(v.v);
    return false;
  }
  return vfinish(&P, &v, program);
}
