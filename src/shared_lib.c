/* src/shared_lib.c — the one source of libanytime.so of its own: the
 * library is the whole of libanytime.a (CMakeLists.txt links it whole), so
 * this file only names what the shared library is for. Programs that link
 * it see the functions include/anytime/ declares (AT_API) and nothing of
 * src/'s internals. */
#include "anytime/api.h"
