/* src/text/tk_unicode.c — the character-level facts the tokenizer needs:
 * UTF-8 validation, the Unicode classes Hugging Face tokenizers tests
 * (whitespace, control, punctuation, marks, CJK), full lowercase mapping,
 * decomposition/composition (utf8proc), the GPT-2 byte<->char alphabet, and
 * the two hash maps (string -> id vocabularies, BPE merges).
 *
 * Classes follow the Rust definitions HF uses (char::is_whitespace,
 * unicode_categories, unicode-normalization) computed from utf8proc's tables
 * (Unicode 15 on Debian 12). Where the Rust crates' older Unicode tables
 * disagree, the difference only touches characters assigned recently;
 * docs/tokenizers.md records this and the parity suite measures it. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tk.h"

/* Where the pinned HF tokenizers' Unicode tables differ from utf8proc's
 * (generated from both libraries by tests/parity/unicode/gen_compat.sh). */
#ifndef TK_NO_COMPAT
#include "text/tk_compat.h"
static bool in_ranges(const tk_range *r, size_t n, uint32_t c) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c < r[mid].lo) hi = mid;
    else if (c > r[mid].hi) lo = mid + 1;
    else return true;
  }
  return false;
}
#define FLIP(tab, c) in_ranges(tab, sizeof tab / sizeof tab[0], (c))
#else
#define FLIP(tab, c) ((void)(c), false)
#endif

size_t tk_utf8_valid_prefix(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return n;
}

bool tk_is_ws(uint32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 9 && c <= 13);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static inline int cat(uint32_t c) { return (int)utf8proc_category((utf8proc_int32_t)c); }

bool tk_is_bert_control(uint32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  /* Cc, Cf, Co, Cs; not Cn: HF's table has no unassigned code points */
  int k = cat(c);
  return (k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO ||
          k == UTF8PROC_CATEGORY_CS) != FLIP(k_flip_ctrl, c);
}

bool tk_is_punct(uint32_t c) {
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  int k = cat(c);
  return (k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO) != FLIP(k_flip_punct, c);
}

bool tk_is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool tk_is_mn(uint32_t c) {
  return c >= 0x300 && (cat(c) == UTF8PROC_CATEGORY_MN) != FLIP(k_flip_mn, c);
}
bool tk_is_mark(uint32_t c) {
  if (c < 0x300) return false;
  int k = cat(c);
  return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}
bool tk_is_letter(uint32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  int k = cat(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) != FLIP(k_flip_letter, c);
}
bool tk_is_number(uint32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  int k = cat(c);
  return (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO) != FLIP(k_flip_number, c);
}
bool tk_is_alnum(uint32_t c) { return tk_is_letter(c) || tk_is_number(c); }
bool tk_is_word(uint32_t c) {
  if (c < 0x80)
    return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') || c == '_';
  int k = cat(c);
  return ((k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ME) || k == UTF8PROC_CATEGORY_ND ||
          k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC) != FLIP(k_flip_word, c);
}

int tk_lower(uint32_t c, uint32_t out[3]) {
  if (c < 0x80) { out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c; return 1; }
  if (c == 0x130) { out[0] = 'i'; out[1] = 0x307; return 2; } /* the one full mapping */
#ifndef TK_NO_COMPAT
  size_t lo = 0, hi = sizeof k_lower_fix / sizeof k_lower_fix[0];
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c < k_lower_fix[mid].cp) hi = mid;
    else if (c > k_lower_fix[mid].cp) lo = mid + 1;
    else { out[0] = k_lower_fix[mid].lower; return 1; }
  }
#endif
  out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
  return 1;
}

int tk_decompose(uint32_t c, bool compat, uint32_t out[32]) {
  if (c < 0xC0) {
    if (!compat || c < 0xA0) { out[0] = c; return 1; }
  }
  if (FLIP(k_flip_nodecomp, c)) { out[0] = c; return 1; }
  int last = 0;
  utf8proc_int32_t buf[32];
  utf8proc_ssize_t n = utf8proc_decompose_char(
      (utf8proc_int32_t)c, buf, 32,
      (utf8proc_option_t)(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0)), &last);
  if (n <= 0 || n > 32) { out[0] = c; return 1; }
  for (utf8proc_ssize_t i = 0; i < n; i++) out[i] = (uint32_t)buf[i];
  return (int)n;
}

int tk_ccc(uint32_t c) {
  if (c < 0x300) return 0;
  return utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

uint32_t tk_compose(uint32_t a, uint32_t b) {
  /* Hangul LV / LVT */
  if (a >= 0x1100 && a < 0x1113 && b >= 0x1161 && b < 0x1176)
    return 0xAC00 + ((a - 0x1100) * 21 + (b - 0x1161)) * 28;
  if (a >= 0xAC00 && a < 0xD7A4 && (a - 0xAC00) % 28 == 0 && b > 0x11A7 && b < 0x11C3)
    return a + (b - 0x11A7);
  utf8proc_int32_t buf[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
  if (utf8proc_normalize_utf32(buf, 2, (utf8proc_option_t)(UTF8PROC_COMPOSE | UTF8PROC_STABLE)) == 1 &&
      !FLIP(k_flip_nodecomp, (uint32_t)buf[0]))
    return (uint32_t)buf[0];
  return 0;
}

/* GPT-2's printable alphabet for bytes: printable Latin-1 bytes stand for
 * themselves, the rest are shifted to 256 + n in byte order. */
static uint32_t g_b2c[256];
static int16_t g_c2b[324];
static void byte_map_init(void) {
  int n = 0;
  for (int b = 0; b < 256; b++) {
    bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    g_b2c[b] = keep ? (uint32_t)b : (uint32_t)(256 + n++);
  }
  for (int i = 0; i < 324; i++) g_c2b[i] = -1;
  for (int b = 0; b < 256; b++) g_c2b[g_b2c[b]] = (int16_t)b;
}
static int g_byte_map_ready = 0;
static inline void byte_map_ready(void) {
  /* Idempotent and data-race-free in effect: every thread writes the same
   * values; tk_finish_tokenizer() calls it once before any encode. */
  if (!__atomic_load_n(&g_byte_map_ready, __ATOMIC_ACQUIRE)) {
    byte_map_init();
    __atomic_store_n(&g_byte_map_ready, 1, __ATOMIC_RELEASE);
  }
}
uint32_t tk_byte_to_cp(uint8_t b) { byte_map_ready(); return g_b2c[b]; }
int tk_cp_to_byte(uint32_t cp) { byte_map_ready(); return cp < 324 ? g_c2b[cp] : -1; }

/* ------------------------------------------------------------ containers */
at_status tk_grow(void **p, size_t *cap, size_t need, size_t elem) {
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem) return at_fail(AT_ERR_NOMEM, "tokenizer: buffer too large");
    c *= 2;
  }
  void *q = realloc(*p, c * elem);
  if (!q) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  *p = q;
  *cap = c;
  return AT_OK;
}

static inline uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 32;
  return h;
}

static at_status vocab_rehash(tk_vocab *v, size_t slots) {
  uint32_t *ns = calloc(slots, sizeof *ns);
  if (!ns) return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
  for (size_t i = 0; i < v->n; i++) {
    size_t j = hash_bytes(v->blob + v->ent[i].off, v->ent[i].len) & (slots - 1);
    while (ns[j]) j = (j + 1) & (slots - 1);
    ns[j] = (uint32_t)(i + 1);
  }
  free(v->slots);
  v->slots = ns;
  v->n_slots = slots;
  return AT_OK;
}

int32_t tk_vocab_get(const tk_vocab *v, const char *s, size_t len) {
  if (!v->n_slots) return -1;
  size_t j = hash_bytes(s, len) & (v->n_slots - 1);
  for (;;) {
    uint32_t e = v->slots[j];
    if (!e) return -1;
    const struct tk_ventry *en = &v->ent[e - 1];
    if (en->len == len && memcmp(v->blob + en->off, s, len) == 0) return en->id;
    j = (j + 1) & (v->n_slots - 1);
  }
}

/* Insert or overwrite. */
at_status tk_vocab_put(tk_vocab *v, const char *s, size_t len, int32_t id) {
  if (len > UINT32_MAX / 2) return at_fail(AT_ERR_LIMIT, "tokenizer: token too long");
  if (v->n_slots) {
    size_t j = hash_bytes(s, len) & (v->n_slots - 1);
    for (;;) {
      uint32_t e = v->slots[j];
      if (!e) break;
      struct tk_ventry *en = &v->ent[e - 1];
      if (en->len == len && memcmp(v->blob + en->off, s, len) == 0) {
        en->id = id;
        return AT_OK;
      }
      j = (j + 1) & (v->n_slots - 1);
    }
  }
  at_status st;
  if ((st = TK_RESERVE(v->ent, v->cap, v->n + 1)) != AT_OK) return st;
  if ((st = TK_RESERVE(v->blob, v->blob_cap, v->blob_len + len + 1)) != AT_OK) return st;
  memcpy(v->blob + v->blob_len, s, len);
  v->blob[v->blob_len + len] = '\0';
  v->ent[v->n].off = (uint32_t)v->blob_len;
  v->ent[v->n].len = (uint32_t)len;
  v->ent[v->n].id = id;
  v->blob_len += len + 1;
  v->n++;
  if (len > v->max_len) v->max_len = len;
  if (v->n * 2 > v->n_slots) return vocab_rehash(v, v->n_slots ? v->n_slots * 2 : 64);
  size_t j = hash_bytes(s, len) & (v->n_slots - 1);
  while (v->slots[j]) j = (j + 1) & (v->n_slots - 1);
  v->slots[j] = (uint32_t)v->n;
  return AT_OK;
}

void tk_vocab_free(tk_vocab *v) {
  free(v->blob);
  free(v->slots);
  free(v->ent);
  memset(v, 0, sizeof *v);
}

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return x;
}

at_status tk_merges_put(tk_merges *mm, int32_t a, int32_t b, int32_t rank, int32_t id) {
  if ((mm->n + 1) * 2 > mm->n_slots) {
    size_t ns = mm->n_slots ? mm->n_slots * 2 : 1024;
    uint64_t *k = calloc(ns, sizeof *k);
    int32_t *r = malloc(ns * sizeof *r), *d = malloc(ns * sizeof *d);
    if (!k || !r || !d) {
      free(k); free(r); free(d);
      return at_fail(AT_ERR_NOMEM, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < mm->n_slots; i++) {
      if (!mm->keys[i]) continue;
      size_t j = mix64(mm->keys[i]) & (ns - 1);
      while (k[j]) j = (j + 1) & (ns - 1);
      k[j] = mm->keys[i];
      r[j] = mm->rank[i];
      d[j] = mm->id[i];
    }
    free(mm->keys); free(mm->rank); free(mm->id);
    mm->keys = k; mm->rank = r; mm->id = d; mm->n_slots = ns;
  }
  uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
  size_t j = mix64(key) & (mm->n_slots - 1);
  while (mm->keys[j]) {
    if (mm->keys[j] == key) { /* a repeated merge: the later line wins, as in HF */
      mm->rank[j] = rank;
      mm->id[j] = id;
      return AT_OK;
    }
    j = (j + 1) & (mm->n_slots - 1);
  }
  mm->keys[j] = key;
  mm->rank[j] = rank;
  mm->id[j] = id;
  mm->n++;
  return AT_OK;
}

bool tk_merges_get(const tk_merges *mm, int32_t a, int32_t b, int32_t *rank, int32_t *id) {
  if (!mm->n_slots) return false;
  uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
  size_t j = mix64(key) & (mm->n_slots - 1);
  for (;;) {
    uint64_t k = mm->keys[j];
    if (!k) return false;
    if (k == key) {
      *rank = mm->rank[j];
      *id = mm->id[j];
      return true;
    }
    j = (j + 1) & (mm->n_slots - 1);
  }
}
