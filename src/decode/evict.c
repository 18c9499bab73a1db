/* src/decode/evict.c — choosing which running sequences to preempt when the
 * KV arena is short of blocks, priced in deadline slack (see
 * anytime/decode.h and docs/generation.md "Memory admission"), and the online
 * linear fit the recompute price comes from.
 *
 * Pure functions: no state, no locks, callable from any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "anytime/decode.h"

at_evict_class at_evict_classify(const at_evict_cand *c) {
  if (c->slack_s < 0) return AT_EVICT_DOOMED;
  if (c->slack_s - c->recompute_s >= 0) return AT_EVICT_SURVIVES;
  return AT_EVICT_WITHHELD;
}

/* Sort key: class first, then within doomed the least slack first, within
 * survivors the most surviving slack first. Index breaks ties (stable). */
typedef struct keyed {
  int cls;
  double key;
  size_t idx;
} keyed;

static int cmp_keyed(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

size_t at_evict_order(const at_evict_cand *c, size_t n, int *order) {
  if (!c || !order || n == 0) return 0;
  keyed stackbuf[64];
  keyed *k = n <= 64 ? stackbuf : malloc(n * sizeof *k);
  if (!k) return 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    at_evict_class cls = at_evict_classify(&c[i]);
    if (cls == AT_EVICT_WITHHELD) continue;
    double key = cls == AT_EVICT_DOOMED ? c[i].slack_s : -(c[i].slack_s - c[i].recompute_s);
    k[m++] = (keyed){(int)cls, key, i};
  }
  qsort(k, m, sizeof *k, cmp_keyed);
  for (size_t i = 0; i < m; i++) order[i] = c[k[i].idx].id;
  if (k != stackbuf) free(k);
  return m;
}

size_t at_evict_plan(const at_evict_cand *c, size_t n, int free_blocks, int need_blocks,
                     int *victims) {
  if (free_blocks >= need_blocks) return 0;
  if (!c || !victims || n == 0) return 0;
  int *order = malloc(n * sizeof *order);
  if (!order) return 0;
  size_t m = at_evict_order(c, n, order), k = 0;
  int have = free_blocks;
  for (size_t i = 0; i < m && have < need_blocks; i++) {
    for (size_t j = 0; j < n; j++)
      if (c[j].id == order[i]) {
        have += c[j].blocks;
        break;
      }
    victims[k++] = order[i];
  }
  free(order);
  return have >= need_blocks ? k : 0;
}

void at_linfit_add(at_linfit *f, double x, double y) {
  f->n += 1;
  f->sx += x;
  f->sy += y;
  f->sxx += x * x;
  f->sxy += x * y;
}

bool at_linfit_get(const at_linfit *f, double *a, double *b) {
  if (f->n < 1) return false;
  double det = f->n * f->sxx - f->sx * f->sx;
  if (f->n >= 2 && det > 1e-12 * (f->n * f->sxx + 1e-300)) {
    *b = (f->n * f->sxy - f->sx * f->sy) / det;
    *a = (f->sy - *b * f->sx) / f->n;
  } else {
    *a = 0;
    *b = f->sx != 0 ? f->sy / f->sx : 0;
  }
  return true;
}
