/* src/tools/dataset.h — the one reader of labelled text datasets (CSV, RFC
 * 4180 quoting through anytime/csv.h) for every command and benchmark that
 * reads one: profile, eval, perplexity, loadgen, sweep, bench_decode. What a
 * label field means differs between them (a class id, a name in the
 * model's id2label, a sentiment word), so the caller passes the rule; how a
 * row is read does not:
 *   - an optional UTF-8 BOM; blank lines are skipped;
 *   - a first row that names a `label` and a `text` column is a header, and
 *     those columns are used (in any order, other columns ignored);
 *   - otherwise the label is the first field and the text the second, and a
 *     first row whose label the rule does not know is skipped as a header;
 *   - when the text column is the last, further fields (unquoted commas in
 *     the text) are joined back onto it with ',';
 *   - a row whose label the rule does not know is an error naming the row.
 * Not thread-safe per dataset; the rules are pure. */
#ifndef ANYTIME_TOOLS_DATASET_H
#define ANYTIME_TOOLS_DATASET_H

#include <stddef.h>

/* How a label field becomes a label id. */
typedef struct cli_labels {
  /* the field's id (>= 0), or -1 when the field is not a label */
  int (*parse)(const char *field, const void *ctx);
  const void *ctx;
  const char *what; /* what a label is, for errors: "an integer >= 0" */
} cli_labels;

/* Integers >= 0 (class ids). */
extern const cli_labels cli_labels_int;
/* Sentiment (the load generator's scoring): 1, positive, pos -> 1; 0, -1,
 * negative, neg -> 0 (case-insensitive names, leading spaces ignored). */
extern const cli_labels cli_labels_binary;

typedef struct cli_dataset {
  size_t n;
  int *labels;  /* the rule's ids */
  char **texts; /* NUL-terminated, owned */
  size_t *lens;
} cli_dataset;

/* Read `path`. Returns 0, or -1 with a message naming the file and, for a
 * bad row, the row (1-based, as an editor counts records) in err. */
int cli_dataset_load(const char *path, const cli_labels *rule, cli_dataset *out, char *err,
                     size_t errcap);
/* The same from a buffer (tests, fuzzing). */
int cli_dataset_parse(const char *buf, size_t len, const cli_labels *rule, cli_dataset *out,
                      char *err, size_t errcap);
void cli_dataset_free(cli_dataset *d);

/* $ANYTIME_DATA_DIR/pang-lee/test.csv, default ~/.cache/anytime/data/...:
 * the held-out test split (tools/train/fetch_data.sh writes it). */
void cli_default_test_csv(char *buf, size_t cap);
/* $ANYTIME_DATA_DIR/pang-lee-reviews/heldout.csv: the 150 full reviews the
 * decoder never trained on (tools/train/train_decoder.sh writes them). */
void cli_default_reviews_csv(char *buf, size_t cap);

#endif
