/* tests/integration/http_concurrency.c — many concurrent clients against the
 * real server, every answer checked against a single-request reference.
 *
 * usage: http_concurrency PORT [clients=8] [per_client=200]
 *
 * R distinct requests (mixed routes: /predict with one and two texts, /embed,
 * /v1/embeddings, V2 infer with BYTES; texts of mixed lengths) are first
 * sent one at a time on one connection: each runs alone (batch 1), giving the
 * reference answers. Then `clients` threads, each on its own keep-alive
 * connection, send `per_client` requests drawn from the R, so the server
 * batches them with each other. Every concurrent answer must have status 200
 * and match its reference: same structure and strings, numbers within 1e-5.
 * Exit status 0 only if all match. */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int g_port;
#define R 40

typedef struct {
  const char *path;
  char body[2048];
  json_t *ref;
} request;
static request g_req[R];
static atomic_int g_bad, g_done;

static int connect_to(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("connect");
    exit(2);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* One request on a keep-alive connection; returns the status, body in *out. */
static int http_post(int fd, const char *path, const char *body, char **out) {
  char head[512];
  int hl = snprintf(head, sizeof head,
                    "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n", path, strlen(body));
  if (write(fd, head, (size_t)hl) != hl || write(fd, body, strlen(body)) != (ssize_t)strlen(body))
    return -1;
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  char *hend = NULL;
  while (!hend) {
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n <= 0) return free(buf), -1;
    len += (size_t)n;
    buf[len] = '\0';
    hend = strstr(buf, "\r\n\r\n");
  }
  int status = atoi(buf + 9);
  char *cl = strcasestr(buf, "content-length:");
  if (!cl || cl > hend) return free(buf), -1;
  size_t clen = strtoul(cl + 15, NULL, 10), hsize = (size_t)(hend + 4 - buf);
  while (len < hsize + clen) {
    if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n <= 0) return free(buf), -1;
    len += (size_t)n;
  }
  *out = malloc(clen + 1);
  memcpy(*out, buf + hsize, clen);
  (*out)[clen] = '\0';
  free(buf);
  return status;
}

static int same(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b))
    return fabs(json_number_value(a) - json_number_value(b)) <= 1e-5;
  if (json_typeof(a) != json_typeof(b)) return 0;
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!same(json_array_get(a, i), json_array_get(b, i))) return 0;
    return 1;
  }
  if (json_is_object(a)) {
    const char *k;
    json_t *v;
    if (json_object_size(a) != json_object_size(b)) return 0;
    json_object_foreach(a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !same(v, w)) return 0;
    }
    return 1;
  }
  return json_equal(a, b);
}

static const char *k_words[] = {"the", "movie", "was", "good", "bad", "great", "awful", "plot",
                                "acting", "not", "very", "fun", "dull", "and", "but", "story"};

static void build_requests(void) {
  for (int i = 0; i < R; i++) {
    char t1[512] = "", t2[512] = "";
    int n1 = 1 + (i * 7) % 30, n2 = 1 + (i * 11) % 17;
    for (int k = 0; k < n1; k++)
      strcat(t1, k_words[(i + k * 3) % 16]), strcat(t1, k + 1 < n1 ? " " : "");
    for (int k = 0; k < n2; k++)
      strcat(t2, k_words[(i * 5 + k) % 16]), strcat(t2, k + 1 < n2 ? " " : "");
    request *r = &g_req[i];
    switch (i % 5) {
      case 0: r->path = "/predict"; snprintf(r->body, sizeof r->body, "{\"inputs\":\"%s\"}", t1); break;
      case 1: /* a batch of two texts: a list of lists (["a", "b"] is one pair, as TEI reads it) */
        r->path = "/predict"; snprintf(r->body, sizeof r->body, "{\"inputs\":[[\"%s\"],[\"%s\"]]}", t1, t2); break;
      case 2: r->path = "/embed"; snprintf(r->body, sizeof r->body, "{\"inputs\":[\"%s\",\"%s\"]}", t1, t2); break;
      case 3: r->path = "/v1/embeddings"; snprintf(r->body, sizeof r->body, "{\"input\":\"%s\",\"model\":\"tiny-embedder\"}", t1); break;
      default:
        r->path = "/v2/models/tiny-classifier/infer";
        snprintf(r->body, sizeof r->body,
                 "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"%s\",\"%s\"]}],"
                 "\"outputs\":[{\"name\":\"logits\"},{\"name\":\"probabilities\"}]}", t1, t2);
    }
  }
}

static int g_per;
static void *client(void *arg) {
  int id = (int)(intptr_t)arg, fd = connect_to();
  for (int i = 0; i < g_per; i++) {
    request *r = &g_req[(id * 13 + i * 7) % R];
    char *body = NULL;
    int st = http_post(fd, r->path, r->body, &body);
    json_t *got = body ? json_loads(body, 0, NULL) : NULL;
    if (st != 200 || !got || !same(r->ref, got)) {
      if (atomic_fetch_add(&g_bad, 1) < 5)
        fprintf(stderr, "mismatch: %s %s -> %d %s\n", r->path, r->body, st, body ? body : "");
    }
    json_decref(got);
    free(body);
    atomic_fetch_add(&g_done, 1);
  }
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s PORT [clients] [per_client]\n", argv[0]), 2;
  g_port = atoi(argv[1]);
  int clients = argc > 2 ? atoi(argv[2]) : 8;
  g_per = argc > 3 ? atoi(argv[3]) : 200;
  build_requests();
  int fd = connect_to();
  for (int i = 0; i < R; i++) {
    char *body = NULL;
    int st = http_post(fd, g_req[i].path, g_req[i].body, &body);
    if (st != 200) return fprintf(stderr, "reference %d failed: %d %s\n", i, st, body ? body : ""), 1;
    g_req[i].ref = json_loads(body, 0, NULL);
    free(body);
  }
  close(fd);
  pthread_t th[256];
  for (int c = 0; c < clients && c < 256; c++) pthread_create(&th[c], NULL, client, (void *)(intptr_t)c);
  for (int c = 0; c < clients && c < 256; c++) pthread_join(th[c], NULL);
  printf("http concurrency: %d clients x %d requests = %d answers, %d distinct requests, %d mismatches\n",
         clients, g_per, atomic_load(&g_done), R, atomic_load(&g_bad));
  for (int i = 0; i < R; i++) json_decref(g_req[i].ref);
  return atomic_load(&g_bad) == 0 && atomic_load(&g_done) == clients * g_per ? 0 : 1;
}
