/* tests/unit/test_loadgen.c — `anytime loadgen`'s pieces: the Poisson
 * schedule (mean and spread over many draws, deterministic by seed), the
 * CSV reader, JSON escaping and request building, the HTTP response parser
 * (Content-Length, chunked, close-delimited, byte-by-byte, Retry-After and
 * retry-after-ms), the top-label reader, the retry rules after a 429 (at
 * once, the server's advice, the OpenAI SDK's backoff schedule), the
 * summary arithmetic over attempts and logical requests, and whole runs
 * against a small in-test HTTP responder on loopback (keep-alive, 429,
 * chunked, Connection: close, a slow server that must not slow the sender,
 * a connection cap; closed-loop clients that retry, and a burst). */
#define _GNU_SOURCE /* strcasestr in the responder */
#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/dataset.h"
#include "tools/loadgen.h"
#include "testutil.h"

/* ---- schedule -------------------------------------------------------------- */

static void test_poisson_schedule(void **state) {
  (void)state;
  double *t = NULL, *t2 = NULL, *t3 = NULL;
  size_t n = 0, n2 = 0, n3 = 0;
  const double rate = 1000, dur = 200; /* ~200000 arrivals */
  assert_int_equal(lg_schedule(42, rate, dur, 10000000, &t, &n), 0);
  assert_true(fabs((double)n - rate * dur) < 5 * sqrt(rate * dur));
  double sum = 0, sum2 = 0, prev = 0;
  size_t above = 0;
  for (size_t i = 0; i < n; i++) {
    double g = t[i] - prev;
    assert_true(g >= 0 && t[i] < dur);
    prev = t[i];
    sum += g;
    sum2 += g * g;
    above += g > 1.0 / rate;
  }
  double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  assert_true(fabs(mean * rate - 1) < 0.01);     /* mean gap 1/rate within 1% */
  assert_true(fabs(sd / mean - 1) < 0.02);       /* exponential: CV = 1 */
  assert_true(fabs((double)above / n - exp(-1)) < 0.005); /* P(gap > mean) = 1/e */
  /* deterministic by seed */
  assert_int_equal(lg_schedule(42, rate, dur, 10000000, &t2, &n2), 0);
  assert_int_equal(n, n2);
  assert_memory_equal(t, t2, n * sizeof *t);
  assert_int_equal(lg_schedule(43, rate, dur, 10000000, &t3, &n3), 0);
  assert_true(n3 != n || memcmp(t, t3, n * sizeof *t) != 0);
  free(t);
  free(t2);
  free(t3);
  /* the cap on arrivals */
  assert_int_equal(lg_schedule(1, 1000, 10, 100, &t, &n), -1);
  assert_null(t);
  at_rng r;
  at_rng_seed(&r, 7);
  for (int i = 0; i < 100000; i++) {
    double u = at_rng_uniform(&r);
    assert_true(u >= 0 && u < 1);
  }
}

/* ---- CSV ---------------------------------------------------------------- */

static void test_csv_reader(void **state) {
  (void)state;
  const char csv[] =
      "\xEF\xBB\xBFlabel,text\r\n"
      "1,plain text\r\n"
      "0,\"quoted, with comma\"\n"
      "-1,\"a \"\"quote\"\" and\na newline\"\n"
      "\n"
      "positive,unquoted, extra, commas\n"
      "negative,last line without newline";
  lg_data d;
  char err[128];
  assert_int_equal(lg_data_parse(csv, sizeof csv - 1, &d, err, sizeof err), 0);
  assert_int_equal(d.n, 5);
  assert_int_equal(d.items[0].label, 1);
  assert_string_equal(d.items[0].text, "plain text");
  assert_int_equal(d.items[1].label, 0);
  assert_string_equal(d.items[1].text, "quoted, with comma");
  assert_int_equal(d.items[2].label, 0);
  assert_string_equal(d.items[2].text, "a \"quote\" and\na newline");
  assert_int_equal(d.items[3].label, 1);
  assert_string_equal(d.items[3].text, "unquoted, extra, commas");
  assert_string_equal(d.items[4].text, "last line without newline");
  lg_data_free(&d);
  const char bad1[] = "label,text\n7,seven\n";
  assert_int_equal(lg_data_parse(bad1, sizeof bad1 - 1, &d, err, sizeof err), -1);
  assert_non_null(strstr(err, "row 2"));
  const char bad2[] = "1,\"never closed\n";
  assert_int_equal(lg_data_parse(bad2, sizeof bad2 - 1, &d, err, sizeof err), -1);
  assert_non_null(strstr(err, "quote"));
  const char bad3[] = "1\n";
  assert_int_equal(lg_data_parse(bad3, sizeof bad3 - 1, &d, err, sizeof err), -1);
  assert_int_equal(lg_data_parse("label,text\n", 11, &d, err, sizeof err), -1);
  assert_int_equal(lg_data_load("/nonexistent/x.csv", &d, err, sizeof err), -1);
}

/* The shared reader (tools/dataset.h) as profile and eval use it: a header
 * naming the columns in another order, extra columns, a text column that
 * is not last (no joining), the integer rule, a caller's own rule. */
static int two_names(const char *s, const void *ctx) {
  (void)ctx;
  return !strcmp(s, "bad") ? 0 : !strcmp(s, "good") ? 1 : -1;
}

static void test_dataset_reader(void **state) {
  (void)state;
  cli_dataset ds;
  char err[256];
  const char named[] = "id,text,label,source\n"
                       "7,\"first, quoted\",2,web\n"
                       "8,second,0,book,extra\n";
  assert_int_equal(cli_dataset_parse(named, sizeof named - 1, &cli_labels_int, &ds, err, sizeof err), 0);
  assert_int_equal(ds.n, 2);
  assert_string_equal(ds.texts[0], "first, quoted");
  assert_int_equal(ds.labels[0], 2);
  assert_string_equal(ds.texts[1], "second"); /* text is not the last column: nothing joined */
  assert_int_equal(ds.lens[1], 6);
  cli_dataset_free(&ds);
  const char unnamed[] = "3,a, b\n4,c\n";
  assert_int_equal(cli_dataset_parse(unnamed, sizeof unnamed - 1, &cli_labels_int, &ds, err, sizeof err), 0);
  assert_int_equal(ds.n, 2);
  assert_string_equal(ds.texts[0], "a, b");
  assert_int_equal(ds.labels[1], 4);
  cli_dataset_free(&ds);
  const char neg[] = "label,text\n1,ok\n-1,negative ids are not class ids\n";
  assert_int_equal(cli_dataset_parse(neg, sizeof neg - 1, &cli_labels_int, &ds, err, sizeof err), -1);
  assert_non_null(strstr(err, "row 3"));
  assert_non_null(strstr(err, "an integer >= 0"));
  cli_labels names = {.parse = two_names, .what = "bad or good"};
  const char words[] = "text,label\nfine,good\nawful,bad\n";
  assert_int_equal(cli_dataset_parse(words, sizeof words - 1, &names, &ds, err, sizeof err), 0);
  assert_int_equal(ds.n, 2);
  assert_int_equal(ds.labels[0], 1);
  assert_string_equal(ds.texts[1], "awful");
  cli_dataset_free(&ds);
  const char short_row[] = "text,label\nonly text\n";
  assert_int_equal(cli_dataset_parse(short_row, sizeof short_row - 1, &names, &ds, err, sizeof err), -1);
  assert_non_null(strstr(err, "row 2"));
  assert_int_equal(cli_dataset_load("/nonexistent/x.csv", &cli_labels_int, &ds, err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/x.csv"));
}

/* ---- requests --------------------------------------------------------------- */

static void test_escape_and_request(void **state) {
  (void)state;
  const char *text = "say \"hi\" \\ back\nnew\tline \x01 caf\xC3\xA9 }";
  lg_url u;
  assert_int_equal(lg_url_parse("http://127.0.0.1:8123/predict", &u), 0);
  assert_string_equal(u.host, "127.0.0.1");
  assert_int_equal(u.port, 8123);
  assert_string_equal(u.path, "/predict");
  char buf[4096];
  lg_request_spec spec = {.deadline_ms = 38.5};
  long len = lg_build_request(&u, &spec, text, buf, sizeof buf);
  assert_true(len > 0);
  buf[len] = '\0';
  assert_non_null(strstr(buf, "POST /predict HTTP/1.1\r\n"));
  assert_non_null(strstr(buf, "x-deadline-ms: 38.500\r\n"));
  char *body = strstr(buf, "\r\n\r\n") + 4;
  char *cl = strstr(buf, "Content-Length: ");
  assert_int_equal(atol(cl + 16), (long)strlen(body));
  json_error_t e;
  json_t *j = json_loads(body, 0, &e);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "inputs")), text);
  json_decref(j);
  assert_null(strstr(buf, "x-client-id"));
  /* no deadline: no header */
  len = lg_build_request(&u, NULL, "x", buf, sizeof buf);
  buf[len] = '\0';
  assert_null(strstr(buf, "x-deadline-ms"));
  /* --client-ids: client k names itself */
  spec = (lg_request_spec){.client_prefix = "polite", .client = 17};
  len = lg_build_request(&u, &spec, "x", buf, sizeof buf);
  buf[len] = '\0';
  assert_non_null(strstr(buf, "x-client-id: polite-17\r\n"));
  /* a completion: the prompt, max_tokens, temperature and the budgets */
  spec = (lg_request_spec){.max_tokens = 32, .temperature = 0.7, .ttft_ms = 500, .tpot_ms = 50};
  len = lg_build_request(&u, &spec, text, buf, sizeof buf);
  assert_true(len > 0);
  buf[len] = '\0';
  assert_non_null(strstr(buf, "x-ttft-ms: 500.000\r\n"));
  assert_non_null(strstr(buf, "x-tpot-ms: 50.000\r\n"));
  assert_null(strstr(buf, "x-deadline-ms"));
  body = strstr(buf, "\r\n\r\n") + 4;
  assert_int_equal(atol(strstr(buf, "Content-Length: ") + 16), (long)strlen(body));
  j = json_loads(body, 0, &e);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "prompt")), text);
  assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 32);
  assert_true(fabs(json_real_value(json_object_get(j, "temperature")) - 0.7) < 1e-9);
  assert_null(json_object_get(j, "inputs"));
  json_decref(j);
  /* too small a buffer */
  assert_int_equal(lg_build_request(&u, NULL, text, buf, 100), -1);
  assert_int_equal(lg_url_parse("http://localhost/p", &u), 0);
  assert_int_equal(u.port, 80);
  assert_int_equal(lg_url_parse("https://x/p", &u), -1);
  assert_int_equal(lg_url_parse("http://h:99999/p", &u), -1);
  assert_int_equal(lg_url_parse("http://:80/p", &u), -1);
  char small[8];
  size_t sl = 0;
  assert_int_equal(lg_json_escape("\"\"\"\"", small, &sl, sizeof small), -1);
}

/* ---- responses -------------------------------------------------------------- */

static char g_body[LG_MAX_BODY + 1];

static void test_http_parser(void **state) {
  (void)state;
  lg_response r;
  const char cl[] =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Variant: small-int8\r\n"
      "content-length: 12\r\n\r\n[1,2,3,4,5]\nEXTRA";
  size_t full = sizeof cl - 1 - 5;
  for (size_t k = 0; k < full; k++)
    assert_int_equal(lg_http_parse(cl, k, false, &r, g_body, sizeof g_body), 0);
  assert_int_equal(lg_http_parse(cl, sizeof cl - 1, false, &r, g_body, sizeof g_body),
                   (long)full);
  assert_int_equal(r.status, 200);
  assert_true(r.keep_alive);
  assert_string_equal(r.variant, "small-int8");
  assert_int_equal(r.body_len, 12);
  assert_memory_equal(g_body, "[1,2,3,4,5]\n", 12);
  assert_true(r.retry_after_s < 0);

  const char ch[] =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx-variant: big\r\n\r\n"
      "5;ext=1\r\nhello\r\n"
      "7\r\n, world\r\n"
      "0\r\nX-Trailer: t\r\n\r\n";
  for (size_t k = 0; k < sizeof ch - 1; k++)
    assert_int_equal(lg_http_parse(ch, k, false, &r, g_body, sizeof g_body), 0);
  assert_int_equal(lg_http_parse(ch, sizeof ch - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof ch - 1));
  assert_int_equal(r.body_len, 12);
  assert_memory_equal(g_body, "hello, world", 12);
  assert_string_equal(r.variant, "big");
  assert_true(r.inference_s < 0); /* no x-inference-time */

  const char inf[] = "HTTP/1.1 200 OK\r\nx-inference-time: 1.923\r\nContent-Length: 2\r\n\r\n[]";
  assert_int_equal(lg_http_parse(inf, sizeof inf - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof inf - 1));
  assert_true(fabs(r.inference_s - 0.001923) < 1e-12); /* milliseconds in, seconds out */
  assert_true(r.ttft_s < 0 && r.tpot_s < 0);
  const char gen[] = "HTTP/1.1 200 OK\r\nX-Time-To-First-Token: 12.5\r\n"
                     "x-time-per-output-token: 3.25\r\nContent-Length: 2\r\n\r\n{}";
  assert_int_equal(lg_http_parse(gen, sizeof gen - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof gen - 1));
  assert_true(fabs(r.ttft_s - 0.0125) < 1e-12 && fabs(r.tpot_s - 0.00325) < 1e-12);
  const char badinf[] = "HTTP/1.1 200 OK\r\nx-inference-time: soon\r\nContent-Length: 0\r\n\r\n";
  assert_int_equal(lg_http_parse(badinf, sizeof badinf - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof badinf - 1));
  assert_true(r.inference_s < 0); /* unparsable: ignored, not an error */

  const char rej[] =
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nConnection: close\r\n"
      "Content-Length: 0\r\n\r\n";
  assert_int_equal(lg_http_parse(rej, sizeof rej - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof rej - 1));
  assert_int_equal(r.status, 429);
  assert_false(r.keep_alive);
  assert_true(r.retry_after_s == 3);
  assert_true(r.retry_after_ms < 0); /* absent */

  const char rms[] =
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nretry-after-ms: 37.5\r\n"
      "Content-Length: 0\r\n\r\n";
  assert_int_equal(lg_http_parse(rms, sizeof rms - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof rms - 1));
  assert_true(r.retry_after_s == 1 && r.retry_after_ms == 37.5);
  const char date[] =
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
      "Retry-After-Ms: soon\r\nContent-Length: 0\r\n\r\n";
  assert_int_equal(lg_http_parse(date, sizeof date - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof date - 1));
  assert_true(r.retry_after_s < 0 && r.retry_after_ms < 0); /* not numbers: absent */

  const char old[] = "HTTP/1.0 200 OK\r\n\r\nuntil close";
  assert_int_equal(lg_http_parse(old, sizeof old - 1, false, &r, g_body, sizeof g_body), 0);
  assert_int_equal(lg_http_parse(old, sizeof old - 1, true, &r, g_body, sizeof g_body),
                   (long)(sizeof old - 1));
  assert_false(r.keep_alive);
  assert_string_equal(g_body, "until close");

  const char *bad[] = {
      "HTTP/2 200 OK\r\n\r\n",
      "HTTP/1.1 2x0 OK\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (lg_http_parse(bad[i], strlen(bad[i]), true, &r, g_body, sizeof g_body) != -1)
      fail_msg("accepted malformed response %zu", i);
  const char nc[] = "HTTP/1.1 204 No Content\r\n\r\n";
  assert_int_equal(lg_http_parse(nc, sizeof nc - 1, false, &r, g_body, sizeof g_body),
                   (long)(sizeof nc - 1));
}

static void test_top_label(void **state) {
  (void)state;
  char l[32];
  const char a[] = "[{\"label\":\"positive\",\"score\":0.93},{\"label\":\"negative\",\"score\":0.07}]";
  assert_int_equal(lg_top_label(a, sizeof a - 1, l, sizeof l), 0);
  assert_string_equal(l, "positive");
  const char b[] = "[{\"score\":0.2,\"label\":\"positive\"},{\"label\":\"negative\",\"score\":0.8}]";
  assert_int_equal(lg_top_label(b, sizeof b - 1, l, sizeof l), 0);
  assert_string_equal(l, "negative");
  const char c[] = "[[{\"label\":\"negative\",\"score\":0.6},{\"label\":\"positive\",\"score\":0.4}]]";
  assert_int_equal(lg_top_label(c, sizeof c - 1, l, sizeof l), 0);
  assert_string_equal(l, "negative");
  assert_int_equal(lg_top_label("[]", 2, l, sizeof l), -1);
  assert_int_equal(lg_top_label("{\"error\":\"x\"}", 13, l, sizeof l), -1);
  assert_int_equal(lg_top_label("not json", 8, l, sizeof l), -1);
}

/* ---- summary ----------------------------------------------------------------- */

static void test_summary_arithmetic(void **state) {
  (void)state;
#define R(sch, sent, lat, st, var, cor) \
  {.scheduled_s = sch, .sent_s = sent, .latency_s = lat, .status = st, .variant = var, \
   .correct = cor, .item = 0, .retry_after_s = -1, .inference_s = -1, .retry_after_ms = -1, \
   .client = -1, .attempt = 0, .origin_s = sch}
  lg_record r[] = {
      R(0.00, 0.000, 0.010, 200, 0, 1),
      R(0.10, 0.100, 0.030, 200, 1, 0),
      R(0.20, 0.200, 0.050, 200, 0, 1),  /* over the 40 ms deadline */
      R(0.30, 0.300, 0.001, 429, -1, -1),
      R(0.40, 0.400, 0.001, 429, -1, -1),
      R(0.50, 0.500, -1, LG_ERR_IO, -1, -1),
      R(0.60, -1, -1, LG_ERR_UNSENT, -1, -1), /* never sent */
      R(0.70, 0.705, 0.020, 200, 0, -1), /* late send, no label */
      R(0.80, 0.800, 0.002, 500, -1, -1),
      R(0.90, 0.900, 0.040, 200, 1, 1),  /* exactly at the deadline: in time */
  };
#undef R
  r[0].inference_s = 0.002, r[1].inference_s = 0.004, r[2].inference_s = 0.003;
  r[3].inference_s = 0.009; /* a 429 with the header: not a Run time */
  lg_summary s;
  lg_summarise(r, 10, 2, 2.0, 0.040, 0.001, &s);
  assert_true(s.inference_p50_s == 0.003); /* nearest rank of the three answered */
  /* 5 answers between the first send (0.000) and the last answer (0.940) */
  assert_true(fabs(s.answered_rps - 5 / 0.940) < 1e-9);
  assert_int_equal(s.scheduled, 10);
  assert_int_equal(s.sent, 9);
  assert_int_equal(s.answered, 5);
  assert_int_equal(s.rejected, 2);
  assert_int_equal(s.errors, 2);
  assert_int_equal(s.late_sends, 1);
  assert_int_equal(s.within_deadline, 4);
  assert_true(fabs(s.goodput_rps - 2.0) < 1e-12);
  assert_true(fabs(s.offered_rps - 4.5) < 1e-12);
  assert_true(fabs(s.attainment - 4.0 / 9) < 1e-12);
  assert_true(fabs(s.admitted_share - 7.0 / 9) < 1e-12);
  assert_int_equal(s.labelled, 4);
  assert_int_equal(s.correct, 3);
  assert_true(fabs(s.accuracy - 0.75) < 1e-12);
  assert_true(s.p50_s == 0.030); /* nearest rank of 5: 3rd */
  assert_true(s.p95_s == 0.050);
  assert_true(s.p99_s == 0.050);
  assert_int_equal(s.variant_count[0], 3);
  assert_int_equal(s.variant_count[1], 2);
  /* open loop: every attempt is its own logical request */
  assert_int_equal(s.retries, 0);
  assert_int_equal(s.logical, 9);
  assert_int_equal(s.logical_ok, 5);
  assert_int_equal(s.logical_in_time, 4);
  /* no deadline: every answer is in time */
  lg_summarise(r, 10, 2, 2.0, 0, 0.001, &s);
  assert_int_equal(s.within_deadline, 5);
  /* nothing answered */
  lg_summarise(r + 3, 2, 0, 1.0, 0.04, 0.001, &s);
  assert_true(isnan(s.p50_s) && isnan(s.accuracy) && isnan(s.inference_p50_s));
  assert_true(isnan(s.answered_rps));
  assert_true(s.admitted_share == 0 && s.attainment == 0);
}

/* ---- retries ------------------------------------------------------------------- */

static void test_retry_rules(void **state) {
  (void)state;
  lg_retry m;
  const char *names[] = {"none", "now", "after", "backoff"};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(lg_retry_parse(names[i], &m), 0);
    assert_int_equal((int)m, i);
    assert_string_equal(lg_retry_name(m), names[i]);
  }
  assert_int_equal(lg_retry_parse("sometimes", &m), -1);
  assert_int_equal(lg_retry_parse(NULL, &m), -1);

  /* the advice: retry-after-ms first, then Retry-After; 0 ms falls through
   * (openai-node treats it as unset) */
  assert_true(lg_retry_advice_s(250, 3) == 0.25);
  assert_true(lg_retry_advice_s(-1, 3) == 3);
  assert_true(lg_retry_advice_s(0, 3) == 3);
  assert_true(lg_retry_advice_s(0, -1) == 0);
  assert_true(lg_retry_advice_s(-1, -1) == -1);

  /* none gives up, now resends at once, whatever the headers say */
  for (int k = 0; k < 5; k++) {
    assert_true(lg_retry_delay_s(LG_RETRY_NONE, k, 30, 1, 0.5) == -1);
    assert_true(lg_retry_delay_s(LG_RETRY_NOW, k, 30, 1, 0.5) == 0);
  }
  /* after: the advice at every retry, 1 s when there is none */
  assert_true(lg_retry_delay_s(LG_RETRY_AFTER, 0, 30, 1, 0.5) == 0.030);
  assert_true(lg_retry_delay_s(LG_RETRY_AFTER, 7, -1, 2, 0.5) == 2);
  assert_true(lg_retry_delay_s(LG_RETRY_AFTER, 0, -1, -1, 0.5) == 1);
  assert_true(lg_retry_delay_s(LG_RETRY_AFTER, 0, 0, -1, 0.5) == 0);

  /* backoff, no usable advice: 0.5 s then 1 s, less up to 25 % jitter;
   * then give up (two retries) */
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, -1, -1, 0) == 0.5);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 1, -1, -1, 0) == 1.0);
  assert_true(fabs(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, -1, -1, 0.999999) - 0.375) < 1e-6);
  assert_true(fabs(lg_retry_delay_s(LG_RETRY_BACKOFF, 1, -1, -1, 0.5) - 0.875) < 1e-12);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 2, -1, -1, 0) == -1);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 2, 30, 1, 0) == -1);
  for (int i = 0; i < 1000; i++) { /* the jitter only ever shortens, by at most 25 % */
    double u = i / 1000.0, d0 = lg_retry_delay_s(LG_RETRY_BACKOFF, 0, -1, -1, u);
    assert_true(d0 > 0.375 - 1e-12 && d0 <= 0.5);
  }
  /* backoff honours the advice when 0 < it < 60 s, without jitter */
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, 30, 1, 0.9) == 0.030);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 1, -1, 2, 0.9) == 2);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, -1, 59.5, 0) == 59.5);
  /* ... and computes its own when it is 0, 60 s or more, or absent */
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, -1, 60, 0) == 0.5);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 1, -1, 3600, 0) == 1.0);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, 0, 0, 0) == 0.5);
  assert_true(lg_retry_delay_s(LG_RETRY_BACKOFF, 0, 60000, -1, 0) == 0.5);
}

/* Closed-loop records: attempts, retries and logical requests. */
static void test_summary_of_attempts(void **state) {
  (void)state;
#define A(cli, att, org, sch, lat, st) \
  {.scheduled_s = sch, .sent_s = sch, .latency_s = lat, .status = st, .variant = -1, \
   .correct = -1, .item = 0, .retry_after_s = -1, .inference_s = -1, .retry_after_ms = -1, \
   .client = cli, .attempt = att, .origin_s = org}
  lg_record r[] = {
      /* client 0: refused twice, then answered in 10 ms: in time for the
       * attempt (10 ms) but not from the first attempt (0.05 + 0.01 s) */
      A(0, 0, 0.00, 0.00, 0.001, 429),
      A(0, 1, 0.00, 0.02, 0.001, 429),
      A(0, 2, 0.00, 0.05, 0.010, 200),
      /* client 1: answered at once */
      A(1, 0, 0.10, 0.10, 0.005, 200),
      /* client 1: refused, gave up */
      A(1, 0, 0.20, 0.20, 0.001, 429),
      /* client 2: a transport error */
      A(2, 0, 0.30, 0.30, -1, LG_ERR_IO),
      /* client 2: refused, its retry answered late for the attempt too */
      A(2, 0, 1.20, 1.20, 0.001, 429),
      A(2, 1, 1.20, 1.21, 0.050, 200),
  };
#undef A
  lg_summary s;
  lg_summarise(r, 8, 0, 2.0, 0.040, 1, &s);
  assert_int_equal(s.sent, 8);
  assert_int_equal(s.retries, 3);
  assert_int_equal(s.logical, 5);
  assert_int_equal(s.answered, 3);
  assert_int_equal(s.rejected, 4);
  assert_int_equal(s.errors, 1);
  assert_int_equal(s.within_deadline, 2); /* per attempt: 10 ms and 5 ms */
  assert_true(fabs(s.goodput_rps - 1.0) < 1e-12);
  assert_int_equal(s.logical_ok, 3);
  assert_int_equal(s.logical_in_time, 1); /* only client 1's 5 ms answer */
  assert_true(fabs(s.logical_ok_share - 3.0 / 5) < 1e-12);
  /* no deadline: every answer in time */
  lg_summarise(r, 8, 0, 2.0, 0, 1, &s);
  assert_int_equal(s.logical_in_time, 3);

  /* the share of 200s in a window, by client */
  size_t sent = 0, ok = 0;
  assert_true(fabs(lg_window_ok_share(r, 8, -1, 0, 10, &sent, &ok) - 3.0 / 8) < 1e-12);
  assert_int_equal(sent, 8);
  assert_int_equal(ok, 3);
  assert_true(lg_window_ok_share(r, 8, 2, 1.0, 10, &sent, &ok) == 0.5);
  assert_int_equal(sent, 2);
  assert_true(lg_window_ok_share(r, 8, 1, 0.15, 0.25, &sent, &ok) == 0);
  assert_int_equal(sent, 1);
  assert_true(isnan(lg_window_ok_share(r, 8, 3, 0, 10, &sent, &ok)));
  assert_int_equal(sent, 0);
}

/* ---- an in-test HTTP responder ------------------------------------------------- */

typedef struct client {
  int fd;
  char in[65536];
  size_t in_len;
  double due;          /* when the pending response may go out; <0 none */
  char out[2048];
  size_t out_len;
  bool close_after;
} client;

typedef struct responder {
  int lfd, port;
  double delay_s;
  pthread_t th;
  atomic_int stop;
  atomic_int accepted, served;
  atomic_int reject_left; /* answer this many requests 429 with retry-after-ms: 30 */
  char last_deadline[32];
  client cl[600];
} responder;

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void make_response(responder *rs, client *c, const char *req, size_t hlen,
                          const char *body, size_t blen) {
  char text[4096] = "";
  json_error_t e;
  json_t *j = json_loadb(body, blen, 0, &e);
  if (j && json_is_string(json_object_get(j, "inputs")))
    snprintf(text, sizeof text, "%s", json_string_value(json_object_get(j, "inputs")));
  json_decref(j);
  const char *dl = strcasestr(req, "x-deadline-ms:");
  if (dl && dl < req + hlen) sscanf(dl + 14, " %31[0-9.]", rs->last_deadline);
  bool pos = strstr(text, "good") != NULL;
  const char *top = pos ? "positive" : "negative", *other = pos ? "negative" : "positive";
  char js[256];
  c->close_after = false;
  if (atomic_load(&rs->reject_left) > 0) {
    atomic_fetch_sub(&rs->reject_left, 1);
    c->out_len = (size_t)snprintf(c->out, sizeof c->out,
                                  "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n"
                                  "retry-after-ms: 30\r\nContent-Length: 0\r\n\r\n");
  } else if (strstr(text, "REJECT")) {
    c->out_len = (size_t)snprintf(c->out, sizeof c->out,
                                  "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\n"
                                  "Content-Length: 0\r\n\r\n");
  } else if (strstr(text, "CHUNK")) {
    /* lower score first: the reader must pick the highest */
    int jl = snprintf(js, sizeof js, "[{\"label\":\"%s\",\"score\":0.2},{\"label\":\"%s\",\"score\":0.8}]",
                      other, top);
    int half = jl / 2;
    c->out_len = (size_t)snprintf(c->out, sizeof c->out,
                                  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                  "x-variant: small\r\n\r\n%x\r\n%.*s\r\n%x\r\n%s\r\n0\r\n\r\n",
                                  half, half, js, jl - half, js + half);
  } else {
    snprintf(js, sizeof js, "[{\"label\":\"%s\",\"score\":0.9},{\"label\":\"%s\",\"score\":0.1}]",
             top, other);
    c->close_after = strstr(text, "CLOSE") != NULL;
    c->out_len = (size_t)snprintf(c->out, sizeof c->out,
                                  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                  "x-variant: big\r\n%sContent-Length: %zu\r\n\r\n%s",
                                  c->close_after ? "Connection: close\r\n" : "", strlen(js), js);
  }
  c->due = mono() + rs->delay_s;
}

static void client_drop(client *c) {
  close(c->fd);
  c->fd = -1;
}

static void *responder_main(void *arg) {
  responder *rs = arg;
  struct pollfd pf[601];
  while (!atomic_load(&rs->stop)) {
    int np = 0;
    pf[np++] = (struct pollfd){.fd = rs->lfd, .events = POLLIN};
    int map[600];
    double now = mono(), wait = 0.005;
    for (int i = 0; i < 600; i++) {
      client *c = &rs->cl[i];
      if (c->fd < 0) continue;
      if (c->due >= 0) {
        if (c->due <= now) {
          atomic_fetch_add(&rs->served, 1); /* before the client can see it */
          ssize_t w = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);
          (void)w;
          c->due = -1;
          if (c->close_after) {
            client_drop(c);
            continue;
          }
        } else if (c->due - now < wait) {
          wait = c->due - now;
        }
      }
      map[np] = i;
      pf[np++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
    }
    int k = poll(pf, (nfds_t)np, (int)(wait * 1000) + 1);
    if (k <= 0) continue;
    if (pf[0].revents & POLLIN) {
      int fd = accept(rs->lfd, NULL, NULL);
      if (fd >= 0) {
        int slot = -1;
        for (int i = 0; i < 600 && slot < 0; i++)
          if (rs->cl[i].fd < 0) slot = i;
        if (slot < 0) {
          close(fd);
        } else {
          rs->cl[slot] = (client){.fd = fd, .due = -1};
          atomic_fetch_add(&rs->accepted, 1);
        }
      }
    }
    for (int p = 1; p < np; p++) {
      if (!pf[p].revents) continue;
      client *c = &rs->cl[map[p]];
      ssize_t got = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len - 1, 0);
      if (got <= 0) {
        client_drop(c);
        continue;
      }
      c->in_len += (size_t)got;
      c->in[c->in_len] = '\0';
      char *he = strstr(c->in, "\r\n\r\n");
      if (!he || c->due >= 0) continue;
      size_t hlen = (size_t)(he - c->in) + 4;
      const char *clh = strcasestr(c->in, "content-length:");
      size_t blen = clh ? (size_t)atol(clh + 15) : 0;
      if (c->in_len < hlen + blen) continue;
      make_response(rs, c, c->in, hlen, c->in + hlen, blen);
      memmove(c->in, c->in + hlen + blen, c->in_len - hlen - blen);
      c->in_len -= hlen + blen;
    }
  }
  for (int i = 0; i < 600; i++)
    if (rs->cl[i].fd >= 0) client_drop(&rs->cl[i]);
  return NULL;
}

static responder *responder_start(double delay_s) {
  responder *rs = calloc(1, sizeof *rs);
  assert_non_null(rs);
  rs->delay_s = delay_s;
  for (int i = 0; i < 600; i++) rs->cl[i].fd = -1;
  rs->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(rs->lfd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(rs->lfd, 512), 0);
  socklen_t al = sizeof a;
  getsockname(rs->lfd, (struct sockaddr *)&a, &al);
  rs->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&rs->th, NULL, responder_main, rs), 0);
  return rs;
}

static void responder_stop(responder *rs) {
  atomic_store(&rs->stop, 1);
  pthread_join(rs->th, NULL);
  close(rs->lfd);
  free(rs);
}

static lg_config config_for(const responder *rs) {
  lg_config cfg = {.max_conns = 512, .initial_conns = 4, .late_s = 0.005, .drain_s = 10,
                   .seed = 5, .deadline_ms = 40};
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/predict", rs->port);
  assert_int_equal(lg_url_parse(url, &cfg.url), 0);
  return cfg;
}

static void test_run_against_responder(void **state) {
  (void)state;
  lg_item items[] = {
      {.text = "a good film", .label = 1},
      {.text = "a bad film", .label = 0},
      {.text = "CHUNK good", .label = 1},
      {.text = "CHUNK bad", .label = 0},
      {.text = "REJECT me", .label = 1},
      {.text = "CLOSE after this good one", .label = 1},
      {.text = "quotes \"good\" and\nnewlines \\ too", .label = 1},
  };
  lg_data data = {.items = items, .n = sizeof items / sizeof items[0]};
  responder *rs = responder_start(0);
  lg_config cfg = config_for(rs);
  double *sched;
  size_t n;
  assert_int_equal(lg_schedule(cfg.seed, 300, 1.0, 100000, &sched, &n), 0);
  lg_result res;
  char err[256];
  assert_int_equal(lg_run(&cfg, sched, n, 1.0, &data, &res, err, sizeof err), 0);
  assert_int_equal(res.n, n);
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, 1.0, 0, cfg.late_s, &s);
  assert_int_equal(s.sent, n);
  assert_int_equal(s.errors, 0);
  assert_int_equal(s.answered + s.rejected, n);
  size_t want_rej = 0, want_chunk = 0, want_close = 0;
  for (size_t i = 0; i < n; i++) {
    const lg_record *x = &res.records[i];
    assert_true(x->scheduled_s == sched[i]);
    const char *t = items[x->item].text;
    if (strstr(t, "REJECT")) {
      want_rej++;
      assert_int_equal(x->status, 429);
      assert_true(x->retry_after_s == 2);
    } else {
      assert_int_equal(x->status, 200);
      assert_int_equal(x->correct, 1);
      assert_true(x->latency_s >= 0 && x->latency_s < 5);
    }
    want_chunk += strstr(t, "CHUNK") != NULL;
    want_close += strstr(t, "CLOSE") != NULL;
  }
  assert_int_equal(s.rejected, want_rej);
  assert_true(want_rej > 0 && want_chunk > 0 && want_close > 0);
  assert_true(fabs(s.accuracy - 1.0) < 1e-12);
  assert_int_equal(res.n_variants, 2);
  for (int v = 0; v < 2; v++) {
    if (strcmp(res.variants[v], "small") == 0) assert_int_equal(s.variant_count[v], want_chunk);
    else assert_string_equal(res.variants[v], "big");
  }
  assert_string_equal(rs->last_deadline, "40.000");
  /* keep-alive: a new connection only after each Connection: close, plus a
   * few for overlap */
  assert_true(res.conns_opened <= cfg.initial_conns + want_close + 16);
  assert_int_equal(atomic_load(&rs->served), (int)n);
  /* the item choice is deterministic by seed */
  lg_result res2;
  assert_int_equal(lg_run(&cfg, sched, n, 1.0, &data, &res2, err, sizeof err), 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(res.records[i].item, res2.records[i].item);
  lg_result_free(&res);
  lg_result_free(&res2);
  free(sched);
  responder_stop(rs);
}

static void test_open_loop_with_slow_server(void **state) {
  (void)state;
  lg_item items[] = {{.text = "good", .label = 1}};
  lg_data data = {.items = items, .n = 1};
  responder *rs = responder_start(0.1); /* every answer takes 100 ms */
  lg_config cfg = config_for(rs);
  double *sched;
  size_t n;
  assert_int_equal(lg_schedule(11, 200, 1.0, 100000, &sched, &n), 0);
  lg_result res;
  char err[256];
  double t0 = mono();
  assert_int_equal(lg_run(&cfg, sched, n, 1.0, &data, &res, err, sizeof err), 0);
  double took = mono() - t0;
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, 1.0, 0.040, cfg.late_s, &s);
  /* the sender kept its schedule: ~20 requests in flight needed ~20
   * connections. Structural bounds only (this host's speed swings 2x and
   * the suite runs two tests at once): a sender that waited for answers
   * would need one connection and 200 x 0.1 s = 20 s. "Almost nothing late"
   * (<= 5 %) held on a quiet host and failed 3 runs in 5 beside a parity
   * run and a build (2026-12-01); half is what a blocking sender could
   * never meet. */
  assert_int_equal(s.sent, n);
  assert_int_equal(s.answered, n);
  assert_true(s.late_sends * 2 <= n);
  assert_true(res.peak_conns >= 10);
  assert_true(took < 10.0);
  assert_true(s.p50_s >= 0.1);
  assert_int_equal(s.within_deadline, 0); /* all later than 40 ms */
  lg_result_free(&res);
  free(sched);

  /* a cap of 2 connections: 20 answers/s for 100/s offered: most sends are
   * late, every request is still sent and answered */
  cfg.max_conns = 2;
  cfg.initial_conns = 2;
  assert_int_equal(lg_schedule(12, 100, 0.5, 100000, &sched, &n), 0);
  assert_int_equal(lg_run(&cfg, sched, n, 0.5, &data, &res, err, sizeof err), 0);
  lg_summarise(res.records, res.n, res.n_variants, 0.5, 0, cfg.late_s, &s);
  assert_int_equal(s.sent, n);
  assert_int_equal(s.answered, n);
  assert_true(s.late_sends * 2 >= n);
  assert_true(res.peak_conns <= 2);
  lg_result_free(&res);
  free(sched);
  responder_stop(rs);
}

static void test_connection_refused(void **state) {
  (void)state;
  responder *rs = responder_start(0);
  lg_config cfg = config_for(rs);
  responder_stop(rs); /* nobody listens on that port now */
  lg_item items[] = {{.text = "good", .label = 1}};
  lg_data data = {.items = items, .n = 1};
  double sched[] = {0.0, 0.01, 0.02};
  lg_result res;
  char err[256];
  cfg.drain_s = 1;
  assert_int_equal(lg_run(&cfg, sched, 3, 0.05, &data, &res, err, sizeof err), 0);
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, 0.05, 0, cfg.late_s, &s);
  assert_int_equal(s.errors, 3);
  assert_int_equal(s.answered, 0);
  for (int i = 0; i < 3; i++) assert_int_equal(res.records[i].status, LG_ERR_CONNECT);
  lg_result_free(&res);
}

/* Closed-loop clients against the responder: one answer each at a time,
 * the think time between them, and each retry rule after a 429. */
static void test_closed_loop(void **state) {
  (void)state;
  lg_item items[] = {{.text = "good", .label = 1}, {.text = "bad", .label = 0}};
  lg_data data = {.items = items, .n = 2};
  responder *rs = responder_start(0.002); /* 2 ms per answer */
  lg_config cfg = config_for(rs);
  cfg.drain_s = 2;
  lg_result res;
  char err[256];
  /* 4 clients back to back for 0.4 s: at most ~4 / 2 ms answers, never
   * more than 4 in flight, one connection each */
  lg_closed cl = {.clients = 4, .think_s = 0, .retry = LG_RETRY_NONE, .duration_s = 0.4};
  assert_int_equal(lg_run_closed(&cfg, &cl, &data, &res, err, sizeof err), 0);
  lg_summary s;
  lg_summarise(res.records, res.n, res.n_variants, 0.4, 0, cfg.late_s, &s);
  /* At most 4 clients x 0.4 s / 2 ms (+ the last one each) can be
   * answered; measured 660-712 (release, 8 runs) and 580-664 (ASan, 3
   * runs), 2026-12-02. The lower bound, 200, still passes a host 3x slower
   * than that and fails a loop that serialises its clients (at most 200). */
  print_message("closed loop, back to back: %zu answered (bounds 201..808)\n", (size_t)s.answered);
  assert_true(s.answered > 200 && s.answered <= 4 * 0.4 / 0.002 + 8);
  assert_int_equal(s.answered, s.sent);
  assert_int_equal(s.retries, 0);
  assert_int_equal(s.logical, s.sent);
  assert_true(fabs(s.accuracy - 1.0) < 1e-12);
  assert_int_equal(res.peak_conns, 4);
  for (size_t i = 0; i < res.n; i++) {
    assert_true(res.records[i].client >= 0 && res.records[i].client < 4);
    assert_true(res.records[i].scheduled_s < 0.4);
  }
  lg_result_free(&res);

  /* thinking 50 ms on average: about 4 / 52 ms requests per second */
  cl.think_s = 0.050;
  cl.duration_s = 1.0;
  assert_int_equal(lg_run_closed(&cfg, &cl, &data, &res, err, sizeof err), 0);
  lg_summarise(res.records, res.n, res.n_variants, 1.0, 0, cfg.late_s, &s);
  /* The think times are drawn from the run's seed, so the count is set by
   * them and the 2 ms answers: measured 87-88 (release, 8 runs,
   * 2026-12-02); no host can send more than the draws allow (~90). A host
   * 5x slower per answer (10 ms) would still send ~76, so 60 allows that;
   * a loop that ignores the think time sends ~800. */
  print_message("closed loop, 50 ms think: %zu sent (bounds 60..100)\n", (size_t)s.sent);
  assert_true(s.sent >= 60 && s.sent <= 100);
  lg_result_free(&res);

  /* the first 6 requests are refused with retry-after-ms: 30 */
  const lg_retry modes[] = {LG_RETRY_NONE, LG_RETRY_NOW, LG_RETRY_AFTER, LG_RETRY_BACKOFF};
  for (int m = 0; m < 4; m++) {
    atomic_store(&rs->reject_left, 6);
    lg_closed one = {.clients = 1, .think_s = 0, .retry = modes[m], .duration_s = 0.5};
    assert_int_equal(lg_run_closed(&cfg, &one, &data, &res, err, sizeof err), 0);
    lg_summarise(res.records, res.n, res.n_variants, 0.5, 0, cfg.late_s, &s);
    assert_int_equal(s.rejected, 6);
    double gap_min = 1e9, gap_max = 0;
    for (size_t i = 1; i < res.n; i++) { /* one client: strictly one after another */
      const lg_record *a = &res.records[i - 1], *b = &res.records[i];
      assert_true(b->scheduled_s >= a->scheduled_s + a->latency_s - 1e-9);
      if (a->status != 429) continue;
      double gap = b->scheduled_s - (a->scheduled_s + a->latency_s);
      double real = b->sent_s - (a->scheduled_s + a->latency_s); /* when it really left */
      if (modes[m] == LG_RETRY_NONE ||
          (modes[m] == LG_RETRY_BACKOFF && a->attempt == LG_BACKOFF_RETRIES)) {
        assert_int_equal(b->attempt, 0); /* gave up: a new logical request */
      } else {
        assert_int_equal(b->attempt, a->attempt + 1);
        assert_int_equal(b->item, a->item); /* the same text again */
        assert_true(b->origin_s == a->origin_s);
        gap_min = real < gap_min ? real : gap_min;
        gap_max = real > gap_max ? real : gap_max;
        /* the rule: the retry is due at the 429's arrival (at once) or 30
         * ms after it (the advice), counted from when the loop handled the
         * answer — microseconds after it was recorded (release: under
         * 1e-6 s; ASan on a loaded host: more), so 1 ms of room */
        double want = modes[m] == LG_RETRY_NOW ? 0 : 0.030;
        assert_true(gap >= want - 1e-9 && gap < want + 1e-3);
        /* when it really left: loose on purpose, this host is shared.
         * Measured 2026-12-02 (release 8 runs, ASan 3): at once 0.00-0.14 ms
         * after the 429, the advice 30.08-33.91 ms; the bounds allow a 25 ms / 50 ms
         * stall of the sending thread and still fail a rule that ignores or
         * overshoots the advice (the SDK's backoff waits >= 500 ms). */
        if (modes[m] == LG_RETRY_NOW) assert_true(real >= 0 && real < 0.025);
        else assert_true(real >= 0.030 - 1e-3 && real < 0.030 + 0.050);
      }
    }
    if (modes[m] == LG_RETRY_NOW || modes[m] == LG_RETRY_AFTER)
      print_message("retry mode %d: gaps after a 429 %.2f..%.2f ms\n", m, gap_min * 1e3,
                    gap_max * 1e3);
    if (modes[m] == LG_RETRY_NONE) assert_int_equal(s.retries, 0);
    if (modes[m] == LG_RETRY_NOW || modes[m] == LG_RETRY_AFTER) {
      assert_int_equal(s.retries, 6); /* every 429 retried */
      assert_int_equal(s.logical_ok, s.logical);
    }
    if (modes[m] == LG_RETRY_BACKOFF) { /* two retries, then it gives up */
      assert_int_equal(s.retries, 4);
      assert_int_equal(s.logical_ok + 2, s.logical);
    }
    lg_result_free(&res);
  }
  atomic_store(&rs->reject_left, 0);

  /* a burst: 6 clients back to back for 0.2 s, then 2 clients to 0.5 s */
  lg_closed b = {.clients = 2, .think_s = 0, .retry = LG_RETRY_NONE, .duration_s = 0.5,
                 .burst_s = 0.2, .burst_clients = 6};
  assert_int_equal(lg_run_closed(&cfg, &b, &data, &res, err, sizeof err), 0);
  size_t burst = 0, after = 0, sent = 0, ok = 0;
  for (size_t i = 0; i < res.n; i++) {
    const lg_record *x = &res.records[i];
    if (x->client < 6) burst++, assert_true(x->scheduled_s < 0.2);
    else after++, assert_true(x->scheduled_s >= 0.2 && x->scheduled_s < 0.5 && x->client < 8);
  }
  assert_true(burst > after && after > 10);
  assert_true(lg_window_ok_share(res.records, res.n, 6, 0.3, 0.5, &sent, &ok) == 1.0);
  assert_true(sent > 0);
  assert_int_equal(res.peak_conns, 8);
  lg_result_free(&res);

  /* bad parameters are refused */
  lg_closed bad = {.clients = 0, .duration_s = 1};
  assert_int_equal(lg_run_closed(&cfg, &bad, &data, &res, err, sizeof err), -1);
  bad = (lg_closed){.clients = 1, .duration_s = 1, .burst_s = 2, .burst_clients = 3};
  assert_int_equal(lg_run_closed(&cfg, &bad, &data, &res, err, sizeof err), -1);
  responder_stop(rs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poisson_schedule),
      cmocka_unit_test(test_csv_reader),
      cmocka_unit_test(test_dataset_reader),
      cmocka_unit_test(test_escape_and_request),
      cmocka_unit_test(test_http_parser),
      cmocka_unit_test(test_top_label),
      cmocka_unit_test(test_summary_arithmetic),
      cmocka_unit_test(test_retry_rules),
      cmocka_unit_test(test_summary_of_attempts),
      cmocka_unit_test(test_run_against_responder),
      cmocka_unit_test(test_open_loop_with_slow_server),
      cmocka_unit_test(test_connection_refused),
      cmocka_unit_test(test_closed_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
