/* src/chat/jinja.h — the internal interface of the chat-template engine: a
 * small Jinja subset (the part Hugging Face chat templates use) that renders
 * byte-identically to @huggingface/jinja, the implementation transformers.js
 * and the Hub use (docs/chat_templates.md lists the subset).
 *
 * Pipeline: jinja_lex.c turns the source into tokens (after the same
 * preprocessing @huggingface/jinja does: lstrip_blocks, trim_blocks, one
 * trailing newline dropped), jinja_parse.c builds an AST whose nodes live in
 * the template's arena, jinja_eval.c walks it over values (jinja_value.c)
 * allocated from a per-render arena, and chat_template.c is the public API.
 *
 * Ownership: a compiled template (jtemplate) owns its arena; the AST is never
 * written after compile, so any number of threads may render it at once,
 * each render with its own jrender state and arena. Nothing here recurses
 * without a depth bound: the parser counts nesting (JINJA_MAX_DEPTH) and the
 * evaluator counts calls and value nesting.
 */
#ifndef ANYTIME_CHAT_JINJA_H
#define ANYTIME_CHAT_JINJA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#define JINJA_MAX_DEPTH 128          /* parser nesting (expressions and blocks) */
#define JINJA_MAX_CALLS 32           /* macro calls in progress at once */
#define JINJA_MAX_VALUE_DEPTH 256    /* nesting of values (tojson, printing) */
#define JINJA_MAX_ITERATIONS 1000000 /* loop iterations in one render */
#define JINJA_MAX_SOURCE ((size_t)1 << 20)

/* ---- arena ---------------------------------------------------------------- */
typedef struct jchunk jchunk;
typedef struct jarena {
  jchunk *head;
  size_t total; /* bytes handed out so far */
  size_t cap;   /* 0 = unbounded */
} jarena;

void jarena_init(jarena *a, size_t cap);
void jarena_free(jarena *a);
/* Zeroed, 16-byte aligned; NULL when the cap is reached or malloc fails. */
void *jarena_alloc(jarena *a, size_t n);
char *jarena_strdup(jarena *a, const char *s, size_t n);

/* ---- growable byte buffer (malloc'd) ---------------------------------------- */
typedef struct jbuf {
  char *p;
  size_t n, cap, limit; /* limit: most bytes it may hold */
} jbuf;
/* false when the limit would be passed or memory runs out. */
bool jbuf_put(jbuf *b, const char *s, size_t n);
bool jbuf_putc(jbuf *b, char c);

/* ---- tokens ----------------------------------------------------------------- */
typedef enum jtok_kind {
  T_TEXT,
  T_NUMBER,
  T_STRING,
  T_IDENT,
  T_EQUALS,
  T_LPAREN,
  T_RPAREN,
  T_OPEN_STMT,
  T_CLOSE_STMT,
  T_OPEN_EXPR,
  T_CLOSE_EXPR,
  T_LBRACKET,
  T_RBRACKET,
  T_LBRACE,
  T_RBRACE,
  T_COMMA,
  T_DOT,
  T_COLON,
  T_PIPE,
  T_ADD,
  T_MUL,
  T_POW,
  T_CMP,
  T_UNARY,
  T_COMMENT
} jtok_kind;

typedef struct jtoken {
  jtok_kind kind;
  const char *s; /* text (string literals unescaped); in the lexer's arena */
  size_t n;
  size_t off; /* byte offset in the ORIGINAL source, for line:column */
} jtoken;

typedef struct jerror {
  at_status st;
  char msg[512];
} jerror;

/* Tokenize `src` into *toks (arena). On a syntax error fills err
 * (AT_ERR_PARSE, "line L:C: ..."). */
bool jinja_lex(jarena *a, const char *src, size_t len, jtoken **toks, size_t *ntoks, jerror *err);
/* "line L:C" of byte offset `off` in src. */
void jinja_linecol(const char *src, size_t len, size_t off, int *line, int *col);
/* Fill err with AT_ERR_PARSE and "line L:C: <fmt ...>" for byte offset
 * `off` of src: the lexer's and the parser's one error format. */
void jinja_fail_at(jerror *err, const char *src, size_t len, size_t off, const char *fmt,
                   va_list ap) AT_PRINTF(5, 0);

/* ---- AST ---------------------------------------------------------------------- */
typedef enum jnode_kind {
  /* expressions */
  N_STR,
  N_INT,
  N_FLOAT,
  N_IDENT,
  N_ARRAY,
  N_TUPLE,
  N_OBJECT,
  N_MEMBER,
  N_SLICE,
  N_CALL,
  N_KWARG,
  N_UNARY,
  N_BINARY,
  N_FILTER,
  N_TEST,
  N_SELECT,
  N_TERNARY,
  /* statements */
  S_TEXT,
  S_IF,
  S_FOR,
  S_SET,
  S_MACRO,
  S_CALL,
  S_BREAK,
  S_CONTINUE
} jnode_kind;

typedef enum jop {
  OP_NONE,
  OP_OR,
  OP_AND,
  OP_NOT,
  OP_IN,
  OP_NOT_IN,
  OP_EQ,
  OP_NE,
  OP_LT,
  OP_GT,
  OP_LE,
  OP_GE,
  OP_ADD,
  OP_SUB,
  OP_CONCAT,
  OP_MUL,
  OP_DIV,
  OP_FLOORDIV,
  OP_MOD,
  OP_POW,
  OP_NEG,
  OP_POS
} jop;

typedef struct jnode jnode;
typedef struct jlist {
  jnode **v;
  size_t n;
} jlist;

/* One node shape for everything; which fields mean what, by kind:
 *   N_STR/S_TEXT s,n   N_INT/N_FLOAT num   N_IDENT s,n
 *   N_ARRAY/N_TUPLE items   N_OBJECT items (key, value, key, value ...)
 *   N_MEMBER a=object b=property flag=computed   N_SLICE a,b,c (NULL = absent)
 *   N_CALL a=callee items=args   N_KWARG s,n=name a=value
 *   N_UNARY op a   N_BINARY op a b   N_FILTER a=operand b=filter (IDENT/CALL)
 *   N_TEST a=operand s,n=test flag=negated   N_SELECT a=value b=test
 *   N_TERNARY a=cond b=then c=else
 *   S_IF a=test body alt   S_FOR a=target b=iterable c=filter test body alt
 *   S_SET a=target b=value (NULL: block set, body)   S_MACRO s,n items=params body
 *   S_CALL a=the N_CALL of the macro items=caller's params body=caller's body */
struct jnode {
  jnode_kind kind;
  jop op;
  int flag;
  size_t off;
  const char *s;
  size_t n;
  double num;
  jnode *a, *b, *c;
  jlist items, body, alt;
};

/* Parse tokens into a program (a list of statements/expressions). */
bool jinja_parse(jarena *a, const jtoken *toks, size_t ntoks, const char *src, size_t srclen,
                 jlist *program, jerror *err);

/* ---- values --------------------------------------------------------------------- */
typedef enum jv_kind {
  JV_UNDEF,
  JV_NULL,
  JV_BOOL,
  JV_INT,
  JV_FLOAT,
  JV_STR,
  JV_ARRAY,
  JV_OBJECT,
  JV_NAMESPACE,
  JV_FUNC
} jv_kind;

typedef struct jv jv;
/* Insertion-ordered map. From 16 keys on it also keeps an open-addressing
 * index (slots hold position + 1), so big context objects stay O(1). */
typedef struct jmap {
  const char **keys;
  size_t *klens;
  jv **vals;
  size_t n, cap;
  size_t *slots;
  size_t nslots; /* 0 or a power of two >= 2 n */
  size_t want;   /* first capacity when known (0: 4) */
} jmap;

typedef enum jfn_kind {
  F_RAISE,
  F_RANGE,
  F_STRFTIME,
  F_NAMESPACE,
  F_MACRO,
  F_STR_UPPER,
  F_STR_LOWER,
  F_STR_STRIP,
  F_STR_TITLE,
  F_STR_CAPITALIZE,
  F_STR_RSTRIP,
  F_STR_LSTRIP,
  F_STR_STARTSWITH,
  F_STR_ENDSWITH,
  F_STR_SPLIT,
  F_STR_REPLACE,
  F_OBJ_GET,
  F_OBJ_ITEMS,
  F_OBJ_KEYS,
  F_OBJ_VALUES
} jfn_kind;

struct jv {
  jv_kind kind;
  bool tuple; /* JV_ARRAY built from a tuple literal */
  bool b;
  double num; /* JV_INT and JV_FLOAT: numbers are JavaScript doubles */
  const char *s;
  size_t n;
  struct {
    jv **v;
    size_t n, cap;
  } arr;
  jmap map; /* JV_OBJECT, JV_NAMESPACE */
  jfn_kind fn;
  const jv *self;         /* a method's receiver */
  const jnode *macro;     /* F_MACRO: an S_MACRO, or the S_CALL of a caller() */
  struct jscope *closure; /* caller(): the scope of its {% call %} */
};

typedef struct jrender jrender;

jv *jv_new(jrender *r, jv_kind k);
jv *jv_str(jrender *r, const char *s, size_t n);
jv *jv_num(jrender *r, jv_kind k, double d);
jv *jv_bool(jrender *r, bool b);
jv *jv_undef(jrender *r);
jv *jv_null(jrender *r);
jv *jv_func(jrender *r, jfn_kind fn, const jv *self);
bool jv_push(jrender *r, jv *arr, jv *item);
jv *jmap_get(const jmap *m, const char *k, size_t n);
bool jmap_set(jrender *r, jmap *m, const char *k, size_t n, jv *v);
/* The JSON context as values (jansson), object key order as JavaScript has it. */
jv *jv_from_json(jrender *r, const void *json_t_ptr, int depth);

bool jv_truthy(const jv *v);
/* RuntimeValue.toString(): what {{ v }} prints. */
bool jv_print(jrender *r, jbuf *out, const jv *v, int depth);
/* The raw JavaScript value's String(): what `~`, `+` and join use. */
bool jv_raw(jrender *r, jbuf *out, const jv *v, int depth);
/* How tojson spells: indent <= 0 for none; ascii: \uXXXX for non-ASCII;
 * undef_null: undefined prints as null (else "undefined", as printing does);
 * item_sep/key_sep: NULL for the defaults ("," or ", " by indent, and ": "). */
typedef struct jjson_fmt {
  int indent;
  bool ascii, undef_null;
  const jv *item_sep, *key_sep; /* JV_STR or NULL */
} jjson_fmt;
bool jv_json(jrender *r, jbuf *out, const jv *v, const jjson_fmt *f, int depth);
/* JavaScript's Number.prototype.toString for d. */
void js_number(char *buf, size_t cap, double d);
bool jv_loose_eq(jrender *r, const jv *a, const jv *b);
bool jv_strict_eq(const jv *a, const jv *b);
const char *jv_type_name(const jv *v);

/* JavaScript's \s at byte p (UTF-8): length of the whitespace char, or 0. */
size_t js_space_at(const char *s, size_t n, size_t p);
/* Length of JavaScript whitespace ending at byte `end`, or 0. */
size_t js_space_before(const char *s, size_t end);
size_t utf16_length(const char *s, size_t n);

/* ---- render state ----------------------------------------------------------------- */
typedef struct jscope jscope;
struct jrender {
  jarena arena;
  jerror err;
  size_t iterations;
  int depth;
  size_t max_output;
  size_t at_off;  /* source offset of the node being evaluated */
  size_t err_off; /* at_off when err was set */
  bool raised;    /* err comes from raise_exception(): its text verbatim */
};

/* Fail the render: sets r->err (first error wins; err_off records where).
 * Messages are plain ("cannot ..."); the API adds "chat template: line:col". */
void jfail(jrender *r, at_status st, const char *fmt, ...) AT_PRINTF(3, 4);

/* Render `program` with the context object `ctx` (a JV_OBJECT). */
bool jinja_render(jrender *r, const jlist *program, jv *ctx, jbuf *out);

/* Apply a filter / test / builtin function (jinja_builtins.c). args may hold
 * one trailing JV_OBJECT of keyword arguments when has_kw. */
typedef struct jargs {
  jv **pos;
  size_t npos;
  jmap kw;
} jargs;
jv *jinja_filter(jrender *r, jv *operand, const char *name, size_t n, jargs *args,
                 const jnode *call);
bool jinja_test(jrender *r, const jv *operand, const char *name, size_t n, const jv *arg, bool *ok);
jv *jinja_call_builtin(jrender *r, const jv *fn, jargs *args);

#endif /* ANYTIME_CHAT_JINJA_H */
