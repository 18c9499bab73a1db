/* tests/integration/conn_wave.c — a wave of requests that are all ready at
 * once on many keep-alive connections of one HTTP thread, every one of which
 * must be answered promptly.
 *
 * usage: conn_wave PORT SERVER_PID CONNECTIONS [ROUNDS=3] [LIMIT_MS=3000]
 *
 * Opens CONNECTIONS keep-alive connections and sends GET /health on each
 * (so the server has accepted all of them). Then, ROUNDS times: stops the
 * server (SIGSTOP), writes one GET /health on every connection, continues
 * it (SIGCONT), and waits for every answer. While stopped the kernel queues
 * every request, so the server's event loop wakes with all of them ready at
 * once — the case where a poller that returns a full batch of events and
 * then waits again for more can sit on the batch it already has. Every
 * answer must be a 200 within LIMIT_MS of SIGCONT; prints the slowest.
 * Exit status 0 only if all were. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static const char REQ[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

/* One connection's answer being read: the header until the blank line, then
 * Content-Length bytes. */
typedef struct {
  int fd;
  char buf[4096];
  size_t len;
  int status; /* 0 until the whole answer is in */
  double at_ms;
} conn;

/* Reads what is there; returns 1 when the answer is complete, 0 when more is
 * to come, -1 on a closed connection or a malformed answer. */
static int read_some(conn *c) {
  ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (r <= 0) return -1;
  c->len += (size_t)r;
  c->buf[c->len] = '\0';
  char *end = strstr(c->buf, "\r\n\r\n");
  if (!end) return c->len + 1 < sizeof c->buf ? 0 : -1;
  const char *cl = strcasestr(c->buf, "\r\ncontent-length:");
  size_t body = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
  size_t need = (size_t)(end + 4 - c->buf) + body;
  if (c->len < need) return 0;
  if (c->len > need) return -1; /* nothing was asked beyond this answer */
  c->status = atoi(c->buf + 9);
  c->len = 0;
  return 1;
}

/* Sends one request on every connection (the server stopped in between when
 * pid > 0) and waits for every answer; returns how many were 200 within
 * limit_ms of the continue, and the slowest answer's time. */
static int wave(conn *cs, size_t n, pid_t pid, double limit_ms, double *slowest_ms) {
  if (pid > 0 && kill(pid, SIGSTOP) != 0) return -1;
  if (pid > 0) usleep(20000); /* the stop lands before the first request */
  for (size_t i = 0; i < n; i++) {
    cs[i].status = 0, cs[i].len = 0;
    if (send_all(cs[i].fd, REQ, sizeof REQ - 1) != 0) {
      fprintf(stderr, "conn_wave: write on connection %zu failed: %s\n", i, strerror(errno));
      if (pid > 0) kill(pid, SIGCONT);
      return -1;
    }
  }
  if (pid > 0) usleep(20000); /* every request is in the server's socket buffers */
  double t0 = now_ms();
  if (pid > 0 && kill(pid, SIGCONT) != 0) return -1;
  struct pollfd *p = calloc(n, sizeof *p);
  if (!p) return -1;
  size_t done = 0;
  int ok = 0;
  *slowest_ms = 0;
  while (done < n) {
    double left = limit_ms - (now_ms() - t0);
    if (left <= 0) break;
    for (size_t i = 0; i < n; i++)
      p[i] = (struct pollfd){.fd = cs[i].status ? -1 : cs[i].fd, .events = POLLIN};
    int k = poll(p, n, (int)left + 1);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    for (size_t i = 0; i < n; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int r = read_some(&cs[i]);
      if (r < 0) cs[i].status = -1; /* closed, or an answer that is not HTTP */
      if (r != 0) {
        done++;
        cs[i].at_ms = now_ms() - t0;
        if (cs[i].status == 200) ok++;
        if (cs[i].at_ms > *slowest_ms) *slowest_ms = cs[i].at_ms;
      }
    }
  }
  free(p);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: conn_wave PORT SERVER_PID CONNECTIONS [ROUNDS=3] [LIMIT_MS=3000]\n");
    return 2;
  }
  int port = atoi(argv[1]);
  long nl = atol(argv[3]);
  pid_t pid = (pid_t)atol(argv[2]);
  int rounds = argc > 4 ? atoi(argv[4]) : 3;
  double limit_ms = argc > 5 ? atof(argv[5]) : 3000;
  if (port <= 0 || pid <= 0 || nl <= 0 || nl > 4000 || rounds <= 0 || !(limit_ms > 0)) {
    fprintf(stderr, "conn_wave: bad arguments\n");
    return 2;
  }
  size_t n = (size_t)nl;
  conn *cs = calloc(n, sizeof *cs);
  if (!cs) return 1;
  for (size_t i = 0; i < n; i++) {
    cs[i].fd = connect_to(port);
    if (cs[i].fd < 0) {
      fprintf(stderr, "conn_wave: connection %zu: %s\n", i, strerror(errno));
      return 1;
    }
  }
  double slowest;
  int ok = wave(cs, n, 0, 10000, &slowest); /* accepted and answered once, server running */
  if (ok != (int)n) {
    fprintf(stderr, "conn_wave: warm-up: %d of %zu answered 200\n", ok, n);
    return 1;
  }
  int bad = 0;
  for (int r = 0; r < rounds; r++) {
    ok = wave(cs, n, pid, limit_ms, &slowest);
    printf(
        "conn_wave: %zu connections, round %d: %d answered 200 within %.0f ms (slowest %.1f ms)\n",
        n, r + 1, ok, limit_ms, slowest);
    if (ok != (int)n) { /* the connections are out of step now: stop here */
      bad = 1;
      break;
    }
  }
  if (bad) kill(pid, SIGCONT); /* never leave the server stopped */
  for (size_t i = 0; i < n; i++) close(cs[i].fd);
  free(cs);
  return bad;
}
