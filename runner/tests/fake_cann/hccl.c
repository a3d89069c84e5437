/* A fake libhccl.so for the npu backend's tests, written from the public HCCL signatures
 * (HcclGetRootInfo, HcclCommInitRootInfo, HcclAlltoAllV, HcclCommDestroy,
 * HcclGetErrorString). Ranks are threads of one process: the root info names a meeting
 * place, init waits for every rank (HCCL_CONNECT_TIMEOUT), and an all-to-all is a task on
 * the caller's stream that meets its peers (HCCL_EXEC_TIMEOUT or the stream sync's
 * deadline), checks that every pair's counts agree and moves the bytes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HCCL_E_PARA 1
#define HCCL_E_PTR 2
#define HCCL_E_NOT_SUPPORT 5
#define HCCL_E_TIMEOUT 9
#define HCCL_E_REMOTE 21
#define ROOT_INFO_BYTES 4108
#define MAX_RANKS 8
#define ACL_ERROR_RT_TASK_TIMEOUT 107020
#define ACL_ERROR_RT_COMM_FAILURE 507899 /* the fake's stream error for a failed collective */

typedef int (*task_fn)(void* ctx, int64_t deadline_ms, char* err, size_t cap);
int fake_acl_enqueue(void* stream, task_fn run, void (*drop)(void*), void* ctx, int64_t cost_ns, const char* call);
#define FAKE_COLLECTIVE_NS 10000 /* acl.c's charge for a collective */
int fake_acl_current_device(void);
size_t fake_acl_extent(const void* p, int* dev);
void fake_acl_log(const char* fmt, ...);
void fake_acl_error(const char* fmt, ...);
int fake_acl_injected(const char* call);

/* One rank's posted all-to-all. */
struct post {
    const uint8_t* send;
    uint8_t* recv;
    uint64_t sc[MAX_RANKS], sd[MAX_RANKS], rc[MAX_RANKS], rd[MAX_RANKS];
};
struct world {
    uint64_t id;
    uint32_t ranks, joined;
    int live_comms;
    uint64_t posted[MAX_RANKS]; /* collectives each rank has reached */
    uint64_t done[MAX_RANKS];   /* collectives each rank has finished copying */
    struct post post[MAX_RANKS];
    int broken; /* a rank left a collective: the others fail instead of waiting */
};
struct comm {
    struct world* w;
    uint32_t rank;
    int dev, live;
    uint64_t ops; /* collectives this rank has run (a replayed capture runs them again) */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct world* worlds[1024];
static size_t nworlds;
static uint64_t next_id = 1;

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t env_timeout_ms(const char* name, int64_t dflt_s)
{
    const char* v = getenv(name);
    return (v && *v ? atoll(v) : dflt_s) * 1000;
}

/* Waits on `cv` (mu held) until `deadline`; 0 once it has passed. */
static int wait_until(int64_t deadline)
{
    if (now_ms() >= deadline) {
        return 0;
    }
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t ms = deadline - now_ms();
    if (ms > 50) {
        ms = 50;
    }
    t.tv_nsec += ms * 1000000;
    t.tv_sec += t.tv_nsec / 1000000000;
    t.tv_nsec %= 1000000000;
    pthread_cond_timedwait(&cv, &mu, &t);
    return 1;
}

static int failed(int code, const char* call, const char* fmt, const char* detail)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, detail);
    fake_acl_error("EI9999: %s failed: %s", call, msg);
    fake_acl_log("%s hccl error %d: %s", call, code, msg);
    return code;
}

const char* HcclGetErrorString(int code)
{
    switch (code) {
        case 0: return "success";
        case HCCL_E_PARA: return "parameter error";
        case HCCL_E_PTR: return "empty pointer";
        case HCCL_E_NOT_SUPPORT: return "not support feature";
        case HCCL_E_TIMEOUT: return "timeout";
        case HCCL_E_REMOTE: return "error cqe";
        case 4: return "internal error";
        default: return "unknown error";
    }
}

int HcclGetRootInfo(void* info)
{
    int dev = fake_acl_current_device();
    fake_acl_log("HcclGetRootInfo");
    if (dev < 0) {
        return failed(HCCL_E_PARA, "HcclGetRootInfo", "%s", "no device is set on this thread");
    }
    int inj = fake_acl_injected("HcclGetRootInfo");
    if (inj) {
        return failed(inj, "HcclGetRootInfo", "%s", "injected failure");
    }
    pthread_mutex_lock(&mu);
    if (nworlds == sizeof worlds / sizeof worlds[0]) {
        pthread_mutex_unlock(&mu);
        return failed(HCCL_E_PARA, "HcclGetRootInfo", "%s", "the fake's root infos are used up");
    }
    struct world* w = calloc(1, sizeof *w);
    w->id = next_id++;
    worlds[nworlds++] = w;
    pthread_mutex_unlock(&mu);
    memset(info, 0, ROOT_INFO_BYTES);
    memcpy(info, "FAKEHCCL", 8);
    memcpy((char*)info + 8, &w->id, sizeof w->id);
    return 0;
}

int HcclCommInitRootInfo(uint32_t ranks, const void* info, uint32_t rank, void** out)
{
    const char* call = "HcclCommInitRootInfo";
    int dev = fake_acl_current_device();
    fake_acl_log("%s ranks=%u rank=%u", call, ranks, rank);
    if (dev < 0) {
        return failed(HCCL_E_PARA, call, "%s", "no device is set on this thread");
    }
    if (ranks == 0 || ranks > MAX_RANKS || rank >= ranks || memcmp(info, "FAKEHCCL", 8) != 0) {
        return failed(HCCL_E_PARA, call, "%s", "bad rank count, rank or root info");
    }
    int inj = fake_acl_injected(call);
    if (inj) {
        return failed(inj, call, "%s", "injected failure");
    }
    uint64_t id;
    memcpy(&id, (const char*)info + 8, sizeof id);
    pthread_mutex_lock(&mu);
    struct world* w = NULL;
    for (size_t i = 0; i < nworlds; ++i) {
        if (worlds[i]->id == id) {
            w = worlds[i];
        }
    }
    if (!w || (w->ranks && w->ranks != ranks)) {
        pthread_mutex_unlock(&mu);
        return failed(HCCL_E_PARA, call, "%s", "unknown root info or a different rank count");
    }
    w->ranks = ranks;
    w->joined++;
    w->live_comms++;
    pthread_cond_broadcast(&cv);
    int64_t deadline = now_ms() + env_timeout_ms("HCCL_CONNECT_TIMEOUT", 120);
    while (w->joined < ranks) {
        if (!wait_until(deadline)) {
            w->live_comms--;
            pthread_mutex_unlock(&mu);
            return failed(HCCL_E_TIMEOUT, call, "%s", "not every rank joined within HCCL_CONNECT_TIMEOUT");
        }
    }
    pthread_mutex_unlock(&mu);
    struct comm* c = calloc(1, sizeof *c);
    *c = (struct comm){w, rank, dev, 1, 0};
    *out = c;
    return 0;
}

struct op {
    struct comm* c;
    uint64_t seq;
    struct post p;
};

/* Marks the world broken (mu held) and fills `err`. */
static int leave(struct world* w, int code, char* err, size_t cap, const char* why, uint32_t rank)
{
    w->broken = 1;
    pthread_cond_broadcast(&cv);
    snprintf(err, cap, "HcclAlltoAllV on rank %u: %s", rank, why);
    return code;
}

static int run_all_to_all(void* ctx, int64_t sync_deadline, char* err, size_t cap)
{
    struct op* o = ctx;
    o->seq = o->c->ops++; /* numbered when it runs, so a replay meets its peers' replays */
    struct world* w = o->c->w;
    uint32_t me = o->c->rank, n = w->ranks;
    int64_t deadline = now_ms() + env_timeout_ms("HCCL_EXEC_TIMEOUT", 1836);
    int timeout = ACL_ERROR_RT_COMM_FAILURE;
    if (sync_deadline < deadline) {
        deadline = sync_deadline;
        timeout = ACL_ERROR_RT_TASK_TIMEOUT;
    }
    pthread_mutex_lock(&mu);
    w->post[me] = o->p;
    w->posted[me] = o->seq + 1;
    pthread_cond_broadcast(&cv);
    for (uint32_t r = 0; r < n; ++r) {
        while (w->posted[r] < o->seq + 1) {
            if (w->broken) {
                pthread_mutex_unlock(&mu);
                snprintf(err, cap, "HcclAlltoAllV on rank %u: a peer left the collective", me);
                return ACL_ERROR_RT_COMM_FAILURE;
            }
            if (!wait_until(deadline)) {
                char why[128];
                snprintf(why, sizeof why, "rank %u did not reach collective %llu before the timeout", r,
                         (unsigned long long)o->seq);
                int code = leave(w, timeout, err, cap, why, me);
                pthread_mutex_unlock(&mu);
                return code;
            }
        }
    }
    for (uint32_t r = 0; r < n; ++r) {
        if (w->post[r].sc[me] != o->p.rc[r]) {
            char why[160];
            snprintf(why, sizeof why, "rank %u sends %llu bytes but rank %u expects %llu", r,
                     (unsigned long long)w->post[r].sc[me], me, (unsigned long long)o->p.rc[r]);
            int code = leave(w, ACL_ERROR_RT_COMM_FAILURE, err, cap, why, me);
            pthread_mutex_unlock(&mu);
            return code;
        }
    }
    for (uint32_t r = 0; r < n; ++r) {
        memcpy(o->p.recv + o->p.rd[r], w->post[r].send + w->post[r].sd[me], o->p.rc[r]);
    }
    w->done[me] = o->seq + 1;
    pthread_cond_broadcast(&cv);
    /* Nobody reuses a send buffer before every peer has read it. */
    for (uint32_t r = 0; r < n; ++r) {
        while (w->done[r] < o->seq + 1 && !w->broken) {
            if (!wait_until(deadline)) {
                int code = leave(w, timeout, err, cap, "a peer did not finish the collective", me);
                pthread_mutex_unlock(&mu);
                return code;
            }
        }
    }
    pthread_mutex_unlock(&mu);
    return 0;
}

int HcclAlltoAllV(const void* send, const void* send_counts, const void* sdispls, int send_type, const void* recv,
                  const void* recv_counts, const void* rdispls, int recv_type, void* comm, void* stream)
{
    const char* call = "HcclAlltoAllV";
    struct comm* c = comm;
    fake_acl_log("%s comm=%p stream=%p", call, comm, stream);
    if (!c || !c->live || c->dev != fake_acl_current_device()) {
        return failed(HCCL_E_PARA, call, "%s", "not a live communicator of this thread's device");
    }
    if (send_type != 0 || recv_type != 0) { /* HCCL_DATA_TYPE_INT8: the backend moves bytes */
        return failed(HCCL_E_NOT_SUPPORT, call, "%s", "only int8 elements are modelled");
    }
    int inj = fake_acl_injected(call);
    if (inj) {
        return failed(inj, call, "%s", "injected failure");
    }
    struct op* o = calloc(1, sizeof *o);
    o->c = c;
    o->p.send = send;
    o->p.recv = (uint8_t*)recv;
    uint32_t n = c->w->ranks;
    memcpy(o->p.sc, send_counts, n * 8);
    memcpy(o->p.sd, sdispls, n * 8);
    memcpy(o->p.rc, recv_counts, n * 8);
    memcpy(o->p.rd, rdispls, n * 8);
    size_t send_room = fake_acl_extent(send, NULL), recv_room = fake_acl_extent(recv, NULL);
    for (uint32_t r = 0; r < n; ++r) {
        if (o->p.sd[r] + o->p.sc[r] > send_room || o->p.rd[r] + o->p.rc[r] > recv_room) {
            free(o);
            return failed(HCCL_E_PARA, call, "%s", "a count + displacement lies outside its device buffer");
        }
    }
    int e = fake_acl_enqueue(stream, run_all_to_all, free, o, FAKE_COLLECTIVE_NS, call);
    return e ? failed(HCCL_E_PARA, call, "%s", "the stream refused the task") : 0;
}

int HcclCommDestroy(void* comm)
{
    struct comm* c = comm;
    fake_acl_log("HcclCommDestroy %p", comm);
    if (!c || !c->live) {
        return failed(HCCL_E_PARA, "HcclCommDestroy", "%s", "not a live communicator");
    }
    pthread_mutex_lock(&mu);
    c->live = 0;
    c->w->live_comms--;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Control: communicators not destroyed. */
int fake_hccl_live_comms(void)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nworlds; ++i) {
        n += worlds[i]->live_comms;
    }
    pthread_mutex_unlock(&mu);
    return n;
}
