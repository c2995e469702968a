/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared definitions of kfd_ioctl_test: the test context, the kernel-private
 * encodings user space depends on (§1.5) and small ioctl helpers.
 *
 * Every expectation in this program is the behaviour of the Linux 6.1 amdkfd
 * driver as written down in Documentation/kfd-interface.md; a test names
 * the section it pins (§N.N: that document's sections). Where that page is silent, the 6.1 driver's behaviour
 * is used and the name says "(6.1)".
 */
#ifndef KFD_TEST_H
#define KFD_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/kfd_ioctl.h>

#include "tap.h"

#define MAX_GPUS 16
#define PAGE_SZ 4096ULL

/* §1.5: /dev/kfd mmap offset encoding (kfd_priv.h, the de-facto ABI). */
#define MMAP_TYPE_DOORBELL (0x3ULL << 62)
#define MMAP_TYPE_EVENTS (0x2ULL << 62)
#define MMAP_TYPE_MMIO (0x0ULL << 62)
#define MMAP_GPU_ID(id) (((uint64_t)(id) << 46) & (0xffffULL << 46))

/* §1.5/§3.5: gfx9 process doorbell slice = 1024 doorbells of 8 bytes. */
#define DOORBELL_SLICE 8192ULL
/* §1.7: the start of the user GPUVM aperture; CRIU skips BOs at or below it. */
#define GPUVM_BASE 0x4000ULL
/* §1.6: signal page = 4096 slots of 8 bytes. */
#define EVENT_PAGE_SIZE (KFD_SIGNAL_EVENT_LIMIT * 8ULL)
#define UNSIGNALED_SLOT 0xffffffffffffffffULL

/*
 * 6.8 (KFD 1.14) and later share memory through KFD's own DRM file of each GPU: IMPORT_DMABUF takes
 * another GPU's buffer, and KFD hands out a buffer's one dma-buf (EXPORT_DMABUF, CRIU CHECKPOINT
 * and RESTORE) where 6.1 exports a new one each time.
 */
#define KFD_SHARES_THROUGH_DRM (KFD_IOCTL_MINOR_VERSION >= 14)

#define HANDLE_GPU(h) ((uint32_t)((h) >> 32))
#define HANDLE_IDR(h) ((uint32_t)((h)&0xffffffffu))

#define ALLOC_VRAM KFD_IOC_ALLOC_MEM_FLAGS_VRAM
#define ALLOC_GTT KFD_IOC_ALLOC_MEM_FLAGS_GTT
#define ALLOC_USERPTR KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
#define ALLOC_DOORBELL KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
#define ALLOC_MMIO KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
#define ALLOC_WRITABLE KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
#define ALLOC_EXEC KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE
#define ALLOC_PUBLIC KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
#define ALLOC_NO_SUBST KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
#define ALLOC_COHERENT KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
#define ALLOC_UNCACHED KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED

struct gpu {
	uint32_t id;
	unsigned int node;	  /* topology node index */
	unsigned int render_minor;
	uint64_t vram_size;	  /* sum of the node's FB mem banks */
	unsigned int num_xcc;	  /* XCCs the node runs as one GPU (1 where KFD prints none) */
	int render_fd;		  /* the main process' render file, given to ACQUIRE_VM */
};

struct ctx {
	int kfd;		  /* the main process' /dev/kfd */
	unsigned int n_nodes;	  /* all topology nodes, CPU ones included */
	unsigned int n_gpus;
	struct gpu gpu[MAX_GPUS];
	uint32_t bogus_gpu_id;	  /* a 16-bit id no GPU has */
	uint64_t va_next, va_end; /* bump allocator over a PROT_NONE reservation */
	bool debugfs;		  /* the emulator's fault-injection file is reachable */
};

struct bo {
	uint64_t va, size, handle, mmap_offset;
	uint32_t gpu_id, flags;
};

/* util.c */
int kfd_ioctl(int fd, unsigned long request, void *arg);
int ctx_init(struct ctx *ctx);
int open_kfd(void);
int open_render(const struct gpu *gpu);
const struct gpu *gpu_by_id(const struct ctx *ctx, uint32_t id);
uint64_t va_alloc(struct ctx *ctx, uint64_t size);
uint32_t ctx_gpu_ids(const struct ctx *ctx, uint32_t *ids);

int acquire_vm(int kfd, int drm_fd, uint32_t gpu_id);
int acquire_all(const struct ctx *ctx, int kfd, int *render_fds);
int bo_alloc(int kfd, struct bo *bo, uint32_t gpu_id, uint64_t va, uint64_t size,
	     uint32_t flags, uint64_t userptr);
int bo_free(int kfd, uint64_t handle);
int bo_map(int kfd, uint64_t handle, const uint32_t *ids, uint32_t n, uint32_t *n_success);
int bo_unmap(int kfd, uint64_t handle, const uint32_t *ids, uint32_t n, uint32_t *n_success);
void *bo_cpu_map(int render_fd, uint64_t offset, uint64_t size, int prot, int flags);

void fill_pattern(void *p, size_t len, uint32_t seed);
bool check_pattern(const void *p, size_t len, uint32_t seed, size_t *bad);

int criu_op(int kfd, struct kfd_ioctl_criu_args *args, uint32_t op);

struct queue_mem {
	void *ring;
	uint64_t *wptr;
	void *eop;
	void *ctx_save;
};
int queue_mem_init(struct queue_mem *m);
void queue_mem_free(struct queue_mem *m);
void queue_args_init(struct kfd_ioctl_create_queue_args *a, uint32_t gpu_id,
		     const struct queue_mem *m, volatile uint64_t *rptr);

bool wait_changes(volatile uint64_t *p, int timeout_ms);
bool stays_still(volatile uint64_t *p, int window_ms, uint64_t *before, uint64_t *after);
void sleep_ms(int ms);

int send_fd(int sock, int fd);
int recv_fd(int sock);
int drop_criu_caps(void);

void *dmabuf_map(int render_fd, int dmabuf_fd, uint64_t size, int prot, uint64_t *gem_offset,
		 uint32_t *gem_handle);
void dmabuf_unmap(int render_fd, void *p, uint64_t size, uint32_t gem_handle);

pid_t run_child(const char *what, void (*fn)(struct ctx *, void *), struct ctx *ctx, void *arg);
bool wait_child(pid_t pid, const char *what);

int kfd_proc_number(pid_t pid, const char *rel, uint64_t *v);
int kfd_proc_vram(pid_t pid, uint32_t gpu_id, uint64_t *bytes);

bool debugfs_ready(void);
int fault_arm(const char *cmd);

/* Test areas, in the order main() runs them. */
void test_version_and_dispatch(struct ctx *ctx);
void test_apertures(struct ctx *ctx);
void test_before_acquire(struct ctx *ctx);
void test_acquire_vm(struct ctx *ctx);
void test_memory_policy(struct ctx *ctx);
void test_xnack(struct ctx *ctx);
void test_alloc(struct ctx *ctx);
void test_mmap(struct ctx *ctx);
void test_map_unmap(struct ctx *ctx);
void test_free(struct ctx *ctx);
void test_available_memory(struct ctx *ctx);
void test_queues(struct ctx *ctx);
void test_events(struct ctx *ctx);
void test_misc(struct ctx *ctx);
void test_non_owner(struct ctx *ctx);
void test_newer_kfd(struct ctx *ctx);
void test_criu(struct ctx *ctx);
void test_sharing(struct ctx *ctx);
void test_contexts(struct ctx *ctx);
void test_kfd_procfs(struct ctx *ctx);
void test_profiler(struct ctx *ctx);
void test_fault_injection(struct ctx *ctx);

#endif
