// xlacache's caching PJRT plugin.
//
// This library is itself a PJRT plugin: it exports GetPjrtApi. On the first
// call it loads the real ("inner") plugin named by XLACACHE_PJRT_INNER,
// copies the inner PJRT_Api table (up to the inner's own struct_size, so a
// plugin newer than the header this file is built with keeps every entry
// and its extension chain) and replaces one entry: PJRT_Client_Compile.
//
// A compile asks xlacache's helper process (`xlacache pjrt serve`, on the
// unix socket XLACACHE_PJRT_SOCKET) for the program. The helper owns every
// cache rule (keys, verification, signing, size bound, roles,
// single-flight, the shared tier) and answers with instructions:
//
//   L <entry>   load this entry: DeserializeAndLoad it and probe it
//   C <want>    compile through the inner plugin (and send the serialized
//               executable back when <want> is 1)
//   H           heartbeat: the helper is alive, still waiting for a peer
//   D <status>  done; status 'r' (refused) is followed by a message: the
//               helper's XLACACHE_REQUIRE_HIT=fail refused the compile
//
// The C side only moves bytes and calls PJRT. Every failure of the cache
// (no helper, a hung helper, a bad entry, a protocol error) ends in a plain
// inner compile after one log line: never worse than no cache. The one
// exception is XLACACHE_REQUIRE_HIT=fail (golden caches): a compile the
// helper refused, or one the wrapper would do without the helper, fails
// with a PJRT_Error of the wrapper's own that says why.
//
// Wire format, both ways: one type byte, a 4-byte big-endian length, the
// payload. The request's payload is a list of length-prefixed fields.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pjrt_c_api.h"

#define XC_PROTO "xlacache-pjrt/1"
// Frames larger than this are a protocol error (an entry is bounded by the
// cache's own size limits long before).
#define XC_MAX_FRAME (1u << 30)

extern char** environ;

static const PJRT_Api* inner;  // the inner plugin's table
static PJRT_Api* table;        // ours: a copy of inner's, one entry patched
static size_t inner_size;      // inner->struct_size
static char inner_path[4096];
static pthread_once_t once = PTHREAD_ONCE_INIT;

// Counters, read by tests and benchmarks through xlacache_pjrt_counters.
static atomic_ullong n_inner_compiles, n_hits, n_fallbacks, n_stored, ns_deserialize;
// Nanoseconds in the inner PJRT_Client_Compile, and in whole compile calls
// (what the host waits for a runnable program: a compile or a hit).
static atomic_ullong ns_inner_compile, ns_compile_call;
// Nanoseconds in a hit's probe (reading the loaded executable's output
// signature), apart from the deserialize: the benchmarks' breakdown.
static atomic_ullong ns_probe;

// One log line per kind of failure per process.
static atomic_int logged[16];
enum {
  LOG_NOINNER, LOG_CONNECT, LOG_PROTO, LOG_TIMEOUT, LOG_SPAWN, LOG_LOAD,
  LOG_SERIALIZE, LOG_TOPOLOGY, LOG_DONE
};

static void logf_once(int kind, const char* fmt, ...) {
  if (atomic_exchange(&logged[kind], 1)) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "xlacache-pjrt: %s\n", buf);
}

// trace appends one line per compile to XLACACHE_PJRT_TRACE, if set: the
// tests count inner compiles and hits across processes with it.
static void trace(const char* what) {
  const char* p = getenv("XLACACHE_PJRT_TRACE");
  if (!p || !*p) return;
  int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[128];
  int n = snprintf(line, sizeof line, "%d %s\n", (int)getpid(), what);
  if (write(fd, line, (size_t)n) < 0) { /* tracing is best effort */ }
  close(fd);
}

// has reports whether the inner table holds the entry at offset off.
#define HAS(field) \
  (offsetof(PJRT_Api, field) + sizeof(void*) <= inner_size && inner->field != NULL)

static PJRT_Error* xc_compile(PJRT_Client_Compile_Args* args);

// ---- errors of the wrapper's own ----
//
// A refused compile returns an error the wrapper made, which the host
// reads and frees through the table's error entries: those tell the
// wrapper's errors (kept in a list, almost always empty) from the inner
// plugin's, which they pass on.

typedef struct xc_error {
  struct xc_error* next;
  char* msg;
  size_t n;
} xc_error;
static pthread_mutex_t errs_mu = PTHREAD_MUTEX_INITIALIZER;
static xc_error* errs;
static int own_errors;  // the table's error entries are the wrapper's

static PJRT_Error* new_error(const char* msg, size_t n) {
  xc_error* e = malloc(sizeof *e);
  char* m = malloc(n + 1);
  if (!e || !m) {
    // Out of memory: an error we cannot make. The caller compiles.
    free(e);
    free(m);
    return NULL;
  }
  memcpy(m, msg, n);
  m[n] = 0;
  e->msg = m;
  e->n = n;
  pthread_mutex_lock(&errs_mu);
  e->next = errs;
  errs = e;
  pthread_mutex_unlock(&errs_mu);
  return (PJRT_Error*)e;
}

// own_error returns e when the wrapper made it (unlinking it when unlink
// is set), else NULL.
static xc_error* own_error(const PJRT_Error* e, int unlink) {
  pthread_mutex_lock(&errs_mu);
  xc_error** p = &errs;
  while (*p && (const void*)*p != (const void*)e) p = &(*p)->next;
  xc_error* got = *p;
  if (got && unlink) *p = got->next;
  pthread_mutex_unlock(&errs_mu);
  return got;
}

static void xc_error_destroy(PJRT_Error_Destroy_Args* a) {
  xc_error* e = own_error(a->error, 1);
  if (!e) {
    inner->PJRT_Error_Destroy(a);
    return;
  }
  free(e->msg);
  free(e);
}

static void xc_error_message(PJRT_Error_Message_Args* a) {
  xc_error* e = own_error(a->error, 0);
  if (!e) {
    inner->PJRT_Error_Message(a);
    return;
  }
  a->message = e->msg;
  a->message_size = e->n;
}

static PJRT_Error* xc_error_getcode(PJRT_Error_GetCode_Args* a) {
  if (!own_error(a->error, 0)) return inner->PJRT_Error_GetCode(a);
  a->code = PJRT_Error_Code_FAILED_PRECONDITION;
  return NULL;
}

// require_fail reports whether XLACACHE_REQUIRE_HIT is fail: a compile
// without the cache must then fail instead of happening.
static int require_fail(void) {
  const char* v = getenv("XLACACHE_REQUIRE_HIT");
  return v && strcasecmp(v, "fail") == 0;
}

static void load_inner(void) {
  const char* p = getenv("XLACACHE_PJRT_INNER");
  if (!p || !*p) {
    logf_once(LOG_NOINNER, "XLACACHE_PJRT_INNER is not set: no plugin to wrap");
    return;
  }
  snprintf(inner_path, sizeof inner_path, "%s", p);
  void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    logf_once(LOG_NOINNER, "cannot load inner plugin %s: %s", p, dlerror());
    return;
  }
  const PJRT_Api* (*get)(void) = (const PJRT_Api* (*)(void))dlsym(h, "GetPjrtApi");
  if (!get) {
    logf_once(LOG_NOINNER, "inner plugin %s exports no GetPjrtApi", p);
    return;
  }
  const PJRT_Api* api = get();
  if (!api || api->struct_size < offsetof(PJRT_Api, PJRT_Client_Compile) + sizeof(void*)) {
    logf_once(LOG_NOINNER, "inner plugin %s returned no usable API table", p);
    return;
  }
  // The whole inner table, however large: a host built against a newer
  // header than ours reads entries we do not know, and must find the
  // inner's. Version fields and the extension chain come along unchanged.
  PJRT_Api* t = malloc(api->struct_size);
  if (!t) return;
  memcpy(t, api, api->struct_size);
  inner = api;
  inner_size = api->struct_size;
  if (HAS(PJRT_Client_Compile)) t->PJRT_Client_Compile = xc_compile;
  if (HAS(PJRT_Error_Destroy) && HAS(PJRT_Error_Message) && HAS(PJRT_Error_GetCode)) {
    t->PJRT_Error_Destroy = xc_error_destroy;
    t->PJRT_Error_Message = xc_error_message;
    t->PJRT_Error_GetCode = xc_error_getcode;
    own_errors = 1;
  }
  table = t;
}

// GetPjrtApi is the PJRT entry point: the inner table with compilation
// going through the cache, or NULL when there is no inner plugin.
__attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi(void) {
  pthread_once(&once, load_inner);
  return table;
}

// xlacache_pjrt_counters reports inner compiles, cache hits, fallbacks
// (compiles without the cache), stored executables, and the nanoseconds
// spent in the inner DeserializeAndLoad, in the inner compile and in
// whole compile calls, and in hits' probes, for tests and benchmarks. n
// is the number of slots in out (older callers pass 5 or 7).
__attribute__((visibility("default"))) void xlacache_pjrt_counters(unsigned long long* out, int n) {
  unsigned long long v[8] = {atomic_load(&n_inner_compiles), atomic_load(&n_hits),
                             atomic_load(&n_fallbacks),      atomic_load(&n_stored),
                             atomic_load(&ns_deserialize),   atomic_load(&ns_inner_compile),
                             atomic_load(&ns_compile_call),  atomic_load(&ns_probe)};
  for (int i = 0; i < n && i < 8; i++) out[i] = v[i];
}

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec;
}

// ---- small helpers over the inner API ----

static void free_error(PJRT_Error* e) {
  if (!e) return;
  PJRT_Error_Destroy_Args a = {0};
  a.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  a.error = e;
  inner->PJRT_Error_Destroy(&a);
}

// error_text copies e's message into buf and frees e.
static void error_text(PJRT_Error* e, char* buf, size_t n) {
  PJRT_Error_Message_Args a = {0};
  a.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  a.error = e;
  inner->PJRT_Error_Message(&a);
  size_t m = a.message_size < n - 1 ? a.message_size : n - 1;
  memcpy(buf, a.message, m);
  buf[m] = 0;
  free_error(e);
}

static PJRT_Error* inner_compile(PJRT_Client_Compile_Args* args) {
  atomic_fetch_add(&n_inner_compiles, 1);
  trace("compile");
  unsigned long long t0 = now_ns();
  PJRT_Error* e = inner->PJRT_Client_Compile(args);
  atomic_fetch_add(&ns_inner_compile, now_ns() - t0);
  return e;
}

static void destroy_loaded(PJRT_LoadedExecutable* le) {
  if (!le || !HAS(PJRT_LoadedExecutable_Destroy)) return;
  PJRT_LoadedExecutable_Destroy_Args a = {0};
  a.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  a.executable = le;
  free_error(inner->PJRT_LoadedExecutable_Destroy(&a));
}

// A growable byte buffer.
typedef struct {
  char* p;
  size_t n, cap;
  int oom;
} buf_t;

static void put(buf_t* b, const void* d, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 4096;
    while (c < b->n + n) c *= 2;
    char* q = realloc(b->p, c);
    if (!q) { b->oom = 1; return; }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void put_u32(buf_t* b, uint32_t v) {
  unsigned char x[4] = {v >> 24, v >> 16, v >> 8, v};
  put(b, x, 4);
}

static void put_field(buf_t* b, const void* d, size_t n) {
  put_u32(b, (uint32_t)n);
  put(b, d, n);
}

static void put_str(buf_t* b, const char* s) { put_field(b, s, strlen(s)); }

// signature describes what an executable computes with: its outputs'
// count, element types and dimensions, as "o=N;t=T,T;d=AxB|C". Parts an
// inner plugin cannot report are "?". The helper compares it with what the
// program declares.
static void signature(PJRT_LoadedExecutable* le, buf_t* out) {
  char tmp[64];
  if (!HAS(PJRT_LoadedExecutable_GetExecutable) || !HAS(PJRT_Executable_NumOutputs)) {
    put(out, "o=?", 3);
    return;
  }
  PJRT_LoadedExecutable_GetExecutable_Args g = {0};
  g.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  g.loaded_executable = le;
  PJRT_Error* e = inner->PJRT_LoadedExecutable_GetExecutable(&g);
  if (e) { free_error(e); put(out, "o=?", 3); return; }
  PJRT_Executable* x = g.executable;
  PJRT_Executable_NumOutputs_Args no = {0};
  no.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  no.executable = x;
  e = inner->PJRT_Executable_NumOutputs(&no);
  if (e) {
    free_error(e);
    put(out, "o=?", 3);
  } else {
    snprintf(tmp, sizeof tmp, "o=%zu", no.num_outputs);
    put(out, tmp, strlen(tmp));
    put(out, ";t=", 3);
    PJRT_Executable_OutputElementTypes_Args ot = {0};
    ot.struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE;
    ot.executable = x;
    if (HAS(PJRT_Executable_OutputElementTypes) && !(e = inner->PJRT_Executable_OutputElementTypes(&ot))) {
      for (size_t i = 0; i < ot.num_output_types; i++) {
        snprintf(tmp, sizeof tmp, "%s%d", i ? "," : "", (int)ot.output_types[i]);
        put(out, tmp, strlen(tmp));
      }
    } else {
      free_error(e);
      put(out, "?", 1);
    }
    put(out, ";d=", 3);
    PJRT_Executable_OutputDimensions_Args od = {0};
    od.struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE;
    od.executable = x;
    if (HAS(PJRT_Executable_OutputDimensions) && !(e = inner->PJRT_Executable_OutputDimensions(&od))) {
      size_t k = 0;
      for (size_t i = 0; i < od.num_outputs; i++) {
        if (i) put(out, "|", 1);
        for (size_t j = 0; j < od.dim_sizes[i]; j++, k++) {
          snprintf(tmp, sizeof tmp, "%s%lld", j ? "x" : "", (long long)od.dims[k]);
          put(out, tmp, strlen(tmp));
        }
      }
    } else {
      free_error(e);
      put(out, "?", 1);
    }
  }
  if (HAS(PJRT_Executable_Destroy)) {
    PJRT_Executable_Destroy_Args d = {0};
    d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
    d.executable = x;
    free_error(inner->PJRT_Executable_Destroy(&d));
  }
}

// serialize appends le's serialized executable to out; 0 on success.
static int serialize(PJRT_LoadedExecutable* le, buf_t* out, char* err, size_t errn) {
  if (!HAS(PJRT_LoadedExecutable_GetExecutable) || !HAS(PJRT_Executable_Serialize)) {
    snprintf(err, errn, "inner plugin cannot serialize executables");
    return -1;
  }
  PJRT_LoadedExecutable_GetExecutable_Args g = {0};
  g.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  g.loaded_executable = le;
  PJRT_Error* e = inner->PJRT_LoadedExecutable_GetExecutable(&g);
  if (e) { error_text(e, err, errn); return -1; }
  PJRT_Executable_Serialize_Args s = {0};
  s.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
  s.executable = g.executable;
  e = inner->PJRT_Executable_Serialize(&s);
  int rc = 0;
  if (e) {
    error_text(e, err, errn);
    rc = -1;
  } else {
    put(out, s.serialized_bytes, s.serialized_bytes_size);
    if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
  }
  if (HAS(PJRT_Executable_Destroy)) {
    PJRT_Executable_Destroy_Args d = {0};
    d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
    d.executable = g.executable;
    free_error(inner->PJRT_Executable_Destroy(&d));
  }
  return rc;
}

// topology describes the client's devices as the key sees them: the
// process index and, for every device, its id, kind and process.
static int topology(PJRT_Client* c, buf_t* out) {
  char tmp[512];
  if (HAS(PJRT_Client_ProcessIndex)) {
    PJRT_Client_ProcessIndex_Args pi = {0};
    pi.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE;
    pi.client = c;
    PJRT_Error* e = inner->PJRT_Client_ProcessIndex(&pi);
    if (e) { free_error(e); return -1; }
    snprintf(tmp, sizeof tmp, "process=%d\n", pi.process_index);
    put(out, tmp, strlen(tmp));
  }
  if (!HAS(PJRT_Client_Devices) || !HAS(PJRT_Device_GetDescription)) return -1;
  PJRT_Client_Devices_Args d = {0};
  d.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE;
  d.client = c;
  PJRT_Error* e = inner->PJRT_Client_Devices(&d);
  if (e) { free_error(e); return -1; }
  for (size_t i = 0; i < d.num_devices; i++) {
    PJRT_Device_GetDescription_Args g = {0};
    g.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
    g.device = d.devices[i];
    if ((e = inner->PJRT_Device_GetDescription(&g))) { free_error(e); return -1; }
    int id = -1, proc = -1;
    const char* kind = "?";
    size_t kindn = 1;
    if (HAS(PJRT_DeviceDescription_Id)) {
      PJRT_DeviceDescription_Id_Args a = {0};
      a.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
      a.device_description = g.device_description;
      if ((e = inner->PJRT_DeviceDescription_Id(&a))) free_error(e); else id = a.id;
    }
    if (HAS(PJRT_DeviceDescription_ProcessIndex)) {
      PJRT_DeviceDescription_ProcessIndex_Args a = {0};
      a.struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE;
      a.device_description = g.device_description;
      if ((e = inner->PJRT_DeviceDescription_ProcessIndex(&a))) free_error(e); else proc = a.process_index;
    }
    if (HAS(PJRT_DeviceDescription_Kind)) {
      PJRT_DeviceDescription_Kind_Args a = {0};
      a.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
      a.device_description = g.device_description;
      if ((e = inner->PJRT_DeviceDescription_Kind(&a))) free_error(e);
      else { kind = a.device_kind; kindn = a.device_kind_size; }
    }
    snprintf(tmp, sizeof tmp, "device id=%d process=%d kind=%.*s\n", id, proc, (int)(kindn > 200 ? 200 : kindn), kind);
    put(out, tmp, strlen(tmp));
  }
  return 0;
}

static int client_string(PJRT_Client* c, int version, buf_t* out) {
  PJRT_Error* e;
  const char* s;
  size_t n;
  if (version) {
    if (!HAS(PJRT_Client_PlatformVersion)) return -1;
    PJRT_Client_PlatformVersion_Args a = {0};
    a.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
    a.client = c;
    if ((e = inner->PJRT_Client_PlatformVersion(&a))) { free_error(e); return -1; }
    s = a.platform_version;
    n = a.platform_version_size;
  } else {
    if (!HAS(PJRT_Client_PlatformName)) return -1;
    PJRT_Client_PlatformName_Args a = {0};
    a.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
    a.client = c;
    if ((e = inner->PJRT_Client_PlatformName(&a))) { free_error(e); return -1; }
    s = a.platform_name;
    n = a.platform_name_size;
  }
  put_field(out, s, n);
  return 0;
}

// ---- the socket ----

static long env_ms(const char* name, long def) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  char* end;
  long x = strtol(v, &end, 10);
  return (*end || x <= 0) ? def : x;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// io_full reads or writes exactly n bytes, waiting at most timeout_ms for
// each step of progress. A hung helper costs one timeout, never a hang.
static int io_full(int fd, void* p, size_t n, int writing, long timeout_ms) {
  char* c = p;
  while (n > 0) {
    struct pollfd pf = {fd, writing ? POLLOUT : POLLIN, 0};
    int r = poll(&pf, 1, (int)timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) { errno = ETIMEDOUT; return -1; }
    if (r < 0) return -1;
    ssize_t k = writing ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) { if (k == 0) errno = ECONNRESET; return -1; }
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

static int send_frame(int fd, char type, const void* p, size_t n, long timeout_ms) {
  unsigned char h[5] = {(unsigned char)type, n >> 24, n >> 16, n >> 8, n};
  if (io_full(fd, h, 5, 1, timeout_ms)) return -1;
  return n ? io_full(fd, (void*)p, n, 1, timeout_ms) : 0;
}

// recv_frame reads one frame into b (reset first); heartbeats are
// skipped, each one restarting the wait.
static int recv_frame(int fd, char* type, buf_t* b, long timeout_ms) {
  for (;;) {
    unsigned char h[5];
    if (io_full(fd, h, 5, 0, timeout_ms)) return -1;
    uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
    if (n > XC_MAX_FRAME) { errno = EPROTO; return -1; }
    b->n = 0;
    if (n) {
      if (n > b->cap) {
        char* q = realloc(b->p, n);
        if (!q) { errno = ENOMEM; return -1; }
        b->p = q;
        b->cap = n;
      }
      if (io_full(fd, b->p, n, 0, timeout_ms)) return -1;
      b->n = n;
    }
    if (h[0] != 'H') { *type = (char)h[0]; return 0; }
  }
}

static int try_connect(const char* path) {
  struct sockaddr_un a = {0};
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path) { errno = ENAMETOOLONG; return -1; }
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) return fd;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

static pthread_mutex_t spawn_mu = PTHREAD_MUTEX_INITIALIZER;
static int spawned;
static long long spawn_deadline;  // now_ms() until which to wait for it

// spawn_helper starts XLACACHE_PJRT_HELPER ("xlacache") as
// `xlacache pjrt serve --socket PATH --idle-exit D` (D: XLACACHE_PJRT_IDLE,
// default 10m), detached in its own session, once per process, and
// returns until when to wait for its socket. Two processes racing both
// start one: the helper's lock file lets one serve and the other exit.
static long long spawn_helper(const char* sock, long timeout_ms) {
  const char* helper = getenv("XLACACHE_PJRT_HELPER");
  long long deadline = 0;
  pthread_mutex_lock(&spawn_mu);
  if (!spawned) {
    spawned = 1;
    const char* idle = getenv("XLACACHE_PJRT_IDLE");
    if (!idle || !*idle) idle = "10m";
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    // Not the host's stderr: a helper outlives the host, and a pipe it
    // held open would keep whoever reads the host's output waiting.
    char logp[4200];
    snprintf(logp, sizeof logp, "%s.log", sock);
    posix_spawn_file_actions_addopen(&fa, 2, logp, O_WRONLY | O_APPEND | O_CREAT, 0600);
    char* argv[] = {(char*)helper, "pjrt", "serve", "--socket", (char*)sock,
                    "--idle-exit", (char*)idle, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, helper, &fa, &at, argv, environ);
    if (rc != 0)
      logf_once(LOG_SPAWN, "cannot start helper %s: %s; compiling without the cache", helper, strerror(rc));
    else
      spawn_deadline = now_ms() + timeout_ms;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
  }
  deadline = spawn_deadline;
  pthread_mutex_unlock(&spawn_mu);
  return deadline;
}

// connect_helper connects to the helper. When nobody listens and
// XLACACHE_PJRT_HELPER names the xlacache binary, the first compile of the
// process starts one, and compiles until its start-up deadline wait for
// it; after that a missing helper costs one failed connect.
static int connect_helper(const char* sock, long timeout_ms) {
  int fd = try_connect(sock);
  if (fd >= 0) return fd;
  if (errno != ENOENT && errno != ECONNREFUSED) return -1;
  const char* helper = getenv("XLACACHE_PJRT_HELPER");
  if (!helper || !*helper) return -1;
  long long end = spawn_helper(sock, timeout_ms);
  while (now_ms() < end) {
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);  // polling for the helper's socket to appear
    fd = try_connect(sock);
    if (fd >= 0) return fd;
  }
  errno = ECONNREFUSED;
  return -1;
}

// ---- the compile ----

// probe_and_keep deserializes the entry (signature length, signature,
// serialized executable) and checks it against want, the signature the
// helper expects. 0 and *out on success; otherwise a message in err.
static int load_entry(PJRT_Client_Compile_Args* args, const char* p, size_t n,
                      PJRT_LoadedExecutable** out, char* err, size_t errn) {
  // Payload of L: u32 len + expected signature, then the executable.
  if (n < 4) { snprintf(err, errn, "short load frame"); return -1; }
  uint32_t sl = (uint32_t)(unsigned char)p[0] << 24 | (uint32_t)(unsigned char)p[1] << 16 |
                (uint32_t)(unsigned char)p[2] << 8 | (unsigned char)p[3];
  if (sl > n - 4) { snprintf(err, errn, "bad signature length"); return -1; }
  const char* want = p + 4;
  const char* exe = want + sl;
  size_t exen = n - 4 - sl;
  if (!HAS(PJRT_Executable_DeserializeAndLoad)) {
    snprintf(err, errn, "inner plugin cannot deserialize executables");
    return -1;
  }
  PJRT_Executable_DeserializeAndLoad_Args d = {0};
  d.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
  d.client = args->client;
  d.serialized_executable = exe;
  d.serialized_executable_size = exen;
  // The compile's own options, so the loaded executable runs as the
  // compiled one would; none (NULL), never an empty message, when the
  // caller gave none.
  if (args->compile_options_size > 0) {
    d.overridden_serialized_compile_options = args->compile_options;
    d.overridden_serialized_compile_options_size = args->compile_options_size;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  PJRT_Error* e = inner->PJRT_Executable_DeserializeAndLoad(&d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  atomic_fetch_add(&ns_deserialize, (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)));
  if (e) {
    char m[512];
    error_text(e, m, sizeof m);
    snprintf(err, errn, "deserialize: %s", m);
    return -1;
  }
  buf_t sig = {0};
  unsigned long long p0 = now_ns();
  signature(d.loaded_executable, &sig);
  atomic_fetch_add(&ns_probe, now_ns() - p0);
  if (sig.oom || sig.n != sl || memcmp(sig.p, want, sl) != 0) {
    snprintf(err, errn, "probe: executable has %.*s, program declares %.*s",
             (int)(sig.n > 200 ? 200 : sig.n), sig.p ? sig.p : "", (int)(sl > 200 ? 200 : sl), want);
    free(sig.p);
    destroy_loaded(d.loaded_executable);
    return -1;
  }
  free(sig.p);
  *out = d.loaded_executable;
  return 0;
}

// refuse returns the error of a compile XLACACHE_REQUIRE_HIT=fail
// forbids, or NULL when the wrapper cannot make one (the caller compiles).
static PJRT_Error* refuse(const char* msg, size_t n) {
  if (!own_errors) return NULL;
  PJRT_Error* e = new_error(msg, n);
  if (e) trace("refused");
  return e;
}

// fallback compiles without the cache (why says why), unless
// XLACACHE_REQUIRE_HIT=fail forbids it.
static PJRT_Error* fallback(PJRT_Client_Compile_Args* args, const char* why) {
  if (require_fail()) {
    char msg[512];
    int n = snprintf(msg, sizeof msg,
                     "xlacache-pjrt: the cache could not serve this program (%s) and "
                     "XLACACHE_REQUIRE_HIT=fail forbids compiling it", why);
    PJRT_Error* e = refuse(msg, n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    if (e) return e;
  }
  atomic_fetch_add(&n_fallbacks, 1);
  trace("fallback");
  return inner_compile(args);
}

static PJRT_Error* xc_compile_cached(PJRT_Client_Compile_Args* args);

// xc_compile is the PJRT_Client_Compile of the wrapper's table.
static PJRT_Error* xc_compile(PJRT_Client_Compile_Args* args) {
  unsigned long long t0 = now_ns();
  PJRT_Error* e = xc_compile_cached(args);
  atomic_fetch_add(&ns_compile_call, now_ns() - t0);
  return e;
}

static PJRT_Error* xc_compile_cached(PJRT_Client_Compile_Args* args) {
  const char* sock = getenv("XLACACHE_PJRT_SOCKET");
  if (!sock || !*sock || !args || !args->program) return inner_compile(args);
  long timeout = env_ms("XLACACHE_PJRT_TIMEOUT_MS", 10000);

  buf_t req = {0};
  put_str(&req, XC_PROTO);
  put_field(&req, args->program->format, args->program->format_size);
  put_field(&req, args->program->code, args->program->code_size);
  put_field(&req, args->compile_options, args->compile_options_size);
  put_str(&req, inner_path);
  char ver[64];
  snprintf(ver, sizeof ver, "%d.%d", inner->pjrt_api_version.major_version,
           inner->pjrt_api_version.minor_version);
  put_str(&req, ver);
  buf_t topo = {0};
  if (client_string(args->client, 0, &req) || client_string(args->client, 1, &req) ||
      topology(args->client, &topo) || topo.oom) {
    logf_once(LOG_TOPOLOGY, "cannot read the client's platform or devices; compiling without the cache");
    free(req.p);
    free(topo.p);
    return fallback(args, "cannot read the client's platform or devices");
  }
  put_field(&req, topo.p, topo.n);
  free(topo.p);
  if (req.oom) { free(req.p); return fallback(args, "out of memory"); }

  int fd = connect_helper(sock, timeout);
  if (fd < 0) {
    logf_once(LOG_CONNECT, "cannot reach the cache helper at %s (%s); compiling without the cache", sock, strerror(errno));
    free(req.p);
    return fallback(args, "cache helper unreachable");
  }
  PJRT_LoadedExecutable* got = NULL;  // loaded or compiled
  PJRT_Error* compile_err = NULL;     // the inner compile's own error
  int compiled = 0, hit = 0, ok = 0, refused = 0;
  buf_t in = {0};
  char err[1024];
  if (send_frame(fd, 'Q', req.p, req.n, timeout)) goto io_fail;
  for (;;) {
    char t;
    if (recv_frame(fd, &t, &in, timeout)) goto io_fail;
    if (t == 'L' && !got && !compiled) {
      if (load_entry(args, in.p, in.n, &got, err, sizeof err) == 0) {
        if (send_frame(fd, 'K', NULL, 0, timeout)) goto io_fail;
        // The helper verified the entry before sending it, and the probe
        // passed: once the helper has our "loaded", its answer can only
        // be "hit" (cache.Compile returns a loaded executable as is).
        // Not waiting for it spares the host two hand-overs between
        // processes, each a wait for a time slice on a loaded machine.
        hit = ok = 1;
        break;
      } else {
        logf_once(LOG_LOAD, "cached executable rejected (%s); compiling", err);
        if (send_frame(fd, 'F', err, strlen(err), timeout)) goto io_fail;
      }
    } else if (t == 'C' && !got && !compiled) {
      compiled = 1;
      compile_err = inner_compile(args);
      if (compile_err) {
        // The helper learns it failed; the caller gets the inner's error.
        if (send_frame(fd, 'E', "compile failed", 14, timeout)) goto io_fail;
        continue;
      }
      got = args->executable;
      buf_t out = {0};
      int want = in.n > 0 && in.p[0] == 1;
      if (want) {
        buf_t sig = {0};
        signature(got, &sig);
        put_u32(&out, (uint32_t)sig.n);
        put(&out, sig.p, sig.n);
        free(sig.p);
        if (serialize(got, &out, err, sizeof err)) {
          logf_once(LOG_SERIALIZE, "cannot serialize the executable (%s); not caching it", err);
          out.n = 0;
        }
      }
      int rc = out.oom ? send_frame(fd, 'E', "out of memory", 13, timeout)
                       : send_frame(fd, 'C', out.p, out.n, timeout);
      free(out.p);
      if (rc) goto io_fail;
    } else if (t == 'D') {
      hit = in.n > 0 && in.p[0] == 'h';
      refused = in.n > 0 && in.p[0] == 'r' && !got && !compiled;
      if (in.n > 0 && in.p[0] == 's') atomic_fetch_add(&n_stored, 1);
      ok = 1;
      break;
    } else {
      errno = EPROTO;
      goto io_fail;
    }
  }
io_fail:
  if (!ok) {
    if (errno == ETIMEDOUT)
      logf_once(LOG_TIMEOUT, "cache helper at %s did not answer within %ld ms; compiling without the cache", sock, timeout);
    else
      logf_once(LOG_PROTO, "cache helper at %s: %s; compiling without the cache", sock, strerror(errno));
  }
  close(fd);
  free(req.p);
  if (refused && ok) {
    // The helper's message names the program and why it missed.
    PJRT_Error* e = refuse(in.p + 1, in.n - 1);
    free(in.p);
    if (e) return e;
    return fallback(args, "refused");
  }
  free(in.p);
  if (compiled) {
    // What the inner compile gave (executable or error) is the answer,
    // whatever became of storing it.
    if (!compile_err) args->executable = got;
    return compile_err;
  }
  if (got && ok) {
    atomic_fetch_add(&n_hits, 1);
    trace("hit");
    args->executable = got;
    return NULL;
  }
  // Loaded but the session broke before the helper confirmed: the
  // executable passed its probe, but keep it simple and safe: use it only
  // with the helper's done; otherwise compile.
  if (got) destroy_loaded(got);
  (void)hit;
  return fallback(args, "cache helper failed");
}
