/* bench/held_out.h — the benchmarks' shared first step: a labelled CSV's
 * texts tokenised once with a model directory's tokenizer.json into int64
 * id arrays (at most 128 tokens each), so the timed part runs on ids only.
 * Used by bench_bucket_batching. */
#ifndef AT_BENCH_HELD_OUT_H
#define AT_BENCH_HELD_OUT_H

#include <stddef.h>
#include <stdint.h>

/* Fill *ids (n arrays of int64 ids), *lens and *n from CSV with DIR's
 * tokenizer; prints the reason and exits 1 on any failure. The arrays live
 * until the process ends. */
void bench_load_held_out(const char *dir, const char *csv, int64_t ***ids, size_t **lens,
                         size_t *n);

#endif
