/* src/tools/loadgen_run.c — the client loops of `anytime loadgen`: one
 * thread, epoll, non-blocking loopback sockets, HTTP/1.1 keep-alive. Two
 * ways to decide when a request goes out share the connection code:
 * open-loop Poisson (lg_run) and closed-loop clients (lg_run_closed).
 *
 * DESIGN
 *   Open loop: request i is due at start + schedule[i] whatever the server
 *     is doing. A timerfd armed at the next due time wakes the loop; due
 *     requests go to an idle connection, or to a new one while fewer than
 *     max_conns are open, or wait in a FIFO until a connection frees up
 *     (those are the "late sends" the summary counts). Latency is measured
 *     from the scheduled time, not the send time, so a slow sender cannot
 *     hide queueing (no coordinated omission).
 *   Closed loop: client i owns connection i. A min-heap of wake-up times
 *     (one entry per client at most) holds when each client sends next; when
 *     an answer arrives, the client's next wake-up is its think time (a new
 *     logical request) or its retry delay after a 429 (the same text again,
 *     attempt + 1; lg_retry_delay_s). Every attempt is its own record,
 *     appended in send order to a growing array (capped at LG_MAX_RECORDS).
 *     Latency is measured from the wake-up time.
 *   One request per connection at a time (no pipelining). A reused
 *     keep-alive connection that the server closed before answering is
 *     retried once on a fresh connection, as HTTP clients do; every other
 *     failure is recorded against its request.
 *   The run ends when every request is answered or failed (open loop) or
 *     no client will send again and nothing is in flight (closed loop), or
 *     drain_s after the last send was due (what is still open is a timeout).
 *   Threads: only the caller's. No locks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "tools/loadgen.h"

enum { C_CLOSED = 0, C_CONNECTING, C_IDLE, C_BUSY };

typedef struct conn {
  int fd;
  int state;
  uint32_t events; /* the mask epoll holds for fd (set_events skips a no-op) */
  bool reused; /* has finished a response on this fd */
  long req;    /* record index while C_CONNECTING/C_BUSY, else -1 */
  char *out;
  size_t out_len, out_off;
  char *in;
  size_t in_len, in_cap;
} conn;

/* A closed-loop client: what its next attempt sends, and when it stops. */
typedef struct client {
  int attempt;     /* of the logical request it is on: 0 first send, k k-th retry */
  int item;        /* its text */
  double origin_s; /* when that logical request's first attempt was due */
  double due_s;    /* when its next attempt is due (while in the heap) */
  double end_s;    /* it sends nothing at or after this */
  double think_s;  /* mean think time; 0 = back to back */
  lg_retry retry;
  at_rng rng;      /* texts, think times, backoff jitter */
} client;

typedef struct run {
  const lg_config *cfg;
  const double *sched;
  size_t n;          /* open loop: scheduled requests */
  const lg_data *data;
  lg_result *res;
  struct sockaddr_in addr;
  int ep, tfd;     /* tfd: only where the kernel lacks epoll_pwait2 (< 5.11) */
  struct timespec t0;
  conn *conns;
  size_t max_conns, open_conns;
  size_t *pending; /* open loop: FIFO of due, unsent record indices (ring of n) */
  size_t p_head, p_count;
  int *retried;    /* per record: already resent once after a stale keep-alive */
  size_t done;     /* records with a final status */
  size_t out_cap;
  char *body;      /* scratch for decoded response bodies */
  /* closed loop */
  bool closed;
  bool ending;     /* the run is over: clients schedule nothing more */
  client *clients; /* max_conns of them, client i on conns[i] */
  size_t *heap;    /* client indices, a min-heap on clients[].due_s */
  size_t heap_n;
  size_t cap_rec;  /* records (and retried) allocated */
  size_t in_flight;
} run;

static double elapsed(const run *r) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - r->t0.tv_sec) + (double)(t.tv_nsec - r->t0.tv_nsec) * 1e-9;
}

/* Wait for events until at_s (seconds since t0). epoll_pwait2 takes the
 * timeout in nanoseconds, so the open loop's wake-up at each request's due
 * time needs no timerfd_settime before every wait. Kernels before 5.11
 * lack it: then a timerfd in the epoll set wakes the wait. */
static void arm_timer(run *r, double at_s);
static int wait_events(run *r, double at_s, struct epoll_event *evs, int max) {
  if (r->tfd < 0) {
    double dt = at_s - elapsed(r);
    if (dt < 0) dt = 0;
    struct timespec to = {.tv_sec = (time_t)dt, .tv_nsec = (long)((dt - floor(dt)) * 1e9)};
    if (to.tv_nsec > 999999999L) to.tv_nsec = 999999999L;
    int k = epoll_pwait2(r->ep, evs, max, &to, NULL);
    if (k >= 0 || errno != ENOSYS) return k;
    r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event te = {.events = EPOLLIN, .data.ptr = NULL};
    if (r->tfd < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tfd, &te) < 0) return -1;
  }
  arm_timer(r, at_s);
  return epoll_wait(r->ep, evs, max, -1);
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

/* ---- the closed loop's wake-up heap ------------------------------------------ */

static bool heap_less(const run *r, size_t a, size_t b) {
  return r->clients[r->heap[a]].due_s < r->clients[r->heap[b]].due_s;
}

static void heap_swap(run *r, size_t a, size_t b) {
  size_t t = r->heap[a];
  r->heap[a] = r->heap[b];
  r->heap[b] = t;
}

/* Client ci sends next at due_s; a client whose next send would fall at or
 * after its end is finished instead. */
static void client_wake_at(run *r, size_t ci, double due_s) {
  client *cl = &r->clients[ci];
  if (r->ending || r->res->truncated || !(due_s < cl->end_s)) return;
  cl->due_s = due_s;
  size_t i = r->heap_n++;
  r->heap[i] = ci;
  while (i > 0 && heap_less(r, i, (i - 1) / 2)) {
    heap_swap(r, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static size_t heap_pop(run *r) {
  size_t top = r->heap[0], i = 0;
  r->heap[0] = r->heap[--r->heap_n];
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < r->heap_n && heap_less(r, l, m)) m = l;
    if (l + 1 < r->heap_n && heap_less(r, l + 1, m)) m = l + 1;
    if (m == i) break;
    heap_swap(r, i, m);
    i = m;
  }
  return top;
}

/* A closed-loop attempt ended (x is final): think and start a new logical
 * request, or retry this one after a 429 as the client's rule says. After
 * a transport error the client waits at least 10 ms. */
static void client_after(run *r, const lg_record *x) {
  size_t ci = (size_t)x->client;
  client *cl = &r->clients[ci];
  double now = elapsed(r);
  r->in_flight--;
  if (x->status == 429) {
    double u = at_rng_uniform(&cl->rng);
    double d = lg_retry_delay_s(cl->retry, x->attempt, x->retry_after_ms, x->retry_after_s, u);
    if (d >= 0) {
      cl->attempt = x->attempt + 1;
      client_wake_at(r, ci, now + d);
      return;
    }
  }
  cl->attempt = 0;
  cl->item = (int)(at_rng_next(&cl->rng) % r->data->n);
  double wait = cl->think_s > 0 ? lg_rng_exp(&cl->rng, 1.0 / cl->think_s) : 0;
  if (x->status < 100 && wait < 0.010) wait = 0.010;
  client_wake_at(r, ci, now + wait);
}

/* ---- connections --------------------------------------------------------------- */

static void finish(run *r, long req, int status) {
  lg_record *x = &r->res->records[req];
  x->status = status;
  if (status >= 100) x->latency_s = elapsed(r) - x->scheduled_s;
  r->done++;
  if (r->closed) client_after(r, x);
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
  if (c->events == ev) return; /* one syscall fewer per request: the mask rarely changes */
  struct epoll_event e = {.events = ev, .data.ptr = c};
  if (epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &e) == 0) c->events = ev;
}

/* Start connecting slot c (closed). Returns 0, or -1 (nothing changed). */
static int conn_open_at(run *r, conn *c) {
  if (!c->out) c->out = malloc(r->out_cap);
  if (!c->in && (c->in = malloc(8192)) != NULL) c->in_cap = 8192;
  if (!c->out || !c->in) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc = connect(fd, (struct sockaddr *)&r->addr, sizeof r->addr);
  if (rc < 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  struct epoll_event e = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
    close(fd);
    return -1;
  }
  c->fd = fd;
  c->events = e.events;
  c->state = C_CONNECTING;
  c->req = -1;
  c->reused = false;
  c->in_len = 0;
  r->open_conns++;
  r->res->conns_opened++;
  if (r->open_conns > r->res->peak_conns) r->res->peak_conns = r->open_conns;
  return 0;
}

/* Open loop: a new connection in the first closed slot, or NULL. */
static conn *conn_open(run *r) {
  for (size_t i = 0; i < r->max_conns; i++)
    if (r->conns[i].state == C_CLOSED) return conn_open_at(r, &r->conns[i]) == 0 ? &r->conns[i] : NULL;
  return NULL;
}

/* The request on c failed at the transport level. */
static void conn_fail(run *r, conn *c, int status) {
  long req = c->req;
  bool retry = req >= 0 && c->reused && c->in_len == 0 && !r->retried[req];
  conn_close(r, c);
  if (req < 0) return;
  if (retry) {
    r->retried[req] = 1;
    if (!r->closed) {
      push_front(r, (size_t)req);
      return;
    }
    if (conn_open_at(r, c) == 0) { /* closed loop: the same slot, afresh */
      c->req = req;
      return;
    }
    status = LG_ERR_CONNECT;
  }
  finish(r, req, status);
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
  lg_request_spec spec = r->cfg->spec;
  spec.deadline_ms = r->cfg->deadline_ms;
  spec.client = (int)(c - r->conns); /* closed loop: client i is on conns[i] */
  long len = lg_build_request(&r->cfg->url, &spec, it->text, c->out, r->out_cap);
  c->req = (long)req;
  if (x->sent_s < 0) x->sent_s = elapsed(r);
  if (len < 0) {
    c->req = -1;
    c->state = C_IDLE;
    finish(r, (long)req, LG_ERR_IO); /* text too large to send: recorded, not sent */
    return;
  }
  c->out_len = (size_t)len;
  c->out_off = 0;
  c->in_len = 0;
  c->state = C_BUSY;
  conn_write(r, c);
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
  x->retry_after_ms = resp->retry_after_ms;
  x->inference_s = resp->inference_s;
  x->ttft_s = resp->ttft_s;
  x->tpot_s = resp->tpot_s;
  int label = r->data->items[x->item].label;
  if (resp->status == 200 && label >= 0) {
    char top[64];
    if (lg_top_label(r->body, resp->body_len, top, sizeof top) == 0)
      x->correct = strcmp(top, label ? "positive" : "negative") == 0;
    else
      x->correct = 0;
  }
  c->req = -1;
  c->reused = true;
  if (resp->keep_alive) {
    c->state = C_IDLE;
    c->in_len = 0;
    set_events(r, c, EPOLLIN);
  } else {
    conn_close(r, c);
  }
  finish(r, req, resp->status); /* last: a closed-loop client may send again */
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

/* ---- closed-loop sends ------------------------------------------------------------ */

/* A new record at the end of the array (grown as needed), or -1 when
 * LG_MAX_RECORDS is reached or memory is out (the run is then truncated). */
static long record_new(run *r) {
  lg_result *res = r->res;
  if (res->n == r->cap_rec) {
    size_t nc = r->cap_rec * 2;
    if (nc > LG_MAX_RECORDS) nc = LG_MAX_RECORDS;
    lg_record *nr = nc > r->cap_rec ? realloc(res->records, nc * sizeof *nr) : NULL;
    if (nr) res->records = nr;
    int *nt = nr ? realloc(r->retried, nc * sizeof *nt) : NULL;
    if (nt) r->retried = nt;
    if (!nr || !nt) {
      res->truncated = true;
      return -1;
    }
    r->cap_rec = nc;
  }
  r->retried[res->n] = 0;
  return (long)res->n++;
}

/* Client ci's wake-up time has come: send its attempt on its connection. */
static void client_send(run *r, size_t ci) {
  client *cl = &r->clients[ci];
  conn *c = &r->conns[ci];
  long req = record_new(r);
  if (req < 0) return;
  if (cl->attempt == 0) cl->origin_s = cl->due_s;
  r->res->records[req] = (lg_record){
      .scheduled_s = cl->due_s, .sent_s = -1, .latency_s = -1, .status = LG_ERR_UNSENT,
      .variant = -1, .correct = -1, .item = cl->item, .retry_after_s = -1, .inference_s = -1,
      .retry_after_ms = -1, .ttft_s = -1, .tpot_s = -1, .client = (int)ci, .attempt = cl->attempt, .origin_s = cl->origin_s};
  r->in_flight++;
  if (c->state == C_IDLE) {
    conn_start(r, c, (size_t)req);
    return;
  }
  if (c->state == C_CLOSED && conn_open_at(r, c) != 0) {
    r->res->records[req].sent_s = elapsed(r);
    finish(r, req, LG_ERR_CONNECT);
    return;
  }
  c->req = req; /* connecting: sent once the connection is up */
  r->res->records[req].sent_s = elapsed(r);
}

/* ---- the loop ------------------------------------------------------------------------ */

/* Send what is due now; returns when the next send is due (INFINITY: none). */
static double feed(run *r, size_t *next) {
  double now = elapsed(r);
  if (!r->closed) {
    while (*next < r->n && r->sched[*next] <= now) {
      r->pending[(r->p_head + r->p_count) % r->n] = (*next)++;
      r->p_count++;
    }
    dispatch(r);
    return *next < r->n ? r->sched[*next] : INFINITY;
  }
  while (r->heap_n > 0 && r->clients[r->heap[0]].due_s <= now) client_send(r, heap_pop(r));
  return r->heap_n > 0 ? r->clients[r->heap[0]].due_s : INFINITY;
}

/* The drain time is over: what is still in flight timed out. */
static void expire(run *r) {
  r->ending = true;
  for (size_t i = 0; i < r->max_conns; i++) {
    conn *c = &r->conns[i];
    if (c->req >= 0 && r->res->records[c->req].status == LG_ERR_UNSENT)
      finish(r, c->req, LG_ERR_TIMEOUT);
    c->req = -1;
  }
  /* open loop, still pending: never sent, stays LG_ERR_UNSENT */
}

static int run_loop(run *r, double end_s, char *err, size_t err_len) {
  size_t next = 0;
  struct epoll_event evs[256];
  for (;;) {
    double wake = feed(r, &next);
    if (r->closed ? (r->heap_n == 0 && r->in_flight == 0) : r->done == r->n) return 0;
    if (elapsed(r) >= end_s) {
      expire(r);
      return 0;
    }
    int k = wait_events(r, wake < end_s ? wake : end_s, evs, 256);
    if (k < 0) {
      if (errno == EINTR) continue;
      snprintf(err, err_len, "epoll wait: %s", strerror(errno));
      return -1;
    }
    for (int i = 0; i < k; i++) {
      if (!evs[i].data.ptr) {
        uint64_t ticks;
        ssize_t rd = read(r->tfd, &ticks, sizeof ticks);
        (void)rd;
        continue;
      }
      conn *c = evs[i].data.ptr;
      if (c->fd >= 0) on_event(r, c, evs[i].events);
    }
  }
}

/* What both loops need: the address, buffers, n_conns connection slots,
 * epoll and the timer. Returns 0, or -1 with err set. */
static int run_setup(run *r, const lg_config *cfg, const lg_data *data, lg_result *res,
                     size_t n_conns, char *err, size_t err_len) {
  if (!data || data->n == 0) {
    snprintf(err, err_len, "no data to send");
    return -1;
  }
  r->cfg = cfg;
  r->data = data;
  r->res = res;
  r->addr.sin_family = AF_INET;
  r->addr.sin_port = htons((uint16_t)cfg->url.port);
  const char *host = strcmp(cfg->url.host, "localhost") == 0 ? "127.0.0.1" : cfg->url.host;
  if (inet_pton(AF_INET, host, &r->addr.sin_addr) != 1) {
    snprintf(err, err_len, "host must be a numeric IPv4 address or localhost: %s",
             cfg->url.host);
    return -1;
  }
  r->max_conns = n_conns;
  size_t longest = 0;
  for (size_t i = 0; i < data->n; i++) {
    size_t l = strlen(data->items[i].text);
    if (l > longest) longest = l;
  }
  r->out_cap = longest * 6 + 2048 + strlen(cfg->url.path) + strlen(cfg->url.host);
  r->conns = calloc(r->max_conns, sizeof *r->conns);
  r->body = malloc(LG_MAX_BODY + 1);
  if (!r->conns || !r->body) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < r->max_conns; i++) {
    r->conns[i].fd = -1;
    r->conns[i].req = -1;
  }
  r->ep = epoll_create1(EPOLL_CLOEXEC);
  if (r->ep < 0) {
    snprintf(err, err_len, "epoll: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static void run_teardown(run *r, int rc) {
  for (size_t i = 0; r->conns && i < r->max_conns; i++) {
    conn_close(r, &r->conns[i]);
    free(r->conns[i].out);
    free(r->conns[i].in);
  }
  if (r->ep >= 0) close(r->ep);
  if (r->tfd >= 0) close(r->tfd);
  free(r->conns);
  free(r->pending);
  free(r->retried);
  free(r->body);
  free(r->clients);
  free(r->heap);
  if (rc != 0) {
    free(r->res->records);
    r->res->records = NULL;
    r->res->n = 0;
  }
}

int lg_run(const lg_config *cfg, const double *schedule, size_t n, double duration_s,
           const lg_data *data, lg_result *res, char *err, size_t err_len) {
  memset(res, 0, sizeof *res);
  res->duration_s = duration_s;
  run r = {.sched = schedule, .n = n, .ep = -1, .tfd = -1};
  int rc = -1;
  if (run_setup(&r, cfg, data, res, cfg->max_conns ? cfg->max_conns : 512, err, err_len) != 0)
    goto out;
  res->records = calloc(n ? n : 1, sizeof *res->records);
  r.pending = calloc(n ? n : 1, sizeof *r.pending);
  r.retried = calloc(n ? n : 1, sizeof *r.retried);
  if (!res->records || !r.pending || !r.retried) {
    snprintf(err, err_len, "out of memory");
    goto out;
  }
  res->n = n;
  at_rng pick;
  at_rng_seed(&pick, cfg->seed ^ 0x6c6f616467656e21ull);
  for (size_t i = 0; i < n; i++)
    res->records[i] = (lg_record){.scheduled_s = schedule[i], .sent_s = -1, .latency_s = -1,
                                  .status = LG_ERR_UNSENT, .variant = -1, .correct = -1,
                                  .item = (int)(at_rng_next(&pick) % data->n),
                                  .retry_after_s = -1, .inference_s = -1,
                                  .retry_after_ms = -1, .ttft_s = -1, .tpot_s = -1,
                                  .client = -1, .attempt = 0,
                                  .origin_s = schedule[i]};
  clock_gettime(CLOCK_MONOTONIC, &r.t0);
  /* a few connections up front, so the first sends do not pay the connect */
  size_t init = cfg->initial_conns < r.max_conns ? cfg->initial_conns : r.max_conns;
  for (size_t i = 0; i < init; i++) conn_open(&r);
  double end_s = (n ? schedule[n - 1] : 0) > duration_s ? schedule[n - 1] : duration_s;
  end_s += cfg->drain_s > 0 ? cfg->drain_s : 10.0;
  rc = run_loop(&r, end_s, err, err_len);
out:
  run_teardown(&r, rc);
  return rc;
}

int lg_run_closed(const lg_config *cfg, const lg_closed *cl, const lg_data *data,
                  lg_result *res, char *err, size_t err_len) {
  memset(res, 0, sizeof *res);
  res->duration_s = cl->duration_s;
  size_t burst = cl->burst_s > 0 ? cl->burst_clients : 0, total = cl->clients + burst;
  if (cl->clients < 1 || total > 60000 || !(cl->duration_s > 0) || !(cl->think_s >= 0) ||
      !isfinite(cl->think_s) || (burst && !(cl->burst_s < cl->duration_s))) {
    snprintf(err, err_len, "closed loop: need 1..60000 clients, a duration > 0, a think time "
             ">= 0 and a burst shorter than the duration");
    return -1;
  }
  run r = {.closed = true, .ep = -1, .tfd = -1};
  int rc = -1;
  if (run_setup(&r, cfg, data, res, total, err, err_len) != 0) goto out;
  r.cap_rec = 4096;
  res->records = malloc(r.cap_rec * sizeof *res->records);
  r.retried = malloc(r.cap_rec * sizeof *r.retried);
  r.clients = calloc(total, sizeof *r.clients);
  r.heap = calloc(total, sizeof *r.heap);
  if (!res->records || !r.retried || !r.clients || !r.heap) {
    snprintf(err, err_len, "out of memory");
    goto out;
  }
  double start = burst ? cl->burst_s : 0;
  clock_gettime(CLOCK_MONOTONIC, &r.t0);
  for (size_t i = 0; i < total; i++) {
    client *c = &r.clients[i];
    bool b = i < burst;
    at_rng_seed(&c->rng, cfg->seed * 0x9e3779b97f4a7c15ull + 0x636c6f736564ull + i);
    c->retry = b ? LG_RETRY_NOW : cl->retry;
    c->think_s = b ? 0 : cl->think_s;
    c->end_s = b ? cl->burst_s : cl->duration_s;
    c->item = (int)(at_rng_next(&c->rng) % data->n);
    /* staggered starts: each client thinks once before its first request */
    double first = (b ? 0 : start) + (c->think_s > 0 ? lg_rng_exp(&c->rng, 1.0 / c->think_s) : 0);
    client_wake_at(&r, i, first);
  }
  rc = run_loop(&r, cl->duration_s + (cfg->drain_s > 0 ? cfg->drain_s : 10.0), err, err_len);
out:
  run_teardown(&r, rc);
  return rc;
}

void lg_result_free(lg_result *res) {
  if (!res) return;
  free(res->records);
  res->records = NULL;
  res->n = 0;
}
