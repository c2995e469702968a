/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the end-to-end workloads share: the command line, the content
 * pattern, the state and result files, the /proc/self/maps view, guarded
 * memory reads, the check and the rewrite of a BO, the heartbeat check and
 * the signal loop with its verify/heartbeat/rewrite/teardown contract, and
 * the host memory of --host-mb. The contract they implement for the
 * scenarios is test/e2e/README.md.
 */
#ifndef E2E_WORKLOAD_H
#define E2E_WORKLOAD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WL_MAX_GPUS 16
#define WL_PAGE	    4096ULL

/* Exit codes of the contract. */
#define WL_EXIT_OK    0 /* SIGTERM/SIGINT after a clean run */
#define WL_EXIT_SETUP 1 /* the GPU state could not be built */
#define WL_EXIT_USAGE 2
#define WL_EXIT_SKIP  77 /* no KFD, or fewer GPUs than asked for */

#define WL_DEFAULT_VRAM_MB	 8
#define WL_DEFAULT_BO_MB	 2
#define WL_DEFAULT_HB_TIMEOUT_MS 2000
#define WL_DEFAULT_REWRITE_PCT	 10

struct wl_opts {
	unsigned int gpus;	    /* 0: every GPU node */
	unsigned int vram_mb[WL_MAX_GPUS]; /* per GPU, in GPU order */
	unsigned int bo_mb;	    /* largest content BO */
	unsigned int hb_timeout_ms; /* how long a queue may look stalled */
	unsigned int rewrite_pct;   /* share of the content bytes a rewrite (SIGHUP) changes */
	unsigned int host_mb;	    /* ordinary host memory that every verification checks */
	const char *state;	    /* state file; results go to <state>.verify/.heartbeat/.rewrite */
	bool render_first;	    /* open the render nodes before /dev/kfd (kfd_workload) */
	bool gem;		    /* GEM handles beside the KFD buffers (rocr_workload) */
	bool always_valid;	    /* a VM_ALWAYS_VALID GEM buffer too (render_workload) */
};

/* parse the common options; exits with WL_EXIT_USAGE on a bad command line */
void wl_parse_opts(int argc, char **argv, struct wl_opts *o);
/* A workload's own number option: @s as an integer in min..max, or exit(WL_EXIT_USAGE) naming @opt */
unsigned int wl_parse_uint(const char *opt, const char *s, unsigned int min, unsigned int max);

extern const char *wl_prog;

/* messages: setup errors to stderr with the program name */
void wl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wl_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- sysfs topology ---------------------------------------------------- */

struct wl_gpu_node {
	unsigned int node; /* sysfs topology node index (hsakmt_workload: the thunk's NodeId) */
	uint32_t gpu_id;
	unsigned int render_minor;
	uint32_t simd_count, simd_per_cu, array_count, simd_arrays_per_engine;
	uint32_t gfx_target_version;
	uint32_t location_id, domain; /* PCI address: bus << 8 | device << 3 | function, and domain */
};

#define WL_TOPOLOGY "/sys/class/kfd/kfd/topology/nodes"

/* GPU nodes in node order; returns their number, or -errno; *n_nodes = all nodes */
int wl_gpu_nodes(struct wl_gpu_node *out, unsigned int max, unsigned int *n_nodes);

/* ---- content pattern ----------------------------------------------------- */

/* The 64-bit word at byte offset @off of content BO @bo; zero in the runs --zeros asks for. */
extern unsigned int wl_zero_pct; /* --zeros: percent of the content in zero runs */
extern uint64_t wl_zero_run;	 /* their length in bytes */
uint64_t wl_pattern(uint64_t seed, uint32_t bo, uint64_t off);
void wl_fill(void *p, uint64_t size, uint64_t seed, uint32_t bo);

/*
 * The seed of generation @gen of a BO's pattern: @seed itself for generation 0 (the pattern set
 * up), a mix of both for the generations rewrites give it.
 */
uint64_t wl_generation_seed(uint64_t seed, uint32_t gen);

/* ---- host memory (--host-mb) ------------------------------------------------ */

/*
 * --host-mb MiB of anonymous private memory, every word written, with a pattern of its own seed
 * that differs from page to page and from run to run: none of it is zeros or a copy of another page,
 * so a checkpoint must carry all of it. Nothing without --host-mb. Call once before the state
 * file is written; 0, or WL_EXIT_SETUP with the error said. wl_serve's verification checks it
 * after the workload's own checks.
 */
int wl_host_setup(const struct wl_opts *o);

/* Its "host va 0x... size 0x... seed 0x..." line for the state file; nothing without --host-mb. */
void wl_host_state(FILE *f);

/* ---- verification report ------------------------------------------------ */

struct wl_report {
	unsigned int failures;
	unsigned int checks;
	char first[512]; /* the first failure, for the VERIFY FAIL line */
	char *log;	 /* every failure, one per line */
	size_t log_len, log_cap;
};

void wl_report_init(struct wl_report *r);
void wl_report_free(struct wl_report *r);
void wl_fail(struct wl_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wl_pass(struct wl_report *r);

/*
 * Compare @size bytes at @p against the pattern of BO @bo; records a failure
 * named @what with the first mismatch and the number of bad words. Reads are
 * guarded: a fault is a failure, not a crash. Returns true when all match.
 */
bool wl_check_pattern(struct wl_report *r, const char *what, const void *p, uint64_t size, uint64_t seed, uint32_t bo);

/* Read one u64 through a guard; false (and a failure) if the access faults. */
bool wl_probe_read(struct wl_report *r, const char *what, const volatile void *p, uint64_t *val);

/* Install the SIGSEGV/SIGBUS handler the guarded reads need. */
void wl_guard_init(void);

/* ---- /proc/self/maps ------------------------------------------------------ */

struct wl_vma {
	uint64_t start, end, offset;
	char perms[5];
	char path[256];
};

/* The mapping that contains @addr; false if none. */
bool wl_find_vma(uint64_t addr, struct wl_vma *v);

enum wl_backing {
	WL_BACK_RENDER, /* /dev/dri/renderD* */
	WL_BACK_KFD,	/* /dev/kfd */
	WL_BACK_ANON,	/* anonymous memory */
};

/* The file offset that address @va of mapping @v maps. */
static inline uint64_t wl_vma_offset(const struct wl_vma *v, uint64_t va)
{
	return v->offset + (va - v->start);
}

/* The minor of the render node @v maps, or -1. */
int wl_vma_render_minor(const struct wl_vma *v);

/*
 * Check that [va, va + size) lies in one mapping with the given backing and
 * permissions (e.g. "rw-s", or alternatives: "rw-p|rwxp"); that mapping goes
 * to *vma if not NULL.
 */
bool wl_check_mapping(struct wl_report *r, const char *what, uint64_t va, uint64_t size, enum wl_backing backing,
		      const char *perms, struct wl_vma *vma);

/*
 * Map @size bytes of render-node BO memory at mmap offset @offset read-write
 * (MAP_SHARED) somewhere, through the render file @fd, or if @fd < 0 (or it
 * refuses) through any open file of the same render node. NULL on failure,
 * with errno of the last attempt.
 */
void *wl_map_render(int fd, unsigned int render_minor, uint64_t offset, uint64_t size);

/* ---- state and result files ----------------------------------------------- */

/* A temporary file next to @path; commit renames it into place atomically. */
FILE *wl_state_begin(const char *path, char *tmp, size_t tmplen);
int wl_state_commit(FILE *f, const char *tmp, const char *path);

/*
 * The state file at @path, written atomically by @fill; 0, or WL_EXIT_SETUP with the error
 * said.
 */
int wl_state_write(const char *path, void (*fill)(FILE *f, void *ctx), void *ctx);

/* Write "<line>\n[details]" to <state><suffix> atomically and to stdout. */
void wl_publish(const char *state, const char *suffix, const char *line, const char *details);

/* ---- queues --------------------------------------------------------------- */

struct wl_heartbeat {
	const char *name; /* e.g. "queue 0 (gpu 0xc1e6)" */
	const volatile uint64_t *rptr;
};

/* Wait until each read pointer advanced at least twice, within @timeout_ms. */
void wl_check_heartbeats(struct wl_report *r, const struct wl_heartbeat *hb, unsigned int n, unsigned int timeout_ms);

/* ---- the main loop ---------------------------------------------------------- */

/* What one rewrite did, for its REWRITE OK line. */
struct wl_rewrite {
	unsigned int bos; /* content BOs rewritten */
	uint64_t bytes;	  /* their size */
	uint64_t total;	  /* the content bytes a rewrite takes its share of */
	unsigned int n;	  /* rewrites served so far, this one included */
};

/*
 * What each workload does for the contract; wl_serve does the rest (the
 * signals, the result files, the report lines).
 */
struct wl_ops {
	/* Check the state the workload built: memory, handles, events, queues. */
	void (*verify)(void *ctx, struct wl_report *r);
	/*
	 * Check that its queues run. SIGUSR2 runs it alone; SIGUSR1 runs it
	 * after verify, so that VERIFY OK always includes the heartbeat.
	 */
	void (*heartbeat)(void *ctx, struct wl_report *r);
	/* Free what setup built, after SIGTERM/SIGINT or a failed setup. */
	void (*teardown)(void *ctx);
	/*
	 * SIGHUP: give the next content BOs, in rotation, the next generation of
	 * their pattern until at least @pct % of the content bytes are rewritten;
	 * what it did goes to @w, what failed to @r. NULL: the workload cannot
	 * (REWRITE FAIL).
	 */
	void (*rewrite)(void *ctx, unsigned int pct, struct wl_rewrite *w, struct wl_report *r);
	/*
	 * SIGRTMIN+1, SIGRTMIN+2: make the GPU fault on purpose, as @kind
	 * ("memory": a memory violation, "illegal": an illegal instruction)
	 * says, and check that the
	 * runtime reports it to the application within WL_FAULT_REPORT_MS; how
	 * long it took goes to *@ms. NULL: the workload cannot (FAULT FAIL).
	 */
	void (*fault)(void *ctx, const char *kind, unsigned int *ms, struct wl_report *r);
};

/* How soon a GPU fault must reach the application (issue: a restored job never hangs) */
#define WL_FAULT_REPORT_MS 5000

/* Block the contract's signals; call before building any state. */
void wl_signals_block(void);

/*
 * Print READY and serve SIGUSR1 (verify), SIGUSR2 (heartbeat), SIGHUP
 * (rewrite), SIGRTMIN+1 and +2 (a memory fault, an illegal instruction)
 * until SIGTERM or SIGINT; returns the exit code.
 */
int wl_serve(const struct wl_opts *o, const struct wl_ops *ops, void *ctx);

/* A seed for the content pattern that differs from run to run. */
uint64_t wl_seed(void);

/*
 * The GPUs to use: the first --gpus of the topology's GPU nodes (all of them
 * without it) into @gpus; 0, or WL_EXIT_SKIP (with a message) if there are
 * too few. *n_nodes = all topology nodes, CPUs included.
 */
int wl_pick_gpus(const struct wl_opts *o, struct wl_gpu_node *gpus, unsigned int *n_gpus, unsigned int *n_nodes);

/*
 * The content BOs of GPU @gpu: --vram-mb split into BOs of at most --bo-mb,
 * at least two (one with host access, one without), in whole pages but the
 * last. Their number, and the size of BO @i of them.
 */
unsigned int wl_content_bos(const struct wl_opts *o, unsigned int gpu);
uint64_t wl_content_bo_size(const struct wl_opts *o, unsigned int gpu, unsigned int i);

/* Room for one more item of @size bytes at index @n of a growing array; NULL if out of memory. */
void *wl_array_slot(void **items, unsigned int n, unsigned int *cap, size_t size);

/* ---- BOs ------------------------------------------------------------------- */

/* How a BO of a workload shows in its address space. */
struct wl_bo_view {
	const char *name; /* e.g. "bo 3 (vram, gpu 0xc1e6, va 0x..., size 0x...)" */
	uint64_t va, size;
	enum wl_backing backing;
	const char *perms; /* "---p": no host access */
	bool content;	   /* holds the pattern of BO @index */
	uint32_t index;
	uint64_t seed;
	uint32_t generation; /* of the pattern it holds (wl_generation_seed) */
	int render_fd;	     /* the workload's render file of the BO's GPU, or -1 */
};

/*
 * The BO is mapped as it was set up, and its content is the pattern: read in
 * place, or for VRAM without host access through a new mapping of its render
 * node at the offset it has now (a restore moves it, maybe to another render
 * node). A BO without content must still be readable where it is mapped
 * for the host.
 */
void wl_check_bo(struct wl_report *r, const struct wl_bo_view *bo);

/*
 * Fill content BO @bo with the pattern of its @bo->generation, where it is
 * mapped, or for VRAM without host access through a new mapping of its render
 * node at its current offset, as wl_check_bo reads it. Writes are guarded: a
 * fault is a failure in @r, and the BO then holds neither generation. True
 * when every byte was written.
 */
bool wl_rewrite_bo(struct wl_report *r, const struct wl_bo_view *bo);

static inline uint64_t wl_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif /* E2E_WORKLOAD_H */
