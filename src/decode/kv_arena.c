/* src/decode/kv_arena.c — the fixed arena of KV-cache blocks (see
 * anytime/decode.h): one allocation made at create, a free list of block
 * ids, all-or-nothing growth of a sequence's block table, and the gather /
 * scatter copies between a sequence's blocks and the dense past/present
 * tensors the decoder graph reads and writes, and forks that share a
 * prompt's full blocks between sequences (reference counts per block).
 *
 * Prefix cache (at_kv_arena_set_prefix_cache): a full block is published
 * under the hash of every token up to its end; a later sequence whose
 * tokens begin the same way attaches those blocks instead of computing
 * them. A published block no one holds is kept (least recently released
 * first out) and handed out as a free block when the free list is empty, so
 * cached prefixes give way before any running sequence is preempted. A hit
 * is exact, never a hash match alone: each block keeps its own tokens and
 * the block (and that block's generation) holding the positions before it.
 *
 * DESIGN: the generator's scheduler thread is the only user, except
 * at_kv_prefix_probe (any thread): the prefix table is changed only under
 * table_m, which the probe takes to read it; the scheduler's own reads
 * need no lock.
 * Block b's memory is float[layers][2][heads][block_tokens][head_dim], so
 * one (layer, kv, head) run of a block is block_tokens * head_dim contiguous
 * floats and a gather is a handful of memcpy calls per block.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/decode.h"
#include "core/internal.h"

struct at_kv_arena {
  at_kv_layout l;
  int n_blocks;
  float *mem;
  int *free_ids; /* stack of free block ids */
  int n_free;
  int *refs;     /* holders of each block (0: free or cached) */
  /* prefix cache; NULL arrays while it is off */
  bool prefix;
  uint64_t *hash;   /* per block: hash of every token up to the block's end */
  bool *reg;        /* per block: published (findable by hash) */
  int32_t *btok;    /* per block: its block_tokens tokens */
  int *parent;      /* per block: the block before it in its prefix, -1 first */
  uint32_t *gen, *parent_gen; /* bumped when a block is unpublished */
  int *bucket, *chain, mask;  /* hash table: bucket -> block -> next block */
  int *lru_prev, *lru_next, lru_head, lru_tail, n_lru; /* published, unheld */
  uint64_t query_tokens, hit_tokens;
  pthread_mutex_t table_m; /* held while the table changes, and by probes */
};

int at_kv_blocks_needed(int64_t tokens, double safety, int block_tokens) {
  if (tokens < 0 || !(safety > 0) || !isfinite(safety) || block_tokens < 1) return -1;
  if (tokens == 0) return 0;
  double want = ceil((double)tokens * safety / (double)block_tokens - 1e-9);
  if (want < 1) want = 1;
  if (want > 1e9) return -1;
  return (int)want;
}

size_t at_kv_block_bytes(const at_kv_layout *l) {
  return (size_t)l->layers * 2 * (size_t)l->heads * (size_t)l->block_tokens *
         (size_t)l->head_dim * sizeof(float);
}

at_status at_kv_arena_create(const at_kv_layout *l, int n_blocks, at_kv_arena **out) {
  if (!l || !out) return at_fail(AT_ERR_INVALID_ARG, "kv arena: NULL layout or out");
  *out = NULL;
  if (l->layers < 1 || l->heads < 1 || l->head_dim < 1 || l->block_tokens < 1 || n_blocks < 1)
    return at_fail(AT_ERR_INVALID_ARG,
                   "kv arena: layers %d, heads %d, head_dim %d, block_tokens %d and blocks %d "
                   "must all be >= 1",
                   l->layers, l->heads, l->head_dim, l->block_tokens, n_blocks);
  double bytes = (double)at_kv_block_bytes(l) * n_blocks;
  if (bytes > 16.0 * 1024 * 1024 * 1024)
    return at_fail(AT_ERR_LIMIT, "kv arena: %.1f GiB asked for, the limit is 16 GiB",
                   bytes / (1024.0 * 1024 * 1024));
  at_kv_arena *a = calloc(1, sizeof *a);
  if (!a) return at_fail(AT_ERR_NOMEM, "kv arena");
  a->l = *l;
  a->n_blocks = n_blocks;
  pthread_mutex_init(&a->table_m, NULL);
  a->mem = calloc((size_t)n_blocks, at_kv_block_bytes(l));
  a->free_ids = malloc((size_t)n_blocks * sizeof *a->free_ids);
  a->refs = calloc((size_t)n_blocks, sizeof *a->refs);
  if (!a->mem || !a->free_ids || !a->refs) {
    at_kv_arena_destroy(a);
    return at_fail(AT_ERR_NOMEM, "kv arena: %.1f MiB", bytes / (1024.0 * 1024));
  }
  /* hand out low ids first */
  for (int i = 0; i < n_blocks; i++) a->free_ids[i] = n_blocks - 1 - i;
  a->n_free = n_blocks;
  *out = a;
  return AT_OK;
}

static void prefix_free(at_kv_arena *a) {
  free(a->hash);
  free(a->reg);
  free(a->btok);
  free(a->parent);
  free(a->gen);
  free(a->parent_gen);
  free(a->bucket);
  free(a->chain);
  free(a->lru_prev);
  free(a->lru_next);
  a->hash = NULL, a->reg = NULL, a->btok = NULL, a->parent = NULL, a->gen = NULL;
  a->parent_gen = NULL, a->bucket = NULL, a->chain = NULL, a->lru_prev = a->lru_next = NULL;
  a->prefix = false;
}

void at_kv_arena_destroy(at_kv_arena *a) {
  if (!a) return;
  free(a->mem);
  free(a->free_ids);
  free(a->refs);
  prefix_free(a);
  pthread_mutex_destroy(&a->table_m);
  free(a);
}

const at_kv_layout *at_kv_arena_layout(const at_kv_arena *a) { return &a->l; }
int at_kv_arena_total_blocks(const at_kv_arena *a) { return a->n_blocks; }
int at_kv_arena_free_blocks(const at_kv_arena *a) { return a->n_free + a->n_lru; }

at_status at_kv_arena_set_prefix_cache(at_kv_arena *a, bool on) {
  if (!a) return at_fail(AT_ERR_INVALID_ARG, "kv prefix cache: NULL arena");
  if (on == a->prefix) return AT_OK;
  if (a->n_free + a->n_lru != a->n_blocks)
    return at_fail(AT_ERR_INVALID_ARG, "kv prefix cache: switched while blocks are held");
  pthread_mutex_lock(&a->table_m);
  if (!on) { /* the cached blocks become plain free ones */
    for (int b = a->lru_head; b >= 0; b = a->lru_next[b]) a->free_ids[a->n_free++] = b;
    a->n_lru = 0;
    prefix_free(a);
    pthread_mutex_unlock(&a->table_m);
    return AT_OK;
  }
  size_t n = (size_t)a->n_blocks;
  int buckets = 1;
  while (buckets < 2 * a->n_blocks) buckets *= 2;
  a->hash = calloc(n, sizeof *a->hash);
  a->reg = calloc(n, sizeof *a->reg);
  a->btok = calloc(n * (size_t)a->l.block_tokens, sizeof *a->btok);
  a->parent = calloc(n, sizeof *a->parent);
  a->gen = calloc(n, sizeof *a->gen);
  a->parent_gen = calloc(n, sizeof *a->parent_gen);
  a->bucket = malloc((size_t)buckets * sizeof *a->bucket);
  a->chain = calloc(n, sizeof *a->chain);
  a->lru_prev = calloc(n, sizeof *a->lru_prev);
  a->lru_next = calloc(n, sizeof *a->lru_next);
  if (!a->hash || !a->reg || !a->btok || !a->parent || !a->gen || !a->parent_gen ||
      !a->bucket || !a->chain || !a->lru_prev || !a->lru_next) {
    prefix_free(a);
    pthread_mutex_unlock(&a->table_m);
    return at_fail(AT_ERR_NOMEM, "kv prefix cache for %d blocks", a->n_blocks);
  }
  for (int i = 0; i < buckets; i++) a->bucket[i] = -1;
  a->mask = buckets - 1;
  a->lru_head = a->lru_tail = -1;
  a->n_lru = 0;
  a->prefix = true;
  pthread_mutex_unlock(&a->table_m);
  return AT_OK;
}

void at_kv_prefix_stats(const at_kv_arena *a, at_kv_prefix_counts *out) {
  if (!out) return;
  *out = (at_kv_prefix_counts){0};
  if (!a) return;
  out->query_tokens = a->query_tokens;
  out->hit_tokens = a->hit_tokens;
  out->cached_blocks = a->n_lru;
  for (int b = 0; b < a->n_blocks; b++) out->shared_blocks += a->refs[b] > 1;
}

/* ---- the cached (published, unheld) blocks, oldest release first */
static void lru_remove(at_kv_arena *a, int b) {
  int p = a->lru_prev[b], n = a->lru_next[b];
  if (p >= 0) a->lru_next[p] = n; else a->lru_head = n;
  if (n >= 0) a->lru_prev[n] = p; else a->lru_tail = p;
  a->n_lru--;
}

static void lru_append(at_kv_arena *a, int b) {
  a->lru_prev[b] = a->lru_tail;
  a->lru_next[b] = -1;
  if (a->lru_tail >= 0) a->lru_next[a->lru_tail] = b; else a->lru_head = b;
  a->lru_tail = b;
  a->n_lru++;
}

static void unpublish(at_kv_arena *a, int b) {
  pthread_mutex_lock(&a->table_m);
  int *p = &a->bucket[a->hash[b] & (uint64_t)a->mask];
  while (*p != b) p = &a->chain[*p];
  *p = a->chain[b];
  a->reg[b] = false;
  a->gen[b]++;
  pthread_mutex_unlock(&a->table_m);
}

/* A block for a new holder: the free list first, then the cached block
 * released longest ago (unpublished). -1 when there is none. */
static int take_block(at_kv_arena *a) {
  int b = -1;
  if (a->n_free > 0) {
    b = a->free_ids[--a->n_free];
  } else if (a->n_lru > 0) {
    b = a->lru_head;
    lru_remove(a, b);
    unpublish(a, b);
  }
  if (b >= 0) a->refs[b] = 1;
  return b;
}

/* One holder of b lets go; the last one returns it (kept if published). */
static void drop_block(at_kv_arena *a, int b) {
  if (--a->refs[b] > 0) return;
  if (a->prefix && a->reg[b]) lru_append(a, b);
  else a->free_ids[a->n_free++] = b;
}

/* Room for `want` entries in seq's block table. */
static at_status table_room(at_kv_seq *seq, int want) {
  if (want <= seq->cap) return AT_OK;
  int cap = seq->cap ? seq->cap : 8;
  while (cap < want) cap *= 2;
  int *nb = realloc(seq->blocks, (size_t)cap * sizeof *nb);
  if (!nb) return at_fail(AT_ERR_NOMEM, "kv block table");
  seq->blocks = nb;
  seq->cap = cap;
  return AT_OK;
}

at_status at_kv_seq_grow(at_kv_arena *a, at_kv_seq *seq, int n) {
  if (!a || !seq || n < 0) return at_fail(AT_ERR_INVALID_ARG, "kv grow: bad arguments");
  if (n == 0) return AT_OK;
  if (n > at_kv_arena_free_blocks(a))
    return at_fail(AT_ERR_LIMIT, "kv arena: %d blocks wanted, %d free", n,
                   at_kv_arena_free_blocks(a));
  if (table_room(seq, seq->n_blocks + n) != AT_OK) return AT_ERR_NOMEM;
  for (int i = 0; i < n; i++) seq->blocks[seq->n_blocks++] = take_block(a);
  return AT_OK;
}

at_status at_kv_seq_fork(at_kv_arena *a, const at_kv_seq *parent, at_kv_seq *child,
                         int positions) {
  if (!a || !parent || !child || child == parent || child->n_blocks != 0 || positions < 0 ||
      positions > parent->len)
    return at_fail(AT_ERR_INVALID_ARG, "kv fork: bad arguments");
  int BT = a->l.block_tokens, full = positions / BT, part = positions % BT != 0;
  if (part && at_kv_arena_free_blocks(a) < 1)
    return at_fail(AT_ERR_LIMIT, "kv arena: no free block for a fork");
  if (table_room(child, full + part) != AT_OK) return AT_ERR_NOMEM;
  for (int i = 0; i < full; i++) {
    int b = parent->blocks[i];
    a->refs[b]++; /* held by the parent: never in the cached list */
    child->blocks[child->n_blocks++] = b;
  }
  if (part) {
    int b = take_block(a);
    size_t bytes = at_kv_block_bytes(&a->l);
    memcpy((char *)a->mem + (size_t)b * bytes, (char *)a->mem + (size_t)parent->blocks[full] * bytes,
           bytes);
    child->blocks[child->n_blocks++] = b;
  }
  child->len = positions;
  return AT_OK;
}

int at_kv_seq_shared_blocks(const at_kv_arena *a, const at_kv_seq *seq) {
  int n = 0;
  for (int i = 0; a && seq && i < seq->n_blocks; i++) n += a->refs[seq->blocks[i]] > 1;
  return n;
}

void at_kv_seq_release(at_kv_arena *a, at_kv_seq *seq) {
  if (!a || !seq) return;
  /* last block first: a prefix's tail is handed out again before its head */
  for (int i = seq->n_blocks - 1; i >= 0; i--) drop_block(a, seq->blocks[i]);
  seq->n_blocks = 0;
  seq->len = 0;
}

void at_kv_seq_free(at_kv_seq *seq) {
  if (!seq) return;
  free(seq->blocks);
  seq->blocks = NULL;
  seq->cap = seq->n_blocks = seq->len = 0;
}

/* Start of the (layer, kv, head) run of block `b`. */
static float *run_ptr(const at_kv_arena *a, int b, int layer, int kv, int head) {
  const at_kv_layout *l = &a->l;
  size_t per_head = (size_t)l->block_tokens * l->head_dim;
  size_t off = ((((size_t)b * l->layers + layer) * 2 + kv) * l->heads + head) * per_head;
  return a->mem + off;
}

void at_kv_gather(const at_kv_arena *a, const at_kv_seq *seq, int layer, int kv, float *dst,
                  int P) {
  const at_kv_layout *l = &a->l;
  int D = l->head_dim, BT = l->block_tokens;
  for (int h = 0; h < l->heads; h++) {
    float *row = dst + (size_t)h * P * D;
    int done = 0;
    for (int bi = 0; done < seq->len; bi++) {
      int take = seq->len - done < BT ? seq->len - done : BT;
      memcpy(row + (size_t)done * D, run_ptr(a, seq->blocks[bi], layer, kv, h),
             (size_t)take * D * sizeof(float));
      done += take;
    }
    if (P > seq->len) memset(row + (size_t)seq->len * D, 0, (size_t)(P - seq->len) * D * sizeof(float));
  }
}

at_status at_kv_scatter(at_kv_arena *a, const at_kv_seq *seq, int layer, int kv,
                        const float *src, int T, int from, int n) {
  const at_kv_layout *l = &a->l;
  int D = l->head_dim, BT = l->block_tokens;
  if (seq->len + n > seq->n_blocks * BT || from < 0 || from + n > T)
    return at_fail(AT_ERR_LIMIT, "kv scatter: %d positions after %d do not fit %d blocks", n,
                   seq->len, seq->n_blocks);
  for (int h = 0; h < l->heads; h++) {
    const float *row = src + ((size_t)h * T + from) * D;
    int pos = seq->len, done = 0;
    while (done < n) {
      int bi = pos / BT, off = pos % BT;
      int take = BT - off < n - done ? BT - off : n - done;
      memcpy(run_ptr(a, seq->blocks[bi], layer, kv, h) + (size_t)off * D, row + (size_t)done * D,
             (size_t)take * D * sizeof(float));
      done += take;
      pos += take;
    }
  }
  return AT_OK;
}

/* ------------------------------------------------------------ prefix cache */

/* Hash of a prefix extended by one block's tokens (FNV-1a over the bytes,
 * then a final mix). */
static uint64_t chain_hash(uint64_t h, const int32_t *tok, int n) {
  if (!h) h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) {
    uint32_t t = (uint32_t)tok[i];
    for (int k = 0; k < 4; k++) h = (h ^ ((t >> (8 * k)) & 0xffu)) * 1099511628211ull;
  }
  h ^= h >> 31;
  h *= 0x9e3779b97f4a7c15ull;
  return (h ^ (h >> 29)) | 1; /* never 0: 0 starts a chain */
}

/* The published block holding tok[0..BT) after block `prev` (-1: first). */
static int find_block(const at_kv_arena *a, uint64_t h, const int32_t *tok, int prev) {
  int BT = a->l.block_tokens;
  for (int b = a->bucket[h & (uint64_t)a->mask]; b >= 0; b = a->chain[b])
    if (a->hash[b] == h && a->parent[b] == prev &&
        (prev < 0 || a->parent_gen[b] == a->gen[prev]) &&
        !memcmp(a->btok + (size_t)b * BT, tok, (size_t)BT * sizeof *tok))
      return b;
  return -1;
}

int at_kv_prefix_attach(at_kv_arena *a, at_kv_seq *seq, const int32_t *tok, int n) {
  if (!a || !seq || !tok || n < 1 || seq->len != 0) return 0;
  if (!a->prefix) return 0;
  int BT = a->l.block_tokens, full = n / BT, prev = -1, i = 0;
  uint64_t h = 0;
  a->query_tokens += (uint64_t)n;
  for (; i < full; i++) {
    h = chain_hash(h, tok + (size_t)i * BT, BT);
    int b = find_block(a, h, tok + (size_t)i * BT, prev);
    if (b < 0) break;
    if (i >= seq->n_blocks) { /* a slot with no block of its own yet */
      if (table_room(seq, i + 1) != AT_OK) break;
      seq->blocks[seq->n_blocks++] = -1;
    }
    if (seq->blocks[i] != b) {
      /* b is taken before the old block goes, so it never reaches the free list */
      if (++a->refs[b] == 1) lru_remove(a, b);
      if (seq->blocks[i] >= 0) drop_block(a, seq->blocks[i]);
      seq->blocks[i] = b;
    }
    prev = b;
  }
  seq->len = i * BT;
  a->hit_tokens += (uint64_t)seq->len;
  return seq->len;
}

void at_kv_prefix_publish(at_kv_arena *a, const at_kv_seq *seq, const int32_t *tok) {
  if (!a || !seq || !tok || !a->prefix) return;
  int BT = a->l.block_tokens, full = seq->len / BT, prev = -1;
  uint64_t h = 0;
  for (int i = 0; i < full; i++) {
    const int32_t *bt = tok + (size_t)i * BT;
    h = chain_hash(h, bt, BT);
    int b = seq->blocks[i];
    if (!a->reg[b]) {
      int other = find_block(a, h, bt, prev);
      if (other >= 0) { /* the same prefix is published in another block: keep that one */
        prev = other;
        continue;
      }
      pthread_mutex_lock(&a->table_m);
      a->hash[b] = h;
      a->parent[b] = prev;
      a->parent_gen[b] = prev >= 0 ? a->gen[prev] : 0;
      memcpy(a->btok + (size_t)b * BT, bt, (size_t)BT * sizeof *bt);
      int *head = &a->bucket[h & (uint64_t)a->mask];
      a->chain[b] = *head;
      *head = b;
      a->reg[b] = true;
      pthread_mutex_unlock(&a->table_m);
    }
    prev = b;
  }
}

int at_kv_prefix_probe(at_kv_arena *a, const int32_t *tok, int n) {
  if (!a || !tok || n < 1) return 0;
  pthread_mutex_lock(&a->table_m);
  int found = 0;
  if (a->prefix) {
    int BT = a->l.block_tokens, prev = -1;
    uint64_t h = 0;
    for (int i = 0; i < n / BT; i++) {
      h = chain_hash(h, tok + (size_t)i * BT, BT);
      if ((prev = find_block(a, h, tok + (size_t)i * BT, prev)) < 0) break;
      found += BT;
    }
  }
  pthread_mutex_unlock(&a->table_m);
  return found;
}
