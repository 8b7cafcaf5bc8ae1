/* What a process's native code reads while curator records a task: every file opened through
 * libc (a Rust or C++ reader, a thread of pyarrow's IO pool) and every environment variable read
 * with getenv. Curator's command preloads this library (LD_PRELOAD) and drives it through ctypes
 * (curator/core/native_reads.py). It holds no Python symbol and does nothing until
 * curator_trace_enter() is called, so a child process that inherits it (redis-server, mpiexec,
 * a compiler) runs exactly as without it: each call is forwarded to the next definition
 * (dlsym(RTLD_NEXT)) after one relaxed load of a counter. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* Recordings open in this process; the token of the only one (for threads that have none of
 * their own: pyarrow's pool, a Rust thread), else 0; this thread's own token. */
static int active;
static uint64_t only;
static __thread uint64_t mine;
static __thread int busy; /* inside this library: record nothing */

struct entry {
    struct entry *next;
    uint64_t token, hash;
    char kind; /* 'r' read, 'w' written, 'e' environment variable read */
    char path[];
};
#define NBUCKET 4096
static struct entry *table[NBUCKET];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void after_fork_child(void) { pthread_mutex_init(&mu, NULL); }

static void record(char kind, int dirfd, const char *path) {
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED) || busy || !path || !*path)
        return;
    uint64_t tok = mine ? mine : __atomic_load_n(&only, __ATOMIC_RELAXED);
    if (!tok)
        return;
    busy = 1;
    char buf[PATH_MAX + 64];
    if (kind != 'e' && dirfd != AT_FDCWD && path[0] != '/') { /* relative to a folder's fd */
        char link[40];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, buf, PATH_MAX);
        size_t len = strlen(path);
        if (n <= 0 || (size_t)n + 1 + len >= sizeof buf) {
            busy = 0;
            return;
        }
        buf[n] = '/';
        memcpy(buf + n + 1, path, len + 1);
        path = buf;
    }
    size_t len = strlen(path);
    uint64_t h = 1469598103934665603ULL ^ tok ^ (uint64_t)kind;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)path[i]) * 1099511628211ULL;
    pthread_mutex_lock(&mu);
    struct entry **b = &table[h % NBUCKET], *e;
    for (e = *b; e; e = e->next)
        if (e->hash == h && e->token == tok && e->kind == kind && !strcmp(e->path, path))
            break;
    if (e == NULL && (e = malloc(sizeof *e + len + 1)) != NULL) {
        e->token = tok;
        e->hash = h;
        e->kind = kind;
        memcpy(e->path, path, len + 1);
        e->next = *b;
        *b = e;
    }
    pthread_mutex_unlock(&mu);
    busy = 0;
}

static void record_open(int dirfd, const char *path, int flags) {
    if (flags & (O_PATH | O_DIRECTORY))
        return;
    record((flags & O_ACCMODE) == O_RDONLY ? 'r' : 'w', dirfd, path);
}

/* --- what curator calls (ctypes) ------------------------------------------------------------ */

int curator_trace_version(void) { return 1; }

/* This thread records into `token` (nonzero); returns the token it recorded into before. */
uint64_t curator_trace_enter(uint64_t token) {
    static int at_fork;
    if (!__atomic_exchange_n(&at_fork, 1, __ATOMIC_ACQ_REL))
        pthread_atfork(NULL, NULL, after_fork_child);
    uint64_t prev = mine;
    mine = token;
    __atomic_add_fetch(&active, 1, __ATOMIC_SEQ_CST);
    return prev;
}

void curator_trace_leave(uint64_t prev) {
    mine = prev;
    __atomic_sub_fetch(&active, 1, __ATOMIC_SEQ_CST);
}

/* Threads without a token of their own record into `token` (0: into none). */
void curator_trace_only(uint64_t token) { __atomic_store_n(&only, token, __ATOMIC_SEQ_CST); }

/* What was recorded into `token`, taken out: a malloc'd block of entries, each a kind letter
 * followed by a NUL-terminated path (or name); its length in *size. Free with
 * curator_trace_free. */
char *curator_trace_drain(uint64_t token, size_t *size) {
    busy = 1;
    pthread_mutex_lock(&mu);
    size_t total = 0;
    for (int i = 0; i < NBUCKET; i++)
        for (struct entry *e = table[i]; e; e = e->next)
            if (e->token == token)
                total += 2 + strlen(e->path);
    char *out = malloc(total + 1), *p = out;
    for (int i = 0; out && i < NBUCKET; i++) {
        struct entry **link = &table[i];
        while (*link) {
            struct entry *e = *link;
            if (e->token != token) {
                link = &e->next;
                continue;
            }
            size_t n = strlen(e->path) + 1;
            *p++ = e->kind;
            memcpy(p, e->path, n);
            p += n;
            *link = e->next;
            free(e);
        }
    }
    pthread_mutex_unlock(&mu);
    busy = 0;
    *size = out ? total : 0;
    return out;
}

void curator_trace_free(char *block) { free(block); }

/* --- the interposed calls ------------------------------------------------------------------- */

#define REAL(name, type)                                                                         \
    static type real_##name;                                                                     \
    if (real_##name == NULL)                                                                     \
        real_##name = (type)dlsym(RTLD_NEXT, #name);

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef char *(*getenv_fn)(const char *);

static mode_t mode_of(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

#define OPEN(name)                                                                               \
    int name(const char *path, int flags, ...) {                                                 \
        REAL(name, open_fn)                                                                      \
        va_list ap;                                                                              \
        va_start(ap, flags);                                                                     \
        mode_t mode = mode_of(flags, ap);                                                        \
        va_end(ap);                                                                              \
        record_open(AT_FDCWD, path, flags);                                                      \
        return real_##name(path, flags, mode);                                                   \
    }
OPEN(open)
OPEN(open64)

#define OPENAT(name)                                                                             \
    int name(int dirfd, const char *path, int flags, ...) {                                      \
        REAL(name, openat_fn)                                                                    \
        va_list ap;                                                                              \
        va_start(ap, flags);                                                                     \
        mode_t mode = mode_of(flags, ap);                                                        \
        va_end(ap);                                                                              \
        record_open(dirfd, path, flags);                                                         \
        return real_##name(dirfd, path, flags, mode);                                            \
    }
OPENAT(openat)
OPENAT(openat64)

#define OPEN2(name)                                                                              \
    int name(const char *path, int flags) {                                                      \
        REAL(name, open2_fn)                                                                     \
        record_open(AT_FDCWD, path, flags);                                                      \
        return real_##name(path, flags);                                                         \
    }
OPEN2(__open_2)
OPEN2(__open64_2)

#define OPENAT2(name)                                                                            \
    int name(int dirfd, const char *path, int flags) {                                           \
        REAL(name, openat2_fn)                                                                   \
        record_open(dirfd, path, flags);                                                         \
        return real_##name(dirfd, path, flags);                                                  \
    }
OPENAT2(__openat_2)
OPENAT2(__openat64_2)

#define FOPEN(name)                                                                              \
    FILE *name(const char *path, const char *mode) {                                             \
        REAL(name, fopen_fn)                                                                     \
        if (mode != NULL)                                                                        \
            record(mode[0] == 'r' && strchr(mode, '+') == NULL ? 'r' : 'w', AT_FDCWD, path);     \
        return real_##name(path, mode);                                                          \
    }
FOPEN(fopen)
FOPEN(fopen64)

/* Before dlsym has answered (a malloc replacement that reads its settings while dlsym
 * allocates), a variable is looked up in environ directly. */
static char *scan_environ(const char *name) {
    size_t n = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

#define GETENV(name)                                                                             \
    char *name(const char *var) {                                                                \
        static __thread int resolving;                                                           \
        static getenv_fn real_##name;                                                            \
        if (real_##name == NULL) {                                                               \
            if (resolving)                                                                       \
                return scan_environ(var);                                                        \
            resolving = 1;                                                                       \
            real_##name = (getenv_fn)dlsym(RTLD_NEXT, #name);                                    \
            resolving = 0;                                                                       \
            if (real_##name == NULL)                                                             \
                return scan_environ(var);                                                        \
        }                                                                                        \
        record('e', AT_FDCWD, var);                                                              \
        return real_##name(var);                                                                 \
    }
GETENV(getenv)
GETENV(secure_getenv)
