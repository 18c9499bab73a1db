/* tests/fuzz/fuzz_deadline.c — libFuzzer driver for the x-deadline-ms
 * header parser (at_plan_parse_deadline_ms, src/plan/erlang.c), held
 * against a second reading written here: blanks around; at most 32
 * characters of digits with one optional '.' and at least one digit; a
 * value above 0. Whatever one accepts the other must, with the same value
 * to 1e-9 (after the cap), and every accepted deadline is in (0, max].
 * Seeds: tests/fuzz/corpus/deadline/. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/plan.h"

#define DEFAULT_S 0.05
#define MAX_S 10.0

/* The second reading: 1 and the value in ms, or 0 (reject); -1: blank. */
static int reference(const char *s, long double *ms) {
  size_t a = 0, b = strlen(s);
  while (a < b && (s[a] == ' ' || s[a] == '\t')) a++;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) b--;
  if (a == b) return -1;
  if (b - a > 32) return 0;
  long double v = 0, scale = 1;
  int dots = 0, digits = 0;
  for (size_t i = a; i < b; i++) {
    if (s[i] == '.') {
      if (++dots > 1) return 0;
    } else if (s[i] >= '0' && s[i] <= '9') {
      digits++;
      if (dots) scale /= 10, v += (s[i] - '0') * scale;
      else v = v * 10 + (s[i] - '0');
    } else {
      return 0;
    }
  }
  if (!digits || !(v > 0)) return 0;
  *ms = v;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0'; /* a header value ends at its first NUL */
  double got = -1;
  at_status st = at_plan_parse_deadline_ms(s, DEFAULT_S, MAX_S, &got);
  long double ms = 0;
  int ref = reference(s, &ms);
  if (ref == 0) {
    if (st != AT_ERR_PARSE) abort();
  } else {
    if (st != AT_OK || !(got > 0) || got > MAX_S) abort();
    double want = ref < 0 ? DEFAULT_S : (double)fminl(ms / 1000.0L, MAX_S);
    if (fabs(got - want) > 1e-9 * want) abort();
  }
  free(s);
  return 0;
}
