/* src/tools/run.h — the work behind `anytime run MODEL TEXT...`: open a
 * resolved model the way a server would (its tokenizer, a one-worker engine
 * with the compiled-artifact cache, the answering variant at index 0 and,
 * if asked, the family's other variants beside it), send each text through
 * at_engine_submit, wait for every answer, and print them: a classifier's
 * label and score, an embedder's pooled, normalised vector (as text lines or
 * one JSON object). The command parses its arguments, checks that the model
 * is one `run` can answer, and reports failures; this does the rest.
 *
 * Errors: functions returning at_status leave detail in at_last_error() for
 * the caller to report (empty after an AT_ERR_NOMEM of this file's own
 * buffers, so the report reads "out of memory").
 *
 * Ownership: run_open() returns a run_batch the caller frees with
 * run_close(); it borrows the model description and, from run_texts() on,
 * the texts, which must outlive it. Thread-safety: one run_batch belongs to
 * the thread that opened it; the engine's worker threads touch only the
 * answer they complete and the batch's count of answers outstanding, under
 * the batch's lock. Different batches are independent. */
#ifndef ANYTIME_TOOLS_RUN_H
#define ANYTIME_TOOLS_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "anytime/model.h"
#include "anytime/status.h"

/* How to open the model. */
typedef struct run_params {
  int variant;            /* index in the description's variants that answers */
  bool all_variants;      /* also load every other variant, as a server would */
  bool cache;             /* use the compiled-artifact cache */
  const char *cache_root; /* its root; NULL: the default (at_artifact_cache_dir) */
} run_params;

typedef struct run_batch run_batch;

/* Load d's tokenizer and start a one-worker engine with variant p->variant
 * at index 0 (intra-op threads: the online CPUs). d must be a classifier or
 * an embedder with a tokenizer (the caller checks). *out is set whenever
 * the batch itself could be allocated, also when a later step failed, so
 * that the caller can report the failure before run_close() frees what was
 * built. Returns AT_OK, AT_ERR_NOMEM, or the status of the tokenizer load,
 * at_artifact_cache_dir() or the engine's creation, loading and start. */
at_status run_open(const at_model_desc *d, const run_params *p, run_batch **out);

/* Encode each of texts[0..n) (after the embedder's default prompt, if its
 * export names one), cut at the model's token limit, submit it as a
 * request of its own, and wait until every submitted one is answered.
 * Call once per batch. Returns AT_OK when all were submitted (an answer
 * that failed is reported by run_print()), else the first failure's status
 * (AT_ERR_NOMEM, or that of at_tokenizer_prompt_tokens, at_tokenizer_encode,
 * at_encodings_to_inputs or at_engine_submit); answers to texts submitted
 * before it are still awaited. */
at_status run_texts(run_batch *b, const char *const *texts, size_t n);

/* Print every answer of run_texts() on stdout, as "label<TAB>score<TAB>text"
 * or "dim=H<TAB>[first values]<TAB>text" lines, or with json one object
 * {"model","variant","task","artifact","results":[...]}. A text whose
 * answer failed is named on stderr ("anytime run: text K: ..."). Returns
 * how many texts could not be printed (0: all were). */
size_t run_print(const run_batch *b, bool json);

/* Stop the engine and free everything; NULL is a no-op. */
void run_close(run_batch *b);

#endif /* ANYTIME_TOOLS_RUN_H */
