/* src/serve/grpc_server.h — the KServe V2 / Open Inference Protocol over
 * gRPC (service inference.GRPCInferenceService, src/serve/grpc_inference.proto)
 * on its own port, server.grpc_port / --grpc-port (0: off). Started after
 * the HTTP daemon by at_server_start(), stopped by at_server_stop() after
 * the drain (admitted gRPC calls count in the server's in-flight requests,
 * so the drain waits for their answers too). See grpc_server.c's DESIGN.
 * Internal to src/serve. */
#ifndef ANYTIME_SERVE_GRPC_SERVER_H
#define ANYTIME_SERVE_GRPC_SERVER_H

#include "anytime/status.h"

struct at_server;
typedef struct serve_grpc serve_grpc;

/* Listen on s->cfg.host:s->cfg.grpc_port (TLS with the HTTPS certificate
 * and key when the server has them) and start the completion-queue
 * thread. Sets s->grpc. Returns AT_OK, AT_ERR_IO (cannot listen),
 * AT_ERR_NOMEM, AT_ERR_THREAD. Call once, from at_server_start(). */
at_status serve_grpc_start(struct at_server *s);
/* Stop listening, cancel calls not yet admitted, join the thread, free
 * everything; NULL-safe and a no-op when gRPC is off. Call after the drain
 * (no admitted call left), before the batcher is destroyed. */
void serve_grpc_stop(serve_grpc *g);

#endif
