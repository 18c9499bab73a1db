/* src/serve/holdq.h — suspended connections resumed at a due time (the
 * held refusals of clients that came back early; see holdq.c). Internal to
 * src/serve. */
#ifndef ANYTIME_SERVE_HOLDQ_H
#define ANYTIME_SERVE_HOLDQ_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

typedef struct serve_holdq serve_holdq;

/* Start the queue and its timer thread. AT_OK, AT_ERR_NOMEM, AT_ERR_INTERNAL. */
at_status serve_holdq_create(serve_holdq **out);
/* Resume `conn` (already suspended by the caller) at `due_ns` (at_now_ns
 * clock). After a flush, or without memory for it, it is resumed at once
 * and false is returned; the caller answers as it would on a timely
 * resume either way. Any thread. */
bool serve_holdq_add(serve_holdq *q, uint64_t due_ns, struct MHD_Connection *conn);
/* Resume every held connection now, and every later one on arrival. */
void serve_holdq_flush(serve_holdq *q);
/* Connections held now. */
size_t serve_holdq_len(serve_holdq *q);
/* Flush, join the thread, free. NULL is a no-op. */
void serve_holdq_destroy(serve_holdq *q);

#endif
