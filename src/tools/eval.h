/* src/tools/eval.h — the work behind `anytime eval`: a classifier's
 * accuracy on a labelled dataset measured through the serving path
 * (tokenizer -> padded batches -> at_engine_submit on a worker pool ->
 * argmax over the logits), and its report: accuracy, count, time and the
 * confusion matrix (rows: true label, columns: predicted) as text or one
 * JSON object. The command parses its arguments, resolves the model, checks
 * it is a classifier with a tokenizer and reads the dataset with
 * eval_parse_label; this does the rest.
 *
 * Errors: eval_run() leaves detail in at_last_error() for the caller to
 * report (empty after an AT_ERR_NOMEM of this file's own buffers, so the
 * report reads "out of memory").
 *
 * Ownership: eval_run() fills an eval_outcome whose predictions the caller
 * frees with eval_outcome_free(); nothing else is kept past a call.
 * Thread-safety: eval_run() blocks the calling thread until every batch it
 * submitted is answered; the engine's workers write only their own
 * batch's rows of the predictions, and the first failure under a lock local
 * to the call. Calls on different outcomes are independent; the printer
 * writes to stdout. */
#ifndef ANYTIME_TOOLS_EVAL_H
#define ANYTIME_TOOLS_EVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "anytime/model.h"
#include "anytime/status.h"
#include "tools/dataset.h"

/* How to run the evaluation. */
typedef struct eval_params {
  int variant;    /* index in the description's variants */
  int batch;      /* texts per engine request, 1..4096 */
  int workers;    /* engine worker threads, 1..256 */
  int max_length; /* > 0: truncate to this many tokens; else the model's limit */
} eval_params;

typedef struct eval_outcome {
  int *pred;       /* one predicted label id per row; -1 where none came */
  double seconds;  /* from the first submit to the last answer */
  bool failed;     /* an answer came back failed (the run is not scored) */
  char error[256]; /* then the first failed answer's message */
} eval_outcome;

/* The eval label rule for cli_dataset_load (tools/dataset.h), ctx the
 * model's at_model_desc: an id below its label count, or a name in its
 * id2label; -1 for neither. */
int eval_parse_label(const char *field, const void *ctx);

/* Run every row of ds through variant p->variant of d (a classifier with a
 * tokenizer and at least two labels) in batches of p->batch rows, waiting
 * while the engine's queue is full and, at the end, for every answer.
 * *out is filled (free it with eval_outcome_free) whatever is returned.
 * Returns AT_OK when every batch was submitted (out->failed says whether
 * each was answered), else the first failure's status — AT_ERR_NOMEM, or
 * that of the tokenizer load, the engine's creation, loading and start,
 * at_tokenizer_encode_batch, at_encodings_to_inputs or at_engine_submit —
 * after the batches submitted before it were answered. */
at_status eval_run(const at_model_desc *d, const eval_params *p, const cli_dataset *ds,
                   eval_outcome *out);

void eval_outcome_free(eval_outcome *out);

/* Print accuracy, count, time and the confusion matrix of out's predictions
 * against ds's labels on stdout (text, or one JSON object with json);
 * `data` names the dataset. Returns AT_OK, or AT_ERR_NOMEM (nothing
 * printed). */
at_status eval_print(const at_model_desc *d, const eval_params *p, const char *data,
                     const cli_dataset *ds, const eval_outcome *out, bool json);

#endif /* ANYTIME_TOOLS_EVAL_H */
