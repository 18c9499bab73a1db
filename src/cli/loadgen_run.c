/* src/cli/loadgen_run.c — the client loop of `anytime loadgen`: one thread,
 * epoll, non-blocking loopback sockets, HTTP/1.1 keep-alive, a pool of
 * connections that grows on demand up to a cap.
 *
 * DESIGN
 *   Open loop: request i is due at start + schedule[i] whatever the server
 *     is doing. A timerfd armed at the next due time wakes the loop; due
 *     requests go to an idle connection, or to a new one while fewer than
 *     max_conns are open, or wait in a FIFO until a connection frees up
 *     (those are the "late sends" the summary counts). Latency is measured
 *     from the scheduled time, not the send time, so a slow sender cannot
 *     hide queueing (no coordinated omission).
 *   One request per connection at a time (no pipelining). A reused
 *     keep-alive connection that the server closed before answering is
 *     retried once on a fresh connection, as HTTP clients do; every other
 *     failure is recorded against its request.
 *   The run ends when every request is answered or failed, or drain_s
 *     after the schedule's end (what is still open is a timeout).
 *   Threads: only the caller's. No locks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cli/loadgen.h"

enum { C_CLOSED = 0, C_CONNECTING, C_IDLE, C_BUSY };

typedef struct conn {
  int fd;
  int state;
  bool reused; /* has finished a response on this fd */
  long req;    /* record index while C_CONNECTING/C_BUSY, else -1 */
  char *out;
  size_t out_len, out_off;
  char *in;
  size_t in_len, in_cap;
} conn;

typedef struct run {
  const lg_config *cfg;
  const double *sched;
  size_t n;
  const lg_data *data;
  lg_result *res;
  struct sockaddr_in addr;
  int ep, tfd;
  struct timespec t0;
  conn *conns;
  size_t max_conns, open_conns;
  size_t *pending; /* FIFO of due, unsent record indices (ring of n) */
  size_t p_head, p_count;
  int *retried;    /* per record */
  size_t done;     /* records with a final status */
  size_t out_cap;
  char *body;      /* scratch for decoded response bodies */
} run;

static double elapsed(const run *r) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - r->t0.tv_sec) + (double)(t.tv_nsec - r->t0.tv_nsec) * 1e-9;
}

static void arm_timer(run *r, double at_s) {
  struct itimerspec its = {0};
  long long ns = (long long)(at_s * 1e9);
  if (ns < 1) ns = 1;
  long long tot = (long long)r->t0.tv_nsec + ns;
  its.it_value.tv_sec = r->t0.tv_sec + (time_t)(tot / 1000000000LL);
  its.it_value.tv_nsec = (long)(tot % 1000000000LL);
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void finish(run *r, long req, int status) {
  lg_record *x = &r->res->records[req];
  x->status = status;
  if (status >= 100) x->latency_s = elapsed(r) - x->scheduled_s;
  r->done++;
}

static void push_front(run *r, size_t req) {
  r->p_head = (r->p_head + r->n - 1) % r->n;
  r->pending[r->p_head] = req;
  r->p_count++;
}

static void conn_close(run *r, conn *c) {
  if (c->fd >= 0) {
    epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    r->open_conns--;
  }
  c->fd = -1;
  c->state = C_CLOSED;
  c->reused = false;
  c->req = -1;
  c->in_len = 0;
}

static void set_events(run *r, conn *c, uint32_t ev) {
  struct epoll_event e = {.events = ev, .data.ptr = c};
  epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &e);
}

/* The request on c failed at the transport level. */
static void conn_fail(run *r, conn *c, int status) {
  long req = c->req;
  bool retry = req >= 0 && c->reused && c->in_len == 0 && !r->retried[req];
  conn_close(r, c);
  if (req < 0) return;
  if (retry) {
    r->retried[req] = 1;
    push_front(r, (size_t)req);
  } else {
    finish(r, req, status);
  }
}

static void conn_write(run *r, conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (k > 0) {
      c->out_off += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_events(r, c, EPOLLIN | EPOLLOUT);
      return;
    }
    conn_fail(r, c, LG_ERR_IO);
    return;
  }
  set_events(r, c, EPOLLIN);
}

static int variant_index(lg_result *res, const char *name) {
  if (!name[0]) return -1;
  for (int i = 0; i < res->n_variants; i++)
    if (strcmp(res->variants[i], name) == 0) return i;
  if (res->n_variants == LG_MAX_VARIANTS) return -1;
  snprintf(res->variants[res->n_variants], sizeof res->variants[0], "%s", name);
  return res->n_variants++;
}

/* Put request `req` on connection c (idle or just connected). */
static void conn_start(run *r, conn *c, size_t req) {
  lg_record *x = &r->res->records[req];
  const lg_item *it = &r->data->items[x->item];
  long len = lg_build_request(&r->cfg->url, it->text, r->cfg->deadline_ms, c->out, r->out_cap);
  c->req = (long)req;
  if (x->sent_s < 0) x->sent_s = elapsed(r);
  if (len < 0) {
    c->req = -1;
    finish(r, (long)req, LG_ERR_IO); /* text too large to send: recorded, not sent */
    c->state = C_IDLE;
    return;
  }
  c->out_len = (size_t)len;
  c->out_off = 0;
  c->in_len = 0;
  c->state = C_BUSY;
  conn_write(r, c);
}

static conn *conn_open(run *r) {
  conn *c = NULL;
  for (size_t i = 0; i < r->max_conns; i++)
    if (r->conns[i].state == C_CLOSED) {
      c = &r->conns[i];
      break;
    }
  if (!c) return NULL;
  if (!c->out) c->out = malloc(r->out_cap);
  if (!c->in && (c->in = malloc(8192)) != NULL) c->in_cap = 8192;
  if (!c->out || !c->in) return NULL;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return NULL;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc = connect(fd, (struct sockaddr *)&r->addr, sizeof r->addr);
  if (rc < 0 && errno != EINPROGRESS) {
    close(fd);
    return NULL;
  }
  c->fd = fd;
  c->state = C_CONNECTING;
  c->req = -1;
  c->reused = false;
  c->in_len = 0;
  struct epoll_event e = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
    close(fd);
    c->fd = -1;
    c->state = C_CLOSED;
    return NULL;
  }
  r->open_conns++;
  r->res->conns_opened++;
  if (r->open_conns > r->res->peak_conns) r->res->peak_conns = r->open_conns;
  return c;
}

static void dispatch(run *r) {
  while (r->p_count > 0) {
    conn *c = NULL, *waiting = NULL;
    for (size_t i = 0; i < r->max_conns && !c; i++) {
      conn *k = &r->conns[i];
      if (k->state == C_IDLE) c = k;
      else if (!waiting && k->state == C_CONNECTING && k->req < 0) waiting = k;
    }
    size_t req = r->pending[r->p_head];
    if (!c && !waiting && r->open_conns < r->max_conns) {
      waiting = conn_open(r);
      if (!waiting && r->open_conns == 0) { /* cannot connect at all: fail it */
        r->p_head = (r->p_head + 1) % r->n;
        r->p_count--;
        r->res->records[req].sent_s = elapsed(r);
        finish(r, (long)req, LG_ERR_CONNECT);
        continue;
      }
    }
    if (!c && !waiting) return; /* wait for a busy connection to free up */
    r->p_head = (r->p_head + 1) % r->n;
    r->p_count--;
    if (c) {
      conn_start(r, c, req);
    } else {
      waiting->req = (long)req; /* sent once the connection is up */
      if (r->res->records[req].sent_s < 0) r->res->records[req].sent_s = elapsed(r);
    }
  }
}

static void on_response(run *r, conn *c, const lg_response *resp) {
  long req = c->req;
  lg_record *x = &r->res->records[req];
  x->variant = variant_index(r->res, resp->variant);
  x->retry_after_s = resp->retry_after_s;
  x->inference_s = resp->inference_s;
  int label = r->data->items[x->item].label;
  if (resp->status == 200 && label >= 0) {
    char top[64];
    if (lg_top_label(r->body, resp->body_len, top, sizeof top) == 0)
      x->correct = strcmp(top, label ? "positive" : "negative") == 0;
    else
      x->correct = 0;
  }
  finish(r, req, resp->status);
  c->req = -1;
  c->reused = true;
  if (resp->keep_alive) {
    c->state = C_IDLE;
    c->in_len = 0;
    set_events(r, c, EPOLLIN);
  } else {
    conn_close(r, c);
  }
}

static void conn_read(run *r, conn *c) {
  for (;;) {
    if (c->in_len + 4096 > c->in_cap) {
      size_t nc = c->in_cap * 2;
      if (nc > LG_MAX_HEADER + LG_MAX_BODY + 65536) {
        conn_fail(r, c, LG_ERR_PARSE);
        return;
      }
      char *ni = realloc(c->in, nc);
      if (!ni) {
        conn_fail(r, c, LG_ERR_IO);
        return;
      }
      c->in = ni;
      c->in_cap = nc;
    }
    ssize_t k = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    bool eof = k == 0;
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      conn_fail(r, c, LG_ERR_IO);
      return;
    }
    c->in_len += (size_t)(k > 0 ? k : 0);
    if (c->state != C_BUSY) { /* idle: the server closed or spoke out of turn */
      conn_close(r, c);
      return;
    }
    lg_response resp;
    long used = lg_http_parse(c->in, c->in_len, eof, &resp, r->body, LG_MAX_BODY + 1);
    if (used < 0) {
      conn_fail(r, c, LG_ERR_PARSE);
      return;
    }
    if (used > 0) {
      if (resp.status < 200) { /* 1xx: drop it and keep reading */
        memmove(c->in, c->in + used, c->in_len - (size_t)used);
        c->in_len -= (size_t)used;
        continue;
      }
      on_response(r, c, &resp);
      return;
    }
    if (eof) {
      conn_fail(r, c, LG_ERR_IO);
      return;
    }
  }
}

static void on_event(run *r, conn *c, uint32_t ev) {
  if (c->state == C_CONNECTING) {
    int err = 0;
    socklen_t el = sizeof err;
    if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err != 0 || (ev & (EPOLLERR | EPOLLHUP))) {
      conn_fail(r, c, LG_ERR_CONNECT);
      return;
    }
    long req = c->req;
    c->state = C_IDLE;
    if (req >= 0) conn_start(r, c, (size_t)req);
    else set_events(r, c, EPOLLIN);
    return;
  }
  if (c->state == C_BUSY && (ev & EPOLLOUT) && c->out_off < c->out_len) conn_write(r, c);
  if (c->fd >= 0 && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))) conn_read(r, c);
}

int lg_run(const lg_config *cfg, const double *schedule, size_t n, double duration_s,
           const lg_data *data, lg_result *res, char *err, size_t err_len) {
  memset(res, 0, sizeof *res);
  res->duration_s = duration_s;
  if (!data || data->n == 0) {
    snprintf(err, err_len, "no data to send");
    return -1;
  }
  run r = {.cfg = cfg, .sched = schedule, .n = n, .data = data, .res = res, .ep = -1,
           .tfd = -1};
  r.addr.sin_family = AF_INET;
  r.addr.sin_port = htons((uint16_t)cfg->url.port);
  const char *host = strcmp(cfg->url.host, "localhost") == 0 ? "127.0.0.1" : cfg->url.host;
  if (inet_pton(AF_INET, host, &r.addr.sin_addr) != 1) {
    snprintf(err, err_len, "host must be a numeric IPv4 address or localhost: %s",
             cfg->url.host);
    return -1;
  }
  r.max_conns = cfg->max_conns ? cfg->max_conns : 512;
  size_t longest = 0;
  for (size_t i = 0; i < data->n; i++) {
    size_t l = strlen(data->items[i].text);
    if (l > longest) longest = l;
  }
  r.out_cap = longest * 6 + 2048 + strlen(cfg->url.path) + strlen(cfg->url.host);
  res->records = calloc(n ? n : 1, sizeof *res->records);
  r.pending = calloc(n ? n : 1, sizeof *r.pending);
  r.retried = calloc(n ? n : 1, sizeof *r.retried);
  r.conns = calloc(r.max_conns, sizeof *r.conns);
  r.body = malloc(LG_MAX_BODY + 1);
  int rc = -1;
  if (!res->records || !r.pending || !r.retried || !r.conns || !r.body) {
    snprintf(err, err_len, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < r.max_conns; i++) {
    r.conns[i].fd = -1;
    r.conns[i].req = -1;
  }
  at_rng pick;
  at_rng_seed(&pick, cfg->seed ^ 0x6c6f616467656e21ull);
  for (size_t i = 0; i < n; i++)
    res->records[i] = (lg_record){.scheduled_s = schedule[i], .sent_s = -1, .latency_s = -1,
                                  .status = LG_ERR_UNSENT, .variant = -1, .correct = -1,
                                  .item = (int)(at_rng_next(&pick) % data->n),
                                  .retry_after_s = -1, .inference_s = -1};
  r.ep = epoll_create1(EPOLL_CLOEXEC);
  r.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (r.ep < 0 || r.tfd < 0) {
    snprintf(err, err_len, "epoll/timerfd: %s", strerror(errno));
    goto out;
  }
  struct epoll_event te = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(r.ep, EPOLL_CTL_ADD, r.tfd, &te);
  clock_gettime(CLOCK_MONOTONIC, &r.t0);
  /* a few connections up front, so the first sends do not pay the connect */
  size_t init = cfg->initial_conns < r.max_conns ? cfg->initial_conns : r.max_conns;
  for (size_t i = 0; i < init; i++) conn_open(&r);

  double end_s = (n ? schedule[n - 1] : 0) > duration_s ? schedule[n - 1] : duration_s;
  end_s += cfg->drain_s > 0 ? cfg->drain_s : 10.0;
  size_t next = 0;
  struct epoll_event evs[256];
  for (;;) {
    double now = elapsed(&r);
    while (next < n && schedule[next] <= now) {
      r.pending[(r.p_head + r.p_count) % n] = next++;
      r.p_count++;
    }
    dispatch(&r);
    if (r.done == n) break;
    if (now >= end_s) {
      for (size_t i = 0; i < r.max_conns; i++) {
        conn *c = &r.conns[i];
        if (c->req >= 0 && r.res->records[c->req].status == LG_ERR_UNSENT)
          finish(&r, c->req, LG_ERR_TIMEOUT);
        c->req = -1;
      }
      /* still pending: never sent, stays LG_ERR_UNSENT */
      break;
    }
    arm_timer(&r, next < n ? schedule[next] : end_s);
    int k = epoll_wait(r.ep, evs, 256, -1);
    if (k < 0) {
      if (errno == EINTR) continue;
      snprintf(err, err_len, "epoll_wait: %s", strerror(errno));
      goto out;
    }
    for (int i = 0; i < k; i++) {
      if (!evs[i].data.ptr) {
        uint64_t ticks;
        ssize_t rd = read(r.tfd, &ticks, sizeof ticks);
        (void)rd;
        continue;
      }
      conn *c = evs[i].data.ptr;
      if (c->fd >= 0) on_event(&r, c, evs[i].events);
    }
  }
  rc = 0;
out:
  for (size_t i = 0; r.conns && i < r.max_conns; i++) {
    conn_close(&r, &r.conns[i]);
    free(r.conns[i].out);
    free(r.conns[i].in);
  }
  if (r.ep >= 0) close(r.ep);
  if (r.tfd >= 0) close(r.tfd);
  free(r.conns);
  free(r.pending);
  free(r.retried);
  free(r.body);
  res->n = n;
  if (rc != 0) {
    free(res->records);
    res->records = NULL;
    res->n = 0;
  }
  return rc;
}

void lg_result_free(lg_result *res) {
  if (!res) return;
  free(res->records);
  res->records = NULL;
  res->n = 0;
}
