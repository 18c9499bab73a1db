/* src/model/sha256.c — SHA-256 (FIPS 180-4) in portable C, with a SHA-NI
 * path on x86-64 CPUs that have it (chosen at run time; both give the same
 * digest, and the unit test checks each against the standard vectors).
 * Used to key and checksum compiled artifacts (src/model/artifact_cache.c),
 * where hashing tens of megabytes sits on the start-up path. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "model/sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void blocks_portable(uint32_t h[8], const uint8_t *p, size_t nblocks) {
  for (; nblocks; nblocks--, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
      w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
             (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
      uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
}

typedef void (*blocks_fn)(uint32_t h[8], const uint8_t *p, size_t nblocks);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

/* The SHA extensions keep the state as two registers, ABEF and CDGH; each
 * _mm_sha256rnds2_epu32 does two rounds, and msg1/msg2 compute the schedule. */
__attribute__((target("sha,sse4.1"))) static void blocks_shani(uint32_t h[8], const uint8_t *p,
                                                                size_t nblocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);      /* DCBA */
  __m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);      /* HGFE */
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                          /* CDAB */
  st1 = _mm_shuffle_epi32(st1, 0x1B);                          /* EFGH */
  __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);                  /* ABEF */
  st1 = _mm_blend_epi16(st1, tmp, 0xF0);                       /* CDGH */
  for (; nblocks; nblocks--, p += 64) {
    __m128i save0 = st0, save1 = st1;
    __m128i m[4];
    for (int i = 0; i < 4; i++)
      m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
    for (int r = 0; r < 16; r++) {
      __m128i cur = m[r & 3];
      __m128i msg = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&K[4 * r]));
      st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
      msg = _mm_shuffle_epi32(msg, 0x0E);
      st0 = _mm_sha256rnds2_epu32(st0, st1, msg);
      if (r < 12) {
        /* next schedule word group: W[16+4r..] from m[r], m[r+1], m[r+2], m[r+3] */
        __m128i a = m[r & 3], b = m[(r + 1) & 3], c = m[(r + 2) & 3], d = m[(r + 3) & 3];
        __m128i t = _mm_sha256msg1_epu32(a, b);
        t = _mm_add_epi32(t, _mm_alignr_epi8(d, c, 4));
        m[r & 3] = _mm_sha256msg2_epu32(t, d);
      }
    }
    st0 = _mm_add_epi32(st0, save0);
    st1 = _mm_add_epi32(st1, save1);
  }
  tmp = _mm_shuffle_epi32(st0, 0x1B);                          /* FEBA */
  st1 = _mm_shuffle_epi32(st1, 0xB1);                          /* DCHG */
  st0 = _mm_blend_epi16(tmp, st1, 0xF0);                       /* DCBA */
  st1 = _mm_alignr_epi8(st1, tmp, 8);                          /* HGFE */
  _mm_storeu_si128((__m128i *)&h[0], st0);
  _mm_storeu_si128((__m128i *)&h[4], st1);
}

static int have_shani(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  if (!(b & (1u << 29))) return 0; /* SHA */
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  return (c & (1u << 19)) && (c & (1u << 9)); /* SSE4.1, SSSE3 */
}
#endif

static blocks_fn pick_blocks(void) {
  static blocks_fn chosen;
  blocks_fn f = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
  if (f) return f;
  f = blocks_portable;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const char *e = getenv("ANYTIME_SHA256_PORTABLE"); /* tests compare both paths */
  if (have_shani() && !(e && e[0] == '1')) f = blocks_shani;
#endif
  __atomic_store_n(&chosen, f, __ATOMIC_RELEASE);
  return f;
}

void at_sha256_init(at_sha256_ctx *c) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, iv, sizeof iv);
  c->total = 0;
  c->used = 0;
}

void at_sha256_update(at_sha256_ctx *c, const void *data, size_t len) {
  const uint8_t *p = data;
  blocks_fn blocks = pick_blocks();
  c->total += len;
  if (c->used) {
    size_t take = 64 - c->used < len ? 64 - c->used : len;
    memcpy(c->buf + c->used, p, take);
    c->used += take;
    p += take;
    len -= take;
    if (c->used < 64) return;
    blocks(c->h, c->buf, 1);
    c->used = 0;
  }
  if (len >= 64) {
    blocks(c->h, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
  }
  memcpy(c->buf, p, len);
  c->used = len;
}

void at_sha256_final(at_sha256_ctx *c, uint8_t out[32]) {
  uint64_t bits = c->total * 8;
  uint8_t pad[72] = {0x80};
  size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
  for (int i = 0; i < 8; i++) pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
  uint64_t keep = c->total;
  at_sha256_update(c, pad, padlen + 8);
  c->total = keep;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
}

void at_sha256_once(const void *data, size_t len, uint8_t out[32]) {
  at_sha256_ctx c;
  at_sha256_init(&c);
  at_sha256_update(&c, data, len);
  at_sha256_final(&c, out);
}

void at_sha256_hex(const uint8_t d[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = 0;
}

at_status at_sha256_file(const char *path, uint8_t out[32], uint64_t *size_out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return at_fail(errno == ENOENT ? AT_ERR_NOT_FOUND : AT_ERR_IO, "cannot open '%s': %s", path,
                   strerror(errno));
  static _Thread_local uint8_t buf[1 << 16];
  at_sha256_ctx c;
  at_sha256_init(&c);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return at_fail(AT_ERR_IO, "reading '%s': %s", path, strerror(e));
    }
    if (n == 0) break;
    at_sha256_update(&c, buf, (size_t)n);
    total += (uint64_t)n;
  }
  close(fd);
  at_sha256_final(&c, out);
  if (size_out) *size_out = total;
  return AT_OK;
}
