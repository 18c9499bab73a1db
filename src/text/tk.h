/* src/text/tk.h — internals shared by the tokenizer's files (not public).
 *
 * DESIGN. The pipeline mirrors Hugging Face tokenizers step by step, because
 * token-for-token parity (ids AND offsets) depends on reproducing its
 * intermediate states, not just its final output:
 *
 *   input ─► added tokens (raw) ─► normalizer ─► added tokens (normalized)
 *         ─► pre-tokenizers ─► model ─► truncation ─► post-processor ─► padding
 *
 * Text flows as "splits": byte ranges of a normalized buffer (ws->nb) with a
 * parallel array of alignments (ws->al, one [start,end) pair of ORIGINAL byte
 * offsets per normalized byte), exactly HF's NormalizedString. Every
 * normalizer and pre-tokenizer that rewrites text does so through the
 * transform engine (tk_xf_*), which reproduces HF's `transform_range`
 * alignment rules: a character emitted with change 0 replaces the next source
 * character and takes its alignment, change > 0 inserts and takes the
 * alignment of the source byte just before the cursor, change -n replaces and
 * then drops n more source characters. Rewritten text is appended to the
 * buffers; the old bytes are garbage until the call ends (buffers are reset,
 * not freed, per call).
 *
 * Threads: everything hanging off at_tokenizer is read-only after load;
 * everything mutable is in at_tok_workspace, owned by one thread at a time.
 * Buffers are addressed by index, never by pointer, across calls that may
 * grow them.
 */
#ifndef ANYTIME_TEXT_TK_H
#define ANYTIME_TEXT_TK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "anytime/tokenizer.h"
#include "core/internal.h"

/* ------------------------------------------------------------------ utf-8 */
/* Decode the (valid) UTF-8 character at s; *n gets its length. */
static inline uint32_t tk_utf8_dec(const uint8_t *s, uint32_t *n) {
  uint8_t c = s[0];
  if (c < 0x80) { *n = 1; return c; }
  if (c < 0xE0) { *n = 2; return ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F); }
  if (c < 0xF0) {
    *n = 3;
    return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
  }
  *n = 4;
  return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
         ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}
static inline uint32_t tk_utf8_len(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}
static inline uint32_t tk_utf8_enc(uint32_t cp, uint8_t *o) {
  if (cp < 0x80) { o[0] = (uint8_t)cp; return 1; }
  if (cp < 0x800) { o[0] = (uint8_t)(0xC0 | (cp >> 6)); o[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    o[0] = (uint8_t)(0xE0 | (cp >> 12)); o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (uint8_t)(0x80 | (cp & 0x3F)); return 3;
  }
  o[0] = (uint8_t)(0xF0 | (cp >> 18)); o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}
/* Length of the longest valid UTF-8 prefix of s[0..n) (== n when valid). */
size_t tk_utf8_valid_prefix(const uint8_t *s, size_t n);

/* --------------------------------------------------------- char classes */
/* Rust char::is_whitespace (Unicode White_Space). */
bool tk_is_ws(uint32_t c);
/* BertNormalizer's control test: Cc/Cf/Cn/Co/Cs except \t \n \r. */
bool tk_is_bert_control(uint32_t c);
/* BertPreTokenizer / Punctuation: ASCII punctuation or Unicode P*. */
bool tk_is_punct(uint32_t c);
bool tk_is_cjk(uint32_t c);
bool tk_is_mn(uint32_t c);      /* nonspacing mark */
bool tk_is_mark(uint32_t c);    /* Mn, Mc, Me */
bool tk_is_letter(uint32_t c);  /* L* */
bool tk_is_number(uint32_t c);  /* N* (Rust char::is_numeric) */
bool tk_is_alnum(uint32_t c);   /* L* or N* (Rust char::is_alphanumeric) */
bool tk_is_word(uint32_t c);    /* regex \w: L* M* Nd Nl Pc (approx. Onig) */
/* Full lowercase mapping (Rust char::to_lowercase): writes 1..3 code points. */
int tk_lower(uint32_t c, uint32_t out[3]);
/* Canonical (compat=false) or compatibility decomposition of one code
 * point, recursively, no reordering. Returns the count (<= 18). */
int tk_decompose(uint32_t c, bool compat, uint32_t out[32]);
int tk_ccc(uint32_t c);
/* Primary composite of a+b, or 0. */
uint32_t tk_compose(uint32_t a, uint32_t b);

/* -------------------------------------------------------- growable arrays */
at_status tk_grow(void **p, size_t *cap, size_t need, size_t elem);
#define TK_RESERVE(arr, capv, need) \
  ((need) <= (capv) ? AT_OK : tk_grow((void **)&(arr), &(capv), (need), sizeof *(arr)))

/* ----------------------------------------------------------- vocabulary */
/* Open-addressing string -> id map over one string blob. */
typedef struct tk_vocab {
  char *blob;          /* NUL-separated strings */
  size_t blob_len, blob_cap;
  uint32_t *slots;     /* 0 = empty, else entry index + 1 */
  size_t n_slots;      /* power of two */
  struct tk_ventry { uint32_t off, len; int32_t id; } *ent;
  size_t n, cap;
  size_t max_len;      /* longest key in bytes */
} tk_vocab;

at_status tk_vocab_put(tk_vocab *v, const char *s, size_t len, int32_t id);
int32_t tk_vocab_get(const tk_vocab *v, const char *s, size_t len); /* -1 if absent */
void tk_vocab_free(tk_vocab *v);
static inline const char *tk_vocab_str(const tk_vocab *v, size_t i) { return v->blob + v->ent[i].off; }

/* u64 -> (rank, id) map for BPE merges. */
typedef struct tk_merges {
  uint64_t *keys;  /* 0 = empty (key stored as pair+1 to keep 0 free) */
  int32_t *rank, *id;
  size_t n_slots, n;
} tk_merges;

/* --------------------------------------------------------------- patterns */
enum { TK_PAT_STRING, TK_PAT_REGEX };
typedef struct tk_pattern {
  int kind;
  char *str;
  size_t len;
  pcre2_code *re;
} tk_pattern;

/* Split delimiter behaviour (HF SplitDelimiterBehavior). */
enum { TK_B_REMOVED, TK_B_ISOLATED, TK_B_MERGED_PREV, TK_B_MERGED_NEXT, TK_B_CONTIGUOUS };

/* ------------------------------------------------------------ components */
enum { TK_N_BERT, TK_N_NFC, TK_N_NFD, TK_N_NFKC, TK_N_NFKD, TK_N_LOWER, TK_N_STRIP_ACCENTS,
       TK_N_STRIP, TK_N_REPLACE, TK_N_PREPEND, TK_N_SEQ, TK_N_PRECOMPILED, TK_N_NMT };

/* SentencePiece's precompiled_charsmap (the Precompiled normalizer): a
 * double-array trie over UTF-8 bytes whose leaves index NUL-terminated
 * replacement strings. Parsed and bounds-described by tk_charsmap_parse;
 * read-only afterwards. */
typedef struct tk_charsmap {
  uint32_t *units;         /* the double array */
  size_t n_units;
  char *strs;              /* replacement strings, NUL-separated (valid UTF-8) */
  size_t strs_len;
} tk_charsmap;
/* Parse the decoded charsmap bytes (u32 LE trie size in bytes, the trie as
 * u32 LE units, then the strings). Fails with AT_ERR_PARSE and a message on
 * a malformed map; on success *m owns copies (free with tk_charsmap_free). */
at_status tk_charsmap_parse(const uint8_t *b, size_t n, tk_charsmap *m);
/* Standard base64 (RFC 4648, padded) -> bytes; *out is malloc'd. */
at_status tk_base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len);
void tk_charsmap_free(tk_charsmap *m);
/* The replacement for the first (shortest) trie key that prefixes
 * key[0..n), as spm_precompiled's transform: 1 found (*r, *rlen set),
 * 0 none, -1 the map points outside itself (error set). */
int tk_charsmap_lookup(const tk_charsmap *m, const uint8_t *key, size_t n, const char **r,
                       size_t *rlen);
typedef struct tk_norm {
  int kind;
  bool clean_text, chinese, strip_accents, lowercase; /* Bert */
  bool left, right;                                   /* Strip */
  tk_pattern pat;                                     /* Replace */
  char *content;                                      /* Replace / Prepend */
  size_t content_len;
  struct tk_norm *items;                              /* Sequence */
  size_t n_items;
  tk_charsmap cmap;                                   /* Precompiled */
} tk_norm;

enum { TK_P_BERT, TK_P_WHITESPACE, TK_P_WSSPLIT, TK_P_PUNCT, TK_P_DIGITS, TK_P_SPLIT,
       TK_P_BYTELEVEL, TK_P_METASPACE, TK_P_CHARDELIM, TK_P_SEQ };
enum { TK_PREPEND_ALWAYS, TK_PREPEND_FIRST, TK_PREPEND_NEVER };
typedef struct tk_pretok {
  int kind;
  int behavior;
  bool invert, individual_digits;
  tk_pattern pat;
  bool add_prefix_space, use_regex;   /* ByteLevel */
  uint32_t replacement;               /* Metaspace */
  int prepend_scheme;
  bool split;
  uint32_t delim;                     /* CharDelimiterSplit */
  struct tk_pretok *items;
  size_t n_items;
} tk_pretok;

enum { TK_M_WORDPIECE, TK_M_BPE, TK_M_WORDLEVEL, TK_M_UNIGRAM };
typedef struct tk_model {
  int kind;
  tk_vocab vocab;          /* token -> id */
  int32_t unk_id;          /* -1 = none */
  /* WordPiece */
  tk_vocab cont;           /* continuation pieces with the prefix removed */
  char *prefix;            /* continuing_subword_prefix (WordPiece, BPE) */
  size_t prefix_len;
  size_t max_chars;        /* max_input_chars_per_word */
  /* BPE */
  tk_merges merges;
  char *suffix;            /* end_of_word_suffix */
  size_t suffix_len;
  bool fuse_unk, byte_fallback, ignore_merges;
  int32_t byte_ids[256];   /* <0xNN> tokens for byte_fallback, -1 absent */
  int32_t *char_id;        /* fast path: id of each single code point < 0x800 (or -1) */
  int32_t *cont_char_id;   /* same, with the continuing prefix */
  /* Unigram: `vocab` maps piece -> id (a repeated piece keeps its last id,
   * as HF's map does); `prefixes` holds every proper char-boundary prefix
   * of every piece (with id INT32_MIN) so the lattice walk stops as soon as
   * no longer piece can match; pieces[id] is the id's own string. */
  tk_vocab prefixes;
  double *scores;          /* per id */
  char **pieces;           /* per id, into pieces_blob */
  char *pieces_blob;
  size_t n_pieces;
  double min_score;
} tk_model;

typedef struct tk_tpl_piece {
  bool special;            /* SpecialToken (else Sequence) */
  int seq;                 /* Sequence: 0 = A, 1 = B */
  int32_t type_id;
  int32_t *ids;            /* SpecialToken ids */
  size_t n_ids;
} tk_tpl_piece;

enum { TK_PP_BERT, TK_PP_ROBERTA, TK_PP_TEMPLATE, TK_PP_BYTELEVEL, TK_PP_SEQ };
typedef struct tk_post {
  int kind;
  int32_t cls_id, sep_id;
  bool trim_offsets, add_prefix_space;
  tk_tpl_piece *single, *pair;
  size_t n_single, n_pair;
  struct tk_post *items;
  size_t n_items;
} tk_post;

enum { TK_D_WORDPIECE, TK_D_BYTELEVEL, TK_D_METASPACE, TK_D_SEQ, TK_D_REPLACE, TK_D_FUSE,
       TK_D_STRIP, TK_D_BYTEFALLBACK, TK_D_BPE };
typedef struct tk_dec {
  int kind;
  char *prefix;            /* WordPiece prefix, BPE suffix */
  size_t prefix_len;
  bool cleanup;
  uint32_t replacement;    /* Metaspace */
  int prepend_scheme;
  char *pattern, *content; /* Replace (string pattern only) */
  size_t pattern_len, content_len;
  uint32_t strip_char;
  int strip_left, strip_right;
  struct tk_dec *items;
  size_t n_items;
} tk_dec;

typedef struct tk_added {
  char *content;           /* as written in tokenizer.json */
  size_t len;
  char *match;             /* what is matched: content, normalized if `normalized` */
  size_t match_len;
  int32_t id;
  bool special, single_word, lstrip, rstrip, normalized;
} tk_added;

enum { TK_TRUNC_LONGEST_FIRST, TK_TRUNC_ONLY_FIRST, TK_TRUNC_ONLY_SECOND };
struct at_tokenizer {
  tk_norm *norm;           /* NULL = none */
  tk_pretok *pretok;
  tk_model model;
  tk_post *post;
  tk_dec *dec;
  tk_added *added;
  size_t n_added;
  uint8_t added_first_raw[32], added_first_norm[32]; /* first-byte bitmaps */
  const char **id_str;     /* id -> token string (model vocab + added) */
  uint8_t *id_special;     /* id -> 1 if a special added token */
  size_t n_ids;
  /* truncation / padding from tokenizer.json */
  bool trunc_on;
  size_t trunc_max;
  int trunc_strategy;
  bool trunc_left;
  bool pad_on, pad_batch_longest, pad_left;
  size_t pad_fixed, pad_multiple;
  int32_t pad_id, pad_type_id;
  char *pad_token;
  char describe[256];
};

/* ---------------------------------------------------------- workspace */
typedef struct tk_span { uint32_t s, e; } tk_span;
typedef struct tk_split {
  uint32_t off, len;   /* in ws->nb / ws->al */
  uint32_t base;       /* original offset of the split's start ((0,0) rule) */
  int32_t token;       /* >= 0: an added token already */
} tk_split;
typedef struct tk_tok {
  int32_t id, type_id, word;
  uint32_t s, e;       /* original byte offsets */
  int32_t str;         /* -1: the id's string; else its own string at ws->tstr + str */
  uint8_t special;
} tk_tok;
typedef struct tk_vnode { double score; int32_t start, id; } tk_vnode; /* Unigram lattice */
typedef struct tk_edit { uint32_t cp; int32_t change; } tk_edit;     /* (char, change) list */
typedef struct tk_sym { int32_t id, prev, next; uint32_t len; } tk_sym;
typedef struct tk_heap_ent { int32_t rank, pos, id; } tk_heap_ent;
typedef struct tk_match { uint32_t s, e; int match; } tk_match;

struct at_tok_workspace {
  uint8_t *nb; size_t nb_len, nb_cap;
  size_t nb_limit;                            /* cap on nb_len for the text being encoded (tk_norm.c) */
  tk_span *al; size_t al_cap;
  tk_split *sp, *sp2; size_t sp_n, sp_cap, sp2_n, sp2_cap;
  tk_tok *tk; size_t tk_n, tk_cap;            /* tokens of the current batch */
  tk_sym *sym; size_t sym_cap;
  tk_heap_ent *heap; size_t heap_cap;
  uint32_t *u32; size_t u32_cap;              /* scratch code points */
  uint32_t *cmap; size_t cmap_cap;            /* byte -> char index */
  tk_match *m; size_t m_cap;                  /* pattern matches */
  tk_vnode *vn; size_t vn_cap;                /* Unigram best paths */
  tk_edit *ed; size_t ed_cap;                 /* Precompiled edit list */
  char *tstr; size_t tstr_len, tstr_cap;      /* tokens' own strings (Unigram unk) */
  /* output arrays */
  int32_t *o_i32; size_t o_i32_cap;
  uint32_t (*o_off)[2]; size_t o_off_cap;
  const char **o_str; size_t o_str_cap;
  uint32_t *o_tlen; size_t o_tlen_cap;
  char *dec, *dec2, *dec3; size_t dec_cap, dec2_cap, dec3_cap;   /* decode lists */
  size_t *dec_idx, *dec2_idx, *dec3_idx; size_t dec_idx_cap, dec2_idx_cap, dec3_idx_cap;
  size_t *seg; size_t seg_cap;                /* per-item token ranges */
  pcre2_match_data *md;                       /* regex matches (lazily made) */
};

/* ------------------------------------------------------- transform engine */
typedef struct tk_xf {
  at_tok_workspace *ws;
  uint32_t src, src_len; /* source split bytes in nb */
  uint32_t pos;          /* bytes of the source consumed */
  uint32_t out;          /* where the output starts in nb */
  uint32_t base;
  size_t limit;          /* most output bytes one pass may write (tk_norm.c) */
  at_status st;
} tk_xf;
void tk_xf_begin(tk_xf *x, at_tok_workspace *ws, const tk_split *sp, uint32_t initial_chars);
void tk_xf_emit(tk_xf *x, uint32_t cp, int change);
/* Copy `bytes` source bytes unchanged (alignment kept). */
void tk_xf_copy(tk_xf *x, uint32_t bytes);
/* Finish: copies nothing more; rewrites *sp to the output. */
at_status tk_xf_end(tk_xf *x, tk_split *sp);

/* ---------------------------------------------------------- pipeline steps */
at_status tk_normalize(const tk_norm *n, at_tok_workspace *ws, tk_split *sp);
/* Cap the normalised bytes of the text about to be normalised, from its
 * length (see TK_NORM_TOTAL_GROWTH in tk_norm.c). */
void tk_norm_limit(at_tok_workspace *ws, size_t text_len);
/* Append the split [off, off + len) of ws->nb to ws->sp2 (nothing when len
 * is 0); token: the added token it is, or -1 for text. AT_OK or
 * AT_ERR_NOMEM. Defined in tokenizer.c; the pre-tokenizers use it too. */
at_status tk_push_split(at_tok_workspace *ws, uint32_t off, uint32_t len, int32_t token);
/* Append a split as it is to ws->sp2 (an added token's, kept whole). */
at_status tk_keep_split(at_tok_workspace *ws, tk_split sp);
/* The pass's output (sp2) becomes the next pass's input (sp); sp2 empty. */
void tk_swap_splits(at_tok_workspace *ws);

/* Pre-tokenize ws->sp[0..sp_n) in place (token splits pass through). */
at_status tk_pretokenize(const tk_pretok *p, at_tok_workspace *ws);
/* Tokenize one split; appends tk_tok (offsets in original bytes) to ws->tk. */
at_status tk_model_tokenize(const tk_model *m, at_tok_workspace *ws, const tk_split *sp,
                            int32_t word);
size_t tk_post_added(const tk_post *p, bool pair);
void tk_post_free(tk_post *p);
void tk_norm_free(tk_norm *n);
void tk_pretok_free(tk_pretok *p);
void tk_dec_free(tk_dec *d);
void tk_model_free(tk_model *m);
at_status tk_model_finish(tk_model *m); /* build fast paths after loading */
at_status tk_merges_put(tk_merges *mm, int32_t a, int32_t b, int32_t rank, int32_t id);
bool tk_merges_get(const tk_merges *mm, int32_t a, int32_t b, int32_t *rank, int32_t *id);
at_status tk_pattern_compile(tk_pattern *p, const char *src, size_t len, bool regex,
                             const char *where);
void tk_pattern_free(tk_pattern *p);
/* All matches of p in s[0..n) as (start,end) pairs in ws->m; returns count
 * or -1 on error (status in *st). */
long tk_pattern_find(const tk_pattern *p, at_tok_workspace *ws, const uint8_t *s, size_t n,
                     at_status *st);
at_status tk_decode_tokens(const at_tokenizer *t, const tk_dec *d, at_tok_workspace *ws,
                           const char **toks, size_t n);
/* GPT-2 split: next match in s[i..n) (always matches when i < n); returns end. */
size_t tk_gpt2_next(const uint8_t *s, size_t n, size_t i);
/* Byte-level map: byte -> code point, and back (-1 if not in the alphabet). */
uint32_t tk_byte_to_cp(uint8_t b);
int tk_cp_to_byte(uint32_t cp);

/* Give token ws->tk[k] its own string s[0..n) (stored in ws->tstr as a
 * u32 length, the bytes and a NUL; reset with the token list). */
at_status tk_tok_own_str(at_tok_workspace *ws, size_t k, const uint8_t *s, uint32_t n);

at_status tk_load_json(const char *json, size_t len, at_tokenizer *t);
at_status tk_finish_tokenizer(at_tokenizer *t);

#endif /* ANYTIME_TEXT_TK_H */
