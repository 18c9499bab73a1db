/* src/chat/jinja_lex.c — template source to tokens.
 *
 * Byte-identity with @huggingface/jinja starts here, so this follows its
 * lexer's rules: the source is first preprocessed as transformers does
 * (one trailing "\n" dropped; lstrip_blocks: spaces and tabs before "{%",
 * "{#" or "{-" at the start of a line removed; trim_blocks: the newline right
 * after "%}", "#}" or "-}" removed; {% generation %} / {% endgeneration %}
 * markers removed), then scanned: text runs between tags, "{%-"/"{{-" strip
 * the whitespace before them, "-%}"/"-}}" the whitespace after, comments are
 * tokens of their own. Whitespace is JavaScript's \s (Unicode spaces
 * included); identifiers are ASCII \w. Every token keeps the byte offset of
 * its start in the original source (through an offset map kept across the
 * preprocessing) so that errors name line:column of what the author wrote.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

void jinja_linecol(const char *src, size_t len, size_t off, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < off && i < len; i++) {
    if (src[i] == '\n') {
      l++;
      c = 1;
    } else if (((unsigned char)src[i] & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col = c;
}

void jinja_fail_at(jerror *err, const char *src, size_t len, size_t off, const char *fmt,
                   va_list ap) {
  int line, col;
  jinja_linecol(src, len, off, &line, &col);
  char msg[400];
  vsnprintf(msg, sizeof msg, fmt, ap);
  err->st = AT_ERR_PARSE;
  snprintf(err->msg, sizeof err->msg, "line %d:%d: %s", line, col, msg);
}

/* The preprocessed text with, for each byte, its offset in the original. */
typedef struct pp {
  char *s;
  size_t *off;
  size_t n;
} pp;

static bool pp_init(pp *p, size_t cap) {
  p->s = malloc(cap + 1);
  p->off = malloc((cap + 1) * sizeof *p->off);
  p->n = 0;
  return p->s && p->off;
}

static void pp_free(pp *p) {
  free(p->s);
  free(p->off);
}

static void pp_emit(pp *p, char c, size_t off) {
  p->s[p->n] = c;
  p->off[p->n++] = off;
}

size_t js_space_at(const char *s, size_t n, size_t p) {
  if (p >= n) return 0;
  unsigned char c = (unsigned char)s[p];
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  if (c == 0xC2 && p + 1 < n && (unsigned char)s[p + 1] == 0xA0) return 2;
  if (c == 0xEF && p + 2 < n && (unsigned char)s[p + 1] == 0xBB && (unsigned char)s[p + 2] == 0xBF)
    return 3; /* U+FEFF */
  if (c == 0xE1 && p + 2 < n && (unsigned char)s[p + 1] == 0x9A && (unsigned char)s[p + 2] == 0x80)
    return 3; /* U+1680 */
  if (c == 0xE3 && p + 2 < n && (unsigned char)s[p + 1] == 0x80 && (unsigned char)s[p + 2] == 0x80)
    return 3; /* U+3000 */
  if (c == 0xE2 && p + 2 < n) {
    unsigned char c1 = (unsigned char)s[p + 1], c2 = (unsigned char)s[p + 2];
    if (c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF))
      return 3;                             /* U+2000..200A, 2028, 2029, 202F */
    if (c1 == 0x81 && c2 == 0x9F) return 3; /* U+205F */
  }
  return 0;
}

size_t js_space_before(const char *s, size_t end) {
  if (end >= 1 && js_space_at(s, end, end - 1) == 1) return 1;
  if (end >= 2 && js_space_at(s, end, end - 2) == 2) return 2;
  if (end >= 3 && js_space_at(s, end, end - 3) == 3) return 3;
  return 0;
}

static bool is_line_start(const pp *p, size_t i) {
  if (i == 0) return true;
  char c = p->s[i - 1];
  if (c == '\n' || c == '\r') return true;
  return i >= 3 && (unsigned char)p->s[i - 3] == 0xE2 && (unsigned char)p->s[i - 2] == 0x80 &&
         ((unsigned char)c == 0xA8 || (unsigned char)c == 0xA9);
}

/* lstrip_blocks: ^[ \t]*({[#%-]) -> $1, multiline. */
static void pp_lstrip(const pp *in, pp *out) {
  size_t i = 0;
  while (i < in->n) {
    if (is_line_start(in, i)) {
      size_t j = i;
      while (j < in->n && (in->s[j] == ' ' || in->s[j] == '\t')) j++;
      if (j + 1 < in->n && in->s[j] == '{' && strchr("#%-", in->s[j + 1]) && in->s[j + 1]) {
        pp_emit(out, in->s[j], in->off[j]);
        pp_emit(out, in->s[j + 1], in->off[j + 1]);
        i = j + 2;
        continue;
      }
    }
    pp_emit(out, in->s[i], in->off[i]);
    i++;
  }
}

/* trim_blocks: ([#%-]})\n -> $1. */
static void pp_trim(const pp *in, pp *out) {
  size_t i = 0;
  while (i < in->n) {
    if (i + 2 < in->n && in->s[i] && strchr("#%-", in->s[i]) && in->s[i + 1] == '}' &&
        in->s[i + 2] == '\n') {
      pp_emit(out, in->s[i], in->off[i]);
      pp_emit(out, in->s[i + 1], in->off[i + 1]);
      i += 3;
      continue;
    }
    pp_emit(out, in->s[i], in->off[i]);
    i++;
  }
}

static size_t skip_space(const pp *p, size_t i) {
  size_t k;
  while ((k = js_space_at(p->s, p->n, i)) > 0) i += k;
  return i;
}

/* If a {%-? (end)?generation -?%} marker starts at i: its end, and whether it
 * strips before/after. */
static size_t generation_tag(const pp *p, size_t i, bool *lstrip, bool *rstrip) {
  if (i + 1 >= p->n || p->s[i] != '{' || p->s[i + 1] != '%') return 0;
  size_t j = i + 2;
  *lstrip = j < p->n && p->s[j] == '-';
  if (*lstrip) j++;
  j = skip_space(p, j);
  if (j + 3 <= p->n && memcmp(p->s + j, "end", 3) == 0) j += 3;
  if (j + 10 > p->n || memcmp(p->s + j, "generation", 10) != 0) return 0;
  j = skip_space(p, j + 10);
  *rstrip = j < p->n && p->s[j] == '-';
  if (*rstrip) j++;
  if (j + 2 > p->n || p->s[j] != '%' || p->s[j + 1] != '}') return 0;
  return j + 2;
}

static void pp_generation(const pp *in, pp *out) {
  size_t i = 0, floor = 0; /* out may not be trimmed below `floor` */
  while (i < in->n) {
    bool ls = false, rs = false;
    size_t end = generation_tag(in, i, &ls, &rs);
    if (end == 0) {
      pp_emit(out, in->s[i], in->off[i]);
      i++;
      continue;
    }
    if (ls) {
      size_t k;
      while (out->n > floor && (k = js_space_before(out->s, out->n)) > 0 && out->n - k >= floor)
        out->n -= k;
    }
    i = end;
    if (rs) i = skip_space(in, i);
    floor = out->n;
  }
}

/* ---- the scanner ------------------------------------------------------------ */
typedef struct lexer {
  jarena *a;
  const pp *p;
  size_t pos;
  jtoken *toks;
  size_t n, cap;
  int curly;
  jerror *err;
  const char *src;
  size_t srclen;
} lexer;

static bool lfail(lexer *L, size_t at, const char *fmt, ...) AT_PRINTF(3, 4);
static bool lfail(lexer *L, size_t at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jinja_fail_at(L->err, L->src, L->srclen, at < L->p->n ? L->p->off[at] : L->srclen, fmt, ap);
  va_end(ap);
  return false;
}

static bool push(lexer *L, jtok_kind k, const char *s, size_t n, size_t at) {
  if (L->n == L->cap) {
    size_t nc = L->cap ? L->cap * 2 : 64;
    jtoken *nt = jarena_alloc(L->a, nc * sizeof *nt);
    if (!nt) return lfail(L, at, "out of memory");
    if (L->n) memcpy(nt, L->toks, L->n * sizeof *nt);
    L->toks = nt;
    L->cap = nc;
  }
  char *copy = jarena_strdup(L->a, s, n);
  if (!copy) return lfail(L, at, "out of memory");
  L->toks[L->n++] = (jtoken){k, copy, n, at < L->p->n ? L->p->off[at] : L->srclen};
  return true;
}

static jtok_kind last_kind(const lexer *L) {
  return L->n ? L->toks[L->n - 1].kind : (jtok_kind)-1;
}

static bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

static void strip_trailing_text(lexer *L) {
  if (!L->n || L->toks[L->n - 1].kind != T_TEXT) return;
  jtoken *t = &L->toks[L->n - 1];
  size_t k;
  while (t->n > 0 && (k = js_space_before(t->s, t->n)) > 0) t->n -= k;
  if (t->n == 0) L->n--;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  o[0] = (char)(0xE0 | (cp >> 12));
  o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[2] = (char)(0x80 | (cp & 0x3F));
  return 3;
}

/* A string literal starting at the quote; escapes as in @huggingface/jinja. */
static bool lex_string(lexer *L) {
  const pp *p = L->p;
  size_t start = L->pos;
  char q = p->s[L->pos++];
  char *buf = malloc(p->n - L->pos + 1);
  size_t bn = 0;
  if (!buf) return lfail(L, start, "out of memory");
  bool ok = true;
  while (ok) {
    if (L->pos >= p->n) {
      ok = lfail(L, start, "unterminated string literal");
      break;
    }
    char c = p->s[L->pos];
    if (c == q) break;
    if (c == '\\') {
      if (++L->pos >= p->n) {
        ok = lfail(L, start, "unterminated string literal");
        break;
      }
      char e = p->s[L->pos++];
      if (e == 'x' || e == 'u') {
        size_t len = e == 'x' ? 2 : 4;
        unsigned cp = 0;
        for (size_t k = 0; k < len; k++) {
          int h = L->pos + k < p->n ? hexval(p->s[L->pos + k]) : -1;
          if (h < 0) {
            ok = lfail(L, L->pos - 2, "invalid \\%c escape", e);
            break;
          }
          cp = cp * 16 + (unsigned)h;
        }
        if (!ok) break;
        L->pos += len;
        bn += put_utf8(buf + bn, cp);
        continue;
      }
      const char *from = "ntrbfv'\"\\", *to = "\n\t\r\b\f\v'\"\\";
      const char *hit = e ? strchr(from, e) : NULL;
      if (!hit) {
        ok = lfail(L, L->pos - 2, "unknown escape \\%c in a string literal", e);
        break;
      }
      buf[bn++] = to[hit - from];
      continue;
    }
    buf[bn++] = c;
    L->pos++;
  }
  if (ok) {
    L->pos++; /* the closing quote */
    ok = push(L, T_STRING, buf, bn, start);
  }
  free(buf);
  return ok;
}

static size_t digits(const pp *p, size_t i) {
  while (i < p->n && is_digit(p->s[i])) i++;
  return i;
}

static const struct {
  const char *seq;
  jtok_kind kind;
} TABLE[] = {
    {"{%", T_OPEN_STMT}, {"%}", T_CLOSE_STMT}, {"{{", T_OPEN_EXPR}, {"}}", T_CLOSE_EXPR},
    {"(", T_LPAREN},     {")", T_RPAREN},      {"{", T_LBRACE},     {"}", T_RBRACE},
    {"[", T_LBRACKET},   {"]", T_RBRACKET},    {",", T_COMMA},      {".", T_DOT},
    {":", T_COLON},      {"|", T_PIPE},        {"<=", T_CMP},       {">=", T_CMP},
    {"==", T_CMP},       {"!=", T_CMP},        {"<", T_CMP},        {">", T_CMP},
    {"+", T_ADD},        {"-", T_ADD},         {"~", T_ADD},        {"**", T_POW},
    {"*", T_MUL},        {"//", T_MUL},        {"/", T_MUL},        {"%", T_MUL},
    {"=", T_EQUALS},
};

static bool starts(const pp *p, size_t i, const char *s) {
  size_t n = strlen(s);
  return i + n <= p->n && memcmp(p->s + i, s, n) == 0;
}

/* One step inside a tag (after text and comments are handled). */
static bool lex_in_tag(lexer *L) {
  const pp *p = L->p;
  size_t at = L->pos;
  char c = p->s[at];
  if (c == '-' || c == '+') {
    jtok_kind lk = last_kind(L);
    if (lk == T_TEXT || L->n == 0) return lfail(L, at, "unexpected character '%c'", c);
    if (lk != T_IDENT && lk != T_NUMBER && lk != T_STRING && lk != T_RPAREN && lk != T_RBRACKET) {
      size_t e = digits(p, at + 1);
      if (e > at + 1 && e + 1 < p->n && p->s[e] == '.' && is_digit(p->s[e + 1]))
        e = digits(p, e + 1);
      L->pos = e;
      return push(L, e > at + 1 ? T_NUMBER : T_UNARY, p->s + at, e - at, at);
    }
  }
  for (size_t k = 0; k < sizeof TABLE / sizeof TABLE[0]; k++) {
    if (TABLE[k].kind == T_CLOSE_EXPR && L->curly > 0) continue;
    if (!starts(p, at, TABLE[k].seq)) continue;
    if (TABLE[k].kind == T_OPEN_EXPR) L->curly = 0;
    if (TABLE[k].kind == T_LBRACE) L->curly++;
    if (TABLE[k].kind == T_RBRACE) L->curly--;
    L->pos += strlen(TABLE[k].seq);
    return push(L, TABLE[k].kind, TABLE[k].seq, strlen(TABLE[k].seq), at);
  }
  if (c == '\'' || c == '"') return lex_string(L);
  if (is_digit(c)) {
    size_t e = digits(p, at);
    if (last_kind(L) != T_DOT && e + 1 < p->n && p->s[e] == '.' && is_digit(p->s[e + 1]))
      e = digits(p, e + 1);
    L->pos = e;
    return push(L, T_NUMBER, p->s + at, e - at, at);
  }
  if (is_word(c)) {
    size_t e = at;
    while (e < p->n && is_word(p->s[e])) e++;
    L->pos = e;
    return push(L, T_IDENT, p->s + at, e - at, at);
  }
  if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
    return lfail(L, at, "unexpected byte 0x%02x", (unsigned char)c);
  return lfail(L, at, "unexpected character '%c'", c);
}

static bool lex_comment(lexer *L) {
  const pp *p = L->p;
  size_t at = L->pos;
  L->pos += 2;
  bool strip_before = L->pos < p->n && p->s[L->pos] == '-';
  if (strip_before) L->pos++;
  size_t cs = L->pos;
  while (!(L->pos + 1 < p->n && p->s[L->pos] == '#' && p->s[L->pos + 1] == '}')) {
    if (L->pos + 2 >= p->n) return lfail(L, at, "comment is not closed with #}");
    L->pos++;
  }
  size_t ce = L->pos;
  bool strip_after = ce > cs && p->s[ce - 1] == '-';
  if (strip_before) strip_trailing_text(L);
  if (!push(L, T_COMMENT, "", 0, at)) return false;
  L->pos += 2;
  if (strip_after) L->pos = skip_space(p, L->pos);
  return true;
}

static bool lex_all(lexer *L) {
  const pp *p = L->p;
  while (L->pos < p->n) {
    jtok_kind lk = last_kind(L);
    if (L->n == 0 || lk == T_CLOSE_STMT || lk == T_CLOSE_EXPR || lk == T_COMMENT) {
      size_t s = L->pos;
      while (L->pos < p->n &&
             !(p->s[L->pos] == '{' && L->pos + 1 < p->n &&
               (p->s[L->pos + 1] == '%' || p->s[L->pos + 1] == '{' || p->s[L->pos + 1] == '#')))
        L->pos++;
      if (L->pos > s) {
        if (!push(L, T_TEXT, p->s + s, L->pos - s, s)) return false;
        continue;
      }
    }
    if (starts(p, L->pos, "{#")) {
      if (!lex_comment(L)) return false;
      continue;
    }
    if (starts(p, L->pos, "{%-") || starts(p, L->pos, "{{-")) {
      bool stmt = p->s[L->pos + 1] == '%';
      strip_trailing_text(L);
      if (!push(L, stmt ? T_OPEN_STMT : T_OPEN_EXPR, stmt ? "{%" : "{{", 2, L->pos)) return false;
      if (!stmt) L->curly = 0;
      L->pos += 3;
      continue;
    }
    L->pos = skip_space(p, L->pos);
    if (L->pos >= p->n) return lfail(L, L->pos, "unexpected end of template inside a tag");
    if (starts(p, L->pos, "-%}") || starts(p, L->pos, "-}}")) {
      bool stmt = p->s[L->pos + 1] == '%';
      if (!push(L, stmt ? T_CLOSE_STMT : T_CLOSE_EXPR, stmt ? "%}" : "}}", 2, L->pos)) return false;
      L->pos = skip_space(p, L->pos + 3);
      continue;
    }
    if (!lex_in_tag(L)) return false;
  }
  return true;
}

bool jinja_lex(jarena *a, const char *src, size_t len, jtoken **toks, size_t *ntoks, jerror *err) {
  pp p0 = {0}, p1 = {0}, p2 = {0}, p3 = {0};
  bool ok = pp_init(&p0, len) && pp_init(&p1, len) && pp_init(&p2, len) && pp_init(&p3, len);
  if (ok) {
    for (size_t i = 0; i < len; i++) pp_emit(&p0, src[i], i);
    if (p0.n && p0.s[p0.n - 1] == '\n') p0.n--;
    pp_lstrip(&p0, &p1);
    pp_trim(&p1, &p2);
    pp_generation(&p2, &p3);
    p3.s[p3.n] = '\0';
    p3.off[p3.n] = len;
    lexer L = {.a = a, .p = &p3, .err = err, .src = src, .srclen = len};
    ok = lex_all(&L);
    *toks = L.toks;
    *ntoks = L.n;
  } else {
    err->st = AT_ERR_NOMEM;
    snprintf(err->msg, sizeof err->msg, "out of memory");
  }
  pp_free(&p0);
  pp_free(&p1);
  pp_free(&p2);
  pp_free(&p3);
  return ok;
}
