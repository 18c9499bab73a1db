/* src/cli/dataset.h — a labelled text dataset (CSV with header
 * `label,text`, RFC 4180 quoting) as the profile and sweep commands read it,
 * and the default location of the held-out test split. */
#ifndef ANYTIME_CLI_DATASET_H
#define ANYTIME_CLI_DATASET_H

#include <stddef.h>

typedef struct cli_dataset {
  size_t n;
  int *labels;
  char **texts;
  size_t *lens;
} cli_dataset;

/* Load `path`. Returns 0, or -1 with a message in err. */
int cli_dataset_load(const char *path, cli_dataset *out, char *err, size_t errcap);
void cli_dataset_free(cli_dataset *d);
/* $ANYTIME_DATA_DIR/pang-lee/test.csv, default ~/.cache/anytime/data/... */
void cli_default_test_csv(char *buf, size_t cap);
/* $ANYTIME_DATA_DIR/pang-lee-reviews/heldout.csv: the 150 full reviews the
 * decoder never trained on (tools/train/train_decoder.sh writes them). */
void cli_default_reviews_csv(char *buf, size_t cap);

#endif
