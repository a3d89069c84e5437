/* A fake libascendcl.so for the npu backend's tests, written from the public ACL
 * signatures (aclInit, aclrtSetDevice, aclrtMalloc, aclrtMemcpy, aclrtRecordEvent,
 * aclmdlRICaptureBegin, ...). Device memory is host memory, poisoned at allocation; a
 * stream is a queue of tasks run in order when it is synchronised (kernel launches, which
 * the fake cmake's `<<<>>>` hands to the CPU model, HCCL collectives, event records and
 * captured models), so a kernel reads only what earlier work on its stream wrote. Each
 * device has a fake clock that a kernel advances by FAKE_KERNEL_NS and a collective by
 * FAKE_COLLECTIVE_NS when it runs; an event takes the clock's value when its record runs.
 * Capture (aclmdlRICaptureBegin .. End) moves a stream's tasks into a model instead of
 * running them; aclmdlRIExecuteAsync queues the model, whose tasks then run again with
 * their captured arguments (built with -DFAKE_NO_CAPTURE the library lacks that API, as an
 * older toolkit would). It keeps the runtime's rules the backend must follow (aclInit
 * once, a device set on the calling thread, copies within allocations, no copy while a
 * stream of the device has tasks pending or from a thread capturing in a mode that forbids
 * it), per-thread last error and recent-error message, fault injection by call count, a
 * per-call log and a leak report, all reached by the tests through the fake_* control
 * functions. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int aclError;
#define ACL_SUCCESS 0
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_TASK_TIMEOUT 107020
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_NO_STREAM_RESOURCE 207008
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015
#define ACL_ERROR_RT_EVENT_NOT_COMPLETE 207014
#define ACL_ERROR_RT_STREAM_CAPTURED 107026
#define DEVICES 8
/* What the fake clock charges a kernel and a collective (HCCL's tasks charge the latter). */
#define FAKE_KERNEL_NS 20000
#define FAKE_COLLECTIVE_NS 10000
/* aclmdlRICaptureMode */
#define CAPTURE_GLOBAL 0
#define CAPTURE_THREAD_LOCAL 1
#define CAPTURE_RELAXED 2

/* A task on a stream: returns an ACL error and fills `err` on failure. */
typedef int (*task_fn)(void* ctx, int64_t deadline_ms, char* err, size_t cap);
struct task {
    task_fn run;
    void (*drop)(void*);
    void* ctx;
    int64_t cost_ns;
    struct task* next;
};
/* A captured model (aclmdlRI): the tasks a capture took, run again by each execution. */
struct model {
    int dev, live, tasks;
    struct task *head, *tail;
};
struct stream {
    int dev, live;
    struct task *head, *tail;
    int pending;
    struct model* capturing;
    int capture_mode, capture_tid;
};
/* An event: `complete` once its last record ran, at device time `stamp_ns`. */
struct event {
    int dev, live, recorded, complete;
    int64_t stamp_ns;
};
struct alloc {
    uint8_t* p;
    size_t len;
    int dev, live;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int state; /* 0 never initialised, 1 initialised, 2 finalised */
static struct alloc* allocs;
static size_t nallocs;
static struct stream* streams[4096];
static size_t nstreams;
static int dev_open[DEVICES];
static char soc[64] = "Ascend910B1";
static int64_t aic_cores = 24, aiv_cores = 48;
static char* log_buf;
static size_t log_len, log_cap;
static int thread_ids;
static int64_t clock_ns[DEVICES];
static struct event* events[65536];
static size_t nevents;
static struct model* models[1024];
static size_t nmodels;
static struct {
    char call[64];
    int dev, nth, code, seen;
} fault;

static __thread int cur_dev = -1;
static __thread int tid;
static __thread aclError last_err;
static __thread char recent[2048];

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void logf_locked(const char* fmt, va_list ap)
{
    char line[512];
    if (tid == 0) {
        tid = ++thread_ids;
    }
    int n = snprintf(line, sizeof line, "T%d D%d ", tid, cur_dev);
    n += vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    if (n > (int)sizeof line - 2) {
        n = sizeof line - 2;
    }
    line[n++] = '\n';
    if (log_len + n + 1 > log_cap) {
        log_cap = (log_len + n + 1) * 2;
        log_buf = realloc(log_buf, log_cap);
    }
    memcpy(log_buf + log_len, line, n);
    log_len += n;
    log_buf[log_len] = 0;
}

/* Appends one line to the call log: "T<thread> D<device> <call> ...". */
void fake_acl_log(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&mu);
    logf_locked(fmt, ap);
    pthread_mutex_unlock(&mu);
    va_end(ap);
}

/* Sets the calling thread's recent-error message (aclGetRecentErrMsg). */
void fake_acl_error(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(recent, sizeof recent, fmt, ap);
    va_end(ap);
}

static aclError fail(aclError code, const char* call, const char* fmt, ...)
{
    char msg[1500];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fake_acl_error("EE9999: %s failed: %s", call, msg);
    fake_acl_log("%s error %d: %s", call, code, msg);
    return code;
}

/* An injected failure of this call, if one is due: its code, else 0. */
int fake_acl_injected(const char* call)
{
    pthread_mutex_lock(&mu);
    int code = 0;
    if (fault.nth > 0 && strcmp(fault.call, call) == 0 && (fault.dev < 0 || fault.dev == cur_dev) &&
        ++fault.seen == fault.nth) {
        code = fault.code;
    }
    pthread_mutex_unlock(&mu);
    return code;
}

int fake_acl_current_device(void) { return cur_dev; }

/* The live allocation holding `p` and the bytes from `p` to its end (0: none). */
size_t fake_acl_extent(const void* p, int* dev)
{
    size_t left = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nallocs; ++i) {
        struct alloc* a = &allocs[i];
        if (a->live && (const uint8_t*)p >= a->p && (const uint8_t*)p < a->p + a->len) {
            left = a->len - (size_t)((const uint8_t*)p - a->p);
            if (dev) {
                *dev = a->dev;
            }
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return left;
}

static struct stream* live_stream(void* s)
{
    for (size_t i = 0; i < nstreams; ++i) {
        if (streams[i] == s && streams[i]->live) {
            return streams[i];
        }
    }
    return NULL;
}

static aclError need_device(const char* call)
{
    if (state != 1) {
        return fail(ACL_ERROR_UNINITIALIZE, call, "aclInit has not been called (or aclFinalize has)");
    }
    if (cur_dev < 0) {
        return fail(ACL_ERROR_RT_CONTEXT_NULL, call, "no device is set on this thread (aclrtSetDevice)");
    }
    return 0;
}

#define INJECT(call)                                                                                               \
    do {                                                                                                           \
        int code_ = fake_acl_injected(call);                                                                       \
        if (code_) {                                                                                               \
            return fail(code_, call, "injected failure");                                                          \
        }                                                                                                          \
    } while (0)

/* Queues a task costing `cost_ns` of device time on `stream` of the current device (used by
 * launches, event records, model executions and HCCL); a capturing stream's model takes it. */
aclError fake_acl_enqueue(void* stream, task_fn run, void (*drop)(void*), void* ctx, int64_t cost_ns, const char* call)
{
    aclError e = need_device(call);
    if (e) {
        drop(ctx);
        return e;
    }
    pthread_mutex_lock(&mu);
    struct stream* s = live_stream(stream);
    if (s == NULL || s->dev != cur_dev) {
        pthread_mutex_unlock(&mu);
        drop(ctx);
        return fail(ACL_ERROR_RT_STREAM_CONTEXT, call, "stream %p is not a live stream of device %d", stream, cur_dev);
    }
    struct task* t = calloc(1, sizeof *t);
    t->run = run;
    t->drop = drop;
    t->ctx = ctx;
    t->cost_ns = cost_ns;
    if (s->capturing) {
        struct model* m = s->capturing;
        if (m->tail) {
            m->tail->next = t;
        } else {
            m->head = t;
        }
        m->tail = t;
        m->tasks++;
    } else {
        if (s->tail) {
            s->tail->next = t;
        } else {
            s->head = t;
        }
        s->tail = t;
        s->pending++;
    }
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Runs `t` on the calling thread and, when it succeeds, charges its cost to `dev`'s clock. */
static int run_task(struct task* t, int dev, int64_t deadline, char* err, size_t cap)
{
    int code = t->run(t->ctx, deadline, err, cap);
    if (code == 0) {
        pthread_mutex_lock(&mu);
        clock_ns[dev] += t->cost_ns;
        pthread_mutex_unlock(&mu);
    }
    return code;
}

static void free_tasks(struct task* t)
{
    while (t) {
        struct task* next = t->next;
        t->drop(t->ctx);
        free(t);
        t = next;
    }
}

aclError aclInit(const char* config)
{
    pthread_mutex_lock(&mu);
    int was = state;
    if (was == 0) {
        state = 1;
        /* A fault for a process the tests cannot reach: FAKE_CANN_FAIL=call:device:nth:code. */
        const char* f = getenv("FAKE_CANN_FAIL");
        if (f && sscanf(f, "%63[^:]:%d:%d:%d", fault.call, &fault.dev, &fault.nth, &fault.code) != 4) {
            memset(&fault, 0, sizeof fault);
        }
    }
    pthread_mutex_unlock(&mu);
    fake_acl_log("aclInit");
    if (was == 1) {
        return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "aclInit was already called in this process");
    }
    if (was == 2) {
        return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "aclFinalize has run: ACL cannot be initialised again");
    }
    return 0;
}

/* The leak report: live allocations and streams, one line each ("" when none). */
size_t fake_acl_leaks(char* buf, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nallocs; ++i) {
        if (allocs[i].live && n < cap) {
            n += snprintf(buf + n, cap - n, "allocation of %zu bytes on device %d\n", allocs[i].len, allocs[i].dev);
        }
    }
    for (size_t i = 0; i < nstreams; ++i) {
        if (streams[i]->live && n < cap) {
            n += snprintf(buf + n, cap - n, "stream on device %d\n", streams[i]->dev);
        }
    }
    for (size_t i = 0; i < nevents; ++i) {
        if (events[i]->live && n < cap) {
            n += snprintf(buf + n, cap - n, "event on device %d\n", events[i]->dev);
        }
    }
    for (size_t i = 0; i < nmodels; ++i) {
        if (models[i]->live && n < cap) {
            n += snprintf(buf + n, cap - n, "captured model on device %d\n", models[i]->dev);
        }
    }
    pthread_mutex_unlock(&mu);
    return n < cap ? n : cap;
}

aclError aclFinalize(void)
{
    char leaks[4096];
    size_t n = fake_acl_leaks(leaks, sizeof leaks);
    fake_acl_log("aclFinalize leaks=%zu", n);
    if (n) {
        fprintf(stderr, "fake ACL: leaks at aclFinalize:\n%s", leaks);
    }
    pthread_mutex_lock(&mu);
    int was = state;
    state = 2;
    pthread_mutex_unlock(&mu);
    return was == 1 ? 0 : fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "ACL is not initialised");
}

const char* aclGetRecentErrMsg(void) { return recent[0] ? recent : NULL; }

aclError aclrtGetLastError(int level)
{
    aclError e = last_err;
    last_err = 0;
    return e;
}

const char* aclrtGetSocName(void) { return state == 1 ? soc : NULL; }

aclError aclrtGetDeviceInfo(uint32_t device, int attr, int64_t* value)
{
    if (state != 1) {
        return fail(ACL_ERROR_UNINITIALIZE, "aclrtGetDeviceInfo", "aclInit has not been called");
    }
    if (device >= DEVICES) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtGetDeviceInfo", "no device %u", device);
    }
    if (attr == 101 || attr == 102) { /* ACL_DEV_ATTR_AICORE_CORE_NUM, _CUBE_CORE_NUM */
        *value = aic_cores;
    } else if (attr == 201) { /* ACL_DEV_ATTR_VECTOR_CORE_NUM */
        *value = aiv_cores;
    } else {
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtGetDeviceInfo", "attribute %d is not modelled", attr);
    }
    fake_acl_log("aclrtGetDeviceInfo device=%u attr=%d -> %lld", device, attr, (long long)*value);
    return 0;
}

aclError aclrtSetDevice(int32_t device)
{
    fake_acl_log("aclrtSetDevice %d", device);
    if (state != 1) {
        return fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice", "aclInit has not been called (or aclFinalize has)");
    }
    if (device < 0 || device >= DEVICES) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice", "no device %d (the fake has %d)", device, DEVICES);
    }
    INJECT("aclrtSetDevice");
    cur_dev = device;
    pthread_mutex_lock(&mu);
    dev_open[device]++;
    pthread_mutex_unlock(&mu);
    return 0;
}

aclError aclrtResetDevice(int32_t device)
{
    fake_acl_log("aclrtResetDevice %d", device);
    if (device < 0 || device >= DEVICES || dev_open[device] == 0) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice", "device %d is not set", device);
    }
    pthread_mutex_lock(&mu);
    dev_open[device]--;
    pthread_mutex_unlock(&mu);
    if (cur_dev == device) {
        cur_dev = -1;
    }
    return 0;
}

aclError aclrtCreateStream(void** out)
{
    aclError e = need_device("aclrtCreateStream");
    if (e) {
        return e;
    }
    INJECT("aclrtCreateStream");
    pthread_mutex_lock(&mu);
    if (nstreams == sizeof streams / sizeof streams[0]) {
        pthread_mutex_unlock(&mu);
        return fail(ACL_ERROR_RT_NO_STREAM_RESOURCE, "aclrtCreateStream", "the fake's %zu streams are used up", nstreams);
    }
    struct stream* s = calloc(1, sizeof *s);
    s->dev = cur_dev;
    s->live = 1;
    streams[nstreams++] = s;
    pthread_mutex_unlock(&mu);
    *out = s;
    fake_acl_log("aclrtCreateStream %p", (void*)s);
    return 0;
}

static void drop_tasks(struct stream* s)
{
    free_tasks(s->head);
    s->head = s->tail = NULL;
    s->pending = 0;
}

aclError aclrtDestroyStream(void* stream)
{
    fake_acl_log("aclrtDestroyStream %p", stream);
    pthread_mutex_lock(&mu);
    struct stream* s = live_stream(stream);
    if (s) {
        s->live = 0;
        drop_tasks(s);
    }
    pthread_mutex_unlock(&mu);
    return s ? 0 : fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyStream", "%p is not a live stream", stream);
}

static aclError synchronize(void* stream, int32_t timeout_ms, const char* call)
{
    aclError e = need_device(call);
    if (e) {
        return e;
    }
    pthread_mutex_lock(&mu);
    struct stream* s = live_stream(stream);
    if (s == NULL || s->dev != cur_dev) {
        pthread_mutex_unlock(&mu);
        return fail(ACL_ERROR_RT_STREAM_CONTEXT, call, "stream %p is not a live stream of device %d", stream, cur_dev);
    }
    int pending = s->pending;
    int capturing = s->capturing != NULL;
    pthread_mutex_unlock(&mu);
    fake_acl_log("%s %p tasks=%d", call, stream, pending);
    if (capturing) {
        return fail(ACL_ERROR_RT_STREAM_CAPTURED, call, "stream %p is capturing (aclmdlRICaptureEnd first)", stream);
    }
    int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : INT64_MAX;
    for (;;) {
        pthread_mutex_lock(&mu);
        struct task* t = s->head;
        if (t) {
            s->head = t->next;
            if (!s->head) {
                s->tail = NULL;
            }
        }
        pthread_mutex_unlock(&mu);
        if (!t) {
            break;
        }
        char err[1500] = "";
        int code = run_task(t, s->dev, deadline, err, sizeof err);
        t->drop(t->ctx);
        free(t);
        pthread_mutex_lock(&mu);
        s->pending--;
        if (code) {
            drop_tasks(s);
        }
        pthread_mutex_unlock(&mu);
        if (code) {
            return fail(code, call, "%s", err);
        }
    }
    INJECT(call);
    return 0;
}

aclError aclrtSynchronizeStream(void* stream) { return synchronize(stream, -1, "aclrtSynchronizeStream"); }

aclError aclrtSynchronizeStreamWithTimeout(void* stream, int32_t timeout_ms)
{
    return synchronize(stream, timeout_ms, "aclrtSynchronizeStreamWithTimeout");
}

aclError aclrtMalloc(void** out, size_t size, int policy)
{
    aclError e = need_device("aclrtMalloc");
    if (e) {
        return e;
    }
    INJECT("aclrtMalloc");
    if (size == 0) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtMalloc", "size 0");
    }
    uint8_t* p = malloc(size);
    if (!p) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc", "out of memory for %zu bytes", size);
    }
    memset(p, 0xff, size); /* poison: NaN in every float type */
    pthread_mutex_lock(&mu);
    allocs = realloc(allocs, (nallocs + 1) * sizeof *allocs);
    allocs[nallocs++] = (struct alloc){p, size, cur_dev, 1};
    pthread_mutex_unlock(&mu);
    *out = p;
    fake_acl_log("aclrtMalloc %zu -> %p", size, (void*)p);
    return 0;
}

aclError aclrtFree(void* p)
{
    fake_acl_log("aclrtFree %p", p);
    INJECT("aclrtFree");
    pthread_mutex_lock(&mu);
    struct alloc* a = NULL;
    for (size_t i = 0; i < nallocs; ++i) {
        if (allocs[i].live && allocs[i].p == p) {
            a = &allocs[i];
        }
    }
    if (a) {
        a->live = 0;
        free(a->p);
    }
    pthread_mutex_unlock(&mu);
    return a ? 0 : fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtFree", "%p is not a live allocation", p);
}

/* Tasks pending on the streams of `dev`. */
static int pending_on(int dev)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nstreams; ++i) {
        if (streams[i]->live && streams[i]->dev == dev) {
            n += streams[i]->pending;
        }
    }
    pthread_mutex_unlock(&mu);
    return n;
}

aclError aclrtMemcpy(void* dst, size_t dst_max, const void* src, size_t count, int kind)
{
    const char* call = "aclrtMemcpy";
    aclError e = need_device(call);
    if (e) {
        return e;
    }
    fake_acl_log("aclrtMemcpy %s %zu bytes %p <- %p", kind == 1 ? "H2D" : kind == 2 ? "D2H" : "?", count, dst, src);
    INJECT(call);
    if (kind != 1 && kind != 2) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "copy kind %d is not modelled", kind);
    }
    if (count > dst_max) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "count %zu exceeds destMax %zu", count, dst_max);
    }
    const void* dev_ptr = kind == 1 ? dst : src;
    int dev = -1;
    size_t room = fake_acl_extent(dev_ptr, &dev);
    if (count > room) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "%zu bytes at %p are outside any device allocation (%zu left)",
                    count, dev_ptr, room);
    }
    if (tid == 0) {
        tid = ++thread_ids;
    }
    pthread_mutex_lock(&mu);
    int forbidden = 0;
    for (size_t i = 0; i < nstreams; ++i) {
        struct stream* c = streams[i];
        if (c->live && c->capturing && c->capture_mode != CAPTURE_RELAXED &&
            (c->capture_mode == CAPTURE_GLOBAL || c->capture_tid == tid)) {
            forbidden = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    if (forbidden) {
        return fail(ACL_ERROR_RT_STREAM_CAPTURED, call,
                    "a stream is capturing in a mode that forbids aclrtMemcpy on this thread");
    }
    int pending = pending_on(dev);
    if (pending) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call,
                    "%s device %d memory while %d task(s) on its streams are not synchronised",
                    kind == 1 ? "writes" : "reads", dev, pending);
    }
    memcpy(dst, src, count);
    return 0;
}

/* Events. */
static struct event* live_event(void* e)
{
    for (size_t i = 0; i < nevents; ++i) {
        if (events[i] == e && events[i]->live) {
            return events[i];
        }
    }
    return NULL;
}

aclError aclrtCreateEvent(void** out)
{
    aclError e = need_device("aclrtCreateEvent");
    if (e) {
        return e;
    }
    INJECT("aclrtCreateEvent");
    pthread_mutex_lock(&mu);
    if (nevents == sizeof events / sizeof events[0]) {
        pthread_mutex_unlock(&mu);
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtCreateEvent", "the fake's events are used up");
    }
    struct event* ev = calloc(1, sizeof *ev);
    ev->dev = cur_dev;
    ev->live = 1;
    events[nevents++] = ev;
    pthread_mutex_unlock(&mu);
    *out = ev;
    fake_acl_log("aclrtCreateEvent %p", (void*)ev);
    return 0;
}

aclError aclrtDestroyEvent(void* event)
{
    fake_acl_log("aclrtDestroyEvent %p", event);
    pthread_mutex_lock(&mu);
    struct event* ev = live_event(event);
    if (ev) {
        ev->live = 0;
    }
    pthread_mutex_unlock(&mu);
    return ev ? 0 : fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyEvent", "%p is not a live event", event);
}

static int run_record(void* ctx, int64_t deadline, char* err, size_t cap)
{
    struct event* ev = ctx;
    pthread_mutex_lock(&mu);
    ev->complete = 1;
    ev->stamp_ns = clock_ns[ev->dev];
    pthread_mutex_unlock(&mu);
    return 0;
}

static void keep(void* ctx) {}

aclError aclrtRecordEvent(void* event, void* stream)
{
    const char* call = "aclrtRecordEvent";
    fake_acl_log("%s %p stream=%p", call, event, stream);
    pthread_mutex_lock(&mu);
    struct event* ev = live_event(event);
    if (ev && ev->dev == cur_dev) {
        ev->recorded = 1;
        ev->complete = 0;
    }
    pthread_mutex_unlock(&mu);
    if (!ev || ev->dev != cur_dev) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "%p is not a live event of device %d", event, cur_dev);
    }
    return fake_acl_enqueue(stream, run_record, keep, ev, 0, call);
}

/* aclrtEventRecordedStatus: 0 not ready, 1 complete. */
aclError aclrtQueryEventStatus(void* event, int* status)
{
    pthread_mutex_lock(&mu);
    struct event* ev = live_event(event);
    if (ev) {
        *status = ev->recorded && ev->complete;
    }
    pthread_mutex_unlock(&mu);
    if (!ev) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtQueryEventStatus", "%p is not a live event", event);
    }
    fake_acl_log("aclrtQueryEventStatus %p -> %d", event, *status);
    return 0;
}

aclError aclrtEventElapsedTime(float* ms, void* start, void* end)
{
    const char* call = "aclrtEventElapsedTime";
    pthread_mutex_lock(&mu);
    struct event *a = live_event(start), *b = live_event(end);
    int ok = a && b && a->complete && b->complete;
    if (ok) {
        *ms = (float)((double)(b->stamp_ns - a->stamp_ns) / 1e6);
    }
    pthread_mutex_unlock(&mu);
    if (!a || !b) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "not two live events");
    }
    if (!ok) {
        return fail(ACL_ERROR_RT_EVENT_NOT_COMPLETE, call, "an event has not completed");
    }
    return 0;
}

#ifndef FAKE_NO_CAPTURE
/* Model capture (aclmdlRI*). */
static struct model* live_model(void* m)
{
    for (size_t i = 0; i < nmodels; ++i) {
        if (models[i] == m && models[i]->live) {
            return models[i];
        }
    }
    return NULL;
}

aclError aclmdlRICaptureBegin(void* stream, int mode)
{
    const char* call = "aclmdlRICaptureBegin";
    aclError e = need_device(call);
    if (e) {
        return e;
    }
    fake_acl_log("%s %p mode=%d", call, stream, mode);
    INJECT(call);
    if (mode < CAPTURE_GLOBAL || mode > CAPTURE_RELAXED) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "capture mode %d", mode);
    }
    if (tid == 0) {
        tid = ++thread_ids;
    }
    pthread_mutex_lock(&mu);
    struct stream* s = live_stream(stream);
    const char* why = s == NULL || s->dev != cur_dev ? "is not a live stream of this device"
                      : s->capturing                   ? "is already capturing"
                      : nmodels == sizeof models / sizeof models[0] ? "cannot capture: the fake's models are used up"
                                                                    : NULL;
    if (!why) {
        struct model* m = calloc(1, sizeof *m);
        m->dev = cur_dev;
        models[nmodels++] = m;
        s->capturing = m;
        s->capture_mode = mode;
        s->capture_tid = tid;
    }
    pthread_mutex_unlock(&mu);
    return why ? fail(ACL_ERROR_RT_PARAM_INVALID, call, "stream %p %s", stream, why) : 0;
}

aclError aclmdlRICaptureEnd(void* stream, void** out)
{
    const char* call = "aclmdlRICaptureEnd";
    aclError e = need_device(call);
    if (e) {
        return e;
    }
    pthread_mutex_lock(&mu);
    struct stream* s = live_stream(stream);
    struct model* m = s && s->dev == cur_dev ? s->capturing : NULL;
    if (m) {
        s->capturing = NULL;
        m->live = 1;
        *out = m;
    }
    pthread_mutex_unlock(&mu);
    if (!m) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "stream %p of device %d is not capturing", stream, cur_dev);
    }
    fake_acl_log("%s %p -> model %p tasks=%d", call, stream, (void*)m, m->tasks);
    return 0;
}

static int run_model(void* ctx, int64_t deadline, char* err, size_t cap)
{
    struct model* m = ctx;
    for (struct task* t = m->head; t; t = t->next) {
        int code = run_task(t, m->dev, deadline, err, cap);
        if (code) {
            return code;
        }
    }
    return 0;
}

aclError aclmdlRIExecuteAsync(void* model, void* stream)
{
    const char* call = "aclmdlRIExecuteAsync";
    aclError e = need_device(call);
    if (e) {
        return e;
    }
    fake_acl_log("%s model %p stream=%p", call, model, stream);
    INJECT(call);
    pthread_mutex_lock(&mu);
    struct model* m = live_model(model);
    pthread_mutex_unlock(&mu);
    if (!m || m->dev != cur_dev) {
        return fail(ACL_ERROR_RT_PARAM_INVALID, call, "%p is not a captured model of device %d", model, cur_dev);
    }
    return fake_acl_enqueue(stream, run_model, keep, m, 0, call);
}

aclError aclmdlRIDestroy(void* model)
{
    fake_acl_log("aclmdlRIDestroy %p", model);
    pthread_mutex_lock(&mu);
    struct model* m = live_model(model);
    if (m) {
        m->live = 0;
        free_tasks(m->head);
        m->head = m->tail = NULL;
    }
    pthread_mutex_unlock(&mu);
    return m ? 0 : fail(ACL_ERROR_RT_PARAM_INVALID, "aclmdlRIDestroy", "%p is not a live model", model);
}
#endif

/* A kernel launch: what the fake cmake's `<<<>>>` calls. `run` is the CPU model's entry in
 * the kernel library (sim_launch's shape); the launch is checked against the chip and runs
 * when the stream is synchronised. */
struct gm_arg {
    uint8_t* ptr;
    uint64_t len;
    const char* name;
    const uint64_t* warm;
    uint64_t* lines;
};
typedef int (*device_run_fn)(const char*, void*, uint32_t, uint32_t, const struct gm_arg*, uint32_t, char*, uint64_t);
struct launch {
    char kernel[256];
    void* fn;
    device_run_fn run;
    uint32_t mode, block_dim, nargs;
    struct gm_arg args[64];
};

static int run_launch(void* ctx, int64_t deadline, char* err, size_t cap)
{
    struct launch* l = ctx;
    char msg[1400] = "";
    int injected = fake_acl_injected("kernel");
    int rc = injected ? -1 : l->run(l->kernel, l->fn, l->mode, l->block_dim, l->args, l->nargs, msg, sizeof msg);
    if (injected) {
        snprintf(msg, sizeof msg, "injected failure");
    }
    fake_acl_log("kernel %s ran rc=%d", l->kernel, rc);
    if (rc != 0) {
        snprintf(err, cap, "aicore exception in kernel %s: %s", l->kernel, msg);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    return 0;
}

static const char* mode_name(uint32_t mode) { return mode == 0 ? "vector" : mode == 1 ? "cube" : "mix(1, 2)"; }

void fake_rt_launch(void* stream, uint32_t block_dim, uint32_t mode, const char* kernel, void* fn, device_run_fn run,
                    uint32_t nargs, void** args)
{
    const char* call = "launch";
    fake_acl_log("launch %s blockDim=%u %s args=%u stream=%p", kernel, block_dim, mode_name(mode), nargs, stream);
    aclError e = need_device(call);
    int code = e ? 0 : fake_acl_injected(call);
    if (code) {
        e = fail(code, call, "injected failure of kernel %s", kernel);
    }
    int64_t cores = mode == 0 ? aiv_cores : aic_cores;
    if (!e && (block_dim == 0 || block_dim > cores || nargs > 64)) {
        e = fail(ACL_ERROR_RT_PARAM_INVALID, call, "kernel %s: blockDim %u on %s (%lld %s cores)", kernel, block_dim,
                 soc, (long long)cores, mode == 0 ? "vector" : "cube");
    }
    struct launch* l = e ? NULL : calloc(1, sizeof *l);
    for (uint32_t i = 0; l && i < nargs; ++i) {
        int dev = -1;
        size_t len = fake_acl_extent(args[i], &dev);
        if (len == 0 || dev != cur_dev) {
            e = fail(ACL_ERROR_RT_PARAM_INVALID, call, "kernel %s: argument %u (%p) is not memory of device %d", kernel,
                     i, args[i], cur_dev);
            free(l);
            l = NULL;
            break;
        }
        l->args[i] = (struct gm_arg){args[i], len, NULL, NULL, NULL};
    }
    if (l) {
        snprintf(l->kernel, sizeof l->kernel, "%s", kernel);
        l->fn = fn;
        l->run = run;
        l->mode = mode;
        l->block_dim = block_dim;
        l->nargs = nargs;
        e = fake_acl_enqueue(stream, run_launch, free, l, FAKE_KERNEL_NS, call);
    }
    if (e) {
        last_err = e;
    }
}

/* Control: forget the log and any fault; act as `chip` with these core counts. */
void fake_reset(const char* chip, int64_t aic, int64_t aiv)
{
    pthread_mutex_lock(&mu);
    log_len = 0;
    if (log_buf) {
        log_buf[0] = 0;
    }
    memset(&fault, 0, sizeof fault);
    snprintf(soc, sizeof soc, "%s", chip);
    aic_cores = aic;
    aiv_cores = aiv;
    pthread_mutex_unlock(&mu);
}

/* Control: the `nth` call of `call` on `dev` (-1: any) from now on fails with `code`. */
void fake_fail(const char* call, int dev, int nth, int code)
{
    pthread_mutex_lock(&mu);
    snprintf(fault.call, sizeof fault.call, "%s", call);
    fault.dev = dev;
    fault.nth = nth;
    fault.code = code;
    fault.seen = 0;
    pthread_mutex_unlock(&mu);
}

/* Control: a copy of the call log (the caller frees it). */
char* fake_log(void)
{
    pthread_mutex_lock(&mu);
    char* s = strdup(log_buf ? log_buf : "");
    pthread_mutex_unlock(&mu);
    return s;
}

void fake_free(char* s) { free(s); }
