/* src/core/file.c — the library's one reader of a whole small file
 * (tokenizer.json, chat templates, CSV data, API keys and TLS material):
 * a regular file only, a size limit the caller names, the contents
 * NUL-terminated so that text parsers can take them as a string. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"

at_status at_read_file(const char *path, size_t max_bytes, const char *what, char **out,
                       size_t *len) {
  *out = NULL;
  if (len) *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return at_fail(AT_ERR_NOT_FOUND, "%s: %s: no such file", what, path);
    return at_fail(AT_ERR_IO, "%s: %s: %s", what, path, strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return at_fail(AT_ERR_IO, "%s: %s: not a regular file", what, path);
  }
  if ((size_t)st.st_size > max_bytes) {
    fclose(f);
    return at_fail(AT_ERR_LIMIT, "%s: %s is larger than %zu bytes", what, path, max_bytes);
  }
  char *buf = malloc((size_t)st.st_size + 1);
  if (!buf) {
    fclose(f);
    return at_fail(AT_ERR_NOMEM, "%s: out of memory for %s", what, path);
  }
  /* the size fstat gave, and no more: a file that grows meanwhile is read
   * as it was */
  size_t n = fread(buf, 1, (size_t)st.st_size, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return at_fail(AT_ERR_IO, "%s: %s: read error", what, path);
  }
  buf[n] = '\0';
  *out = buf;
  if (len) *len = n;
  return AT_OK;
}
