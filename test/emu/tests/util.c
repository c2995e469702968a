// SPDX-License-Identifier: GPL-2.0-only
/*
 * Discovery, thin ioctl wrappers and process plumbing for kfd_ioctl_test.
 * §N.N: sections of Documentation/kfd-interface.md.
 */
#include "kfd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <drm/amdgpu_drm.h>
#include <drm/drm.h>
#include <linux/capability.h>

#define TOPOLOGY "/sys/class/kfd/kfd/topology/nodes"
#define EMU_DEBUGFS "/sys/kernel/debug/amdgpu_emu"

int kfd_ioctl(int fd, unsigned long request, void *arg)
{
	int r;

	do
		r = ioctl(fd, request, arg);
	while (r == -1 && errno == EINTR);
	return r == -1 ? -errno : r;
}

static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* sysfs "key value" lines, as the thunk parses them (§3.1). */
static bool prop_get(const char *text, const char *key, uint64_t *val)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			*val = strtoull(line + klen + 1, NULL, 0);
			return true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

static uint64_t node_vram_size(unsigned int node, const char *props)
{
	uint64_t banks = 0, total = 0;

	prop_get(props, "mem_banks_count", &banks);
	for (uint64_t b = 0; b < banks && b < 16; b++) {
		char path[256], text[4096];
		uint64_t heap, size;

		snprintf(path, sizeof(path), TOPOLOGY "/%u/mem_banks/%llu/properties", node,
			 (unsigned long long)b);
		if (read_text(path, text, sizeof(text)))
			continue;
		/* heap_type 1/2 = FB public/private, i.e. VRAM (§3.1). */
		if (prop_get(text, "heap_type", &heap) && (heap == 1 || heap == 2) &&
		    prop_get(text, "size_in_bytes", &size))
			total += size;
	}
	return total;
}

int open_kfd(void)
{
	int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int open_render(const struct gpu *gpu)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/dri/renderD%u", gpu->render_minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ctx_init(struct ctx *ctx)
{
	void *va;

	memset(ctx, 0, sizeof(*ctx));
	ctx->kfd = -1;
	for (unsigned int n = 0;; n++) {
		char path[256], text[8192];
		uint64_t gpu_id, minor = 0;
		struct gpu *gpu;

		snprintf(path, sizeof(path), TOPOLOGY "/%u/gpu_id", n);
		if (read_text(path, text, sizeof(text)))
			break;
		ctx->n_nodes = n + 1;
		gpu_id = strtoull(text, NULL, 0);
		if (!gpu_id)
			continue; /* a CPU node */
		if (ctx->n_gpus == MAX_GPUS) {
			tap_diag("more than %d GPU nodes, ignoring node %u", MAX_GPUS, n);
			continue;
		}
		snprintf(path, sizeof(path), TOPOLOGY "/%u/properties", n);
		if (read_text(path, text, sizeof(text)) ||
		    !prop_get(text, "drm_render_minor", &minor)) {
			tap_diag("node %u: no drm_render_minor in properties", n);
			return -EINVAL;
		}
		gpu = &ctx->gpu[ctx->n_gpus++];
		gpu->id = (uint32_t)gpu_id;
		gpu->node = n;
		gpu->render_minor = (unsigned int)minor;
		gpu->vram_size = node_vram_size(n, text);
		gpu->num_xcc = prop_get(text, "num_xcc", &minor) && minor ? (unsigned int)minor : 1;
		gpu->render_fd = open_render(gpu);
		if (gpu->render_fd < 0) {
			tap_diag("cannot open /dev/dri/renderD%u: %s", gpu->render_minor,
				 strerror(-gpu->render_fd));
			return gpu->render_fd;
		}
	}

	for (uint32_t id = 0xfff0; id > 0; id--) {
		if (!gpu_by_id(ctx, id)) {
			ctx->bogus_gpu_id = id;
			break;
		}
	}

	/*
	 * GPU VAs come out of one PROT_NONE reservation made before any fork, so a
	 * restored child finds the same addresses free, like the thunk's SVM
	 * aperture (§3.4).
	 */
	va = mmap(NULL, 1ULL << 32, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (va == MAP_FAILED)
		return -errno;
	ctx->va_next = ((uint64_t)(uintptr_t)va + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
	ctx->va_end = (uint64_t)(uintptr_t)va + (1ULL << 32);

	ctx->kfd = open_kfd();
	return ctx->kfd < 0 ? ctx->kfd : 0;
}

const struct gpu *gpu_by_id(const struct ctx *ctx, uint32_t id)
{
	for (unsigned int i = 0; i < ctx->n_gpus; i++)
		if (ctx->gpu[i].id == id)
			return &ctx->gpu[i];
	return NULL;
}

uint32_t ctx_gpu_ids(const struct ctx *ctx, uint32_t *ids)
{
	for (unsigned int i = 0; i < ctx->n_gpus; i++)
		ids[i] = ctx->gpu[i].id;
	return ctx->n_gpus;
}

/* Page-aligned VAs with a guard page between allocations. */
uint64_t va_alloc(struct ctx *ctx, uint64_t size)
{
	uint64_t va = ctx->va_next;

	size = (size + 0xffff) & ~0xffffULL;
	ctx->va_next += size + 0x10000;
	if (ctx->va_next > ctx->va_end) {
		fprintf(stderr, "VA reservation exhausted\n");
		abort();
	}
	return va;
}

int acquire_vm(int kfd, int drm_fd, uint32_t gpu_id)
{
	struct kfd_ioctl_acquire_vm_args a = { .drm_fd = (uint32_t)drm_fd, .gpu_id = gpu_id };

	return kfd_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a);
}

/* Opens a fresh render file per GPU and binds it to @kfd's process. */
int acquire_all(const struct ctx *ctx, int kfd, int *render_fds)
{
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		int r;

		render_fds[i] = open_render(&ctx->gpu[i]);
		if (render_fds[i] < 0)
			return render_fds[i];
		r = acquire_vm(kfd, render_fds[i], ctx->gpu[i].id);
		if (r)
			return r;
	}
	return 0;
}

int bo_alloc(int kfd, struct bo *bo, uint32_t gpu_id, uint64_t va, uint64_t size,
	     uint32_t flags, uint64_t userptr)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args a = {
		.va_addr = va,
		.size = size,
		.mmap_offset = userptr,
		.gpu_id = gpu_id,
		.flags = flags,
	};
	int r = kfd_ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);

	memset(bo, 0, sizeof(*bo));
	bo->va = va;
	bo->size = size;
	bo->gpu_id = gpu_id;
	bo->flags = flags;
	if (!r) {
		bo->handle = a.handle;
		bo->mmap_offset = a.mmap_offset;
	}
	return r;
}

int bo_free(int kfd, uint64_t handle)
{
	struct kfd_ioctl_free_memory_of_gpu_args a = { .handle = handle };

	return kfd_ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &a);
}

/*
 * MAP_MEMORY_TO_GPU and UNMAP_MEMORY_FROM_GPU take the same arguments, one
 * layout under two names; n_success goes in and comes back.
 */
_Static_assert(sizeof(struct kfd_ioctl_map_memory_to_gpu_args) ==
		       sizeof(struct kfd_ioctl_unmap_memory_from_gpu_args),
	       "MAP and UNMAP_MEMORY take one layout");

static int bo_map_ioctl(int kfd, unsigned long req, uint64_t handle, const uint32_t *ids, uint32_t n,
			uint32_t *n_success)
{
	struct kfd_ioctl_map_memory_to_gpu_args a = {
		.handle = handle,
		.device_ids_array_ptr = (uint64_t)(uintptr_t)ids,
		.n_devices = n,
		.n_success = n_success ? *n_success : 0,
	};
	int r = kfd_ioctl(kfd, req, &a);

	if (n_success)
		*n_success = a.n_success;
	return r;
}

int bo_map(int kfd, uint64_t handle, const uint32_t *ids, uint32_t n, uint32_t *n_success)
{
	return bo_map_ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, ids, n, n_success);
}

int bo_unmap(int kfd, uint64_t handle, const uint32_t *ids, uint32_t n, uint32_t *n_success)
{
	return bo_map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, ids, n, n_success);
}

void *bo_cpu_map(int render_fd, uint64_t offset, uint64_t size, int prot, int flags)
{
	return mmap(NULL, size, prot, flags, render_fd, (off_t)offset);
}

void fill_pattern(void *p, size_t len, uint32_t seed)
{
	uint32_t *w = p;

	for (size_t i = 0; i < len / 4; i++)
		w[i] = seed ^ (uint32_t)(i * 2654435761u);
}

bool check_pattern(const void *p, size_t len, uint32_t seed, size_t *bad)
{
	const uint32_t *w = p;

	for (size_t i = 0; i < len / 4; i++) {
		if (w[i] != (seed ^ (uint32_t)(i * 2654435761u))) {
			if (bad)
				*bad = i * 4;
			return false;
		}
	}
	return true;
}

int criu_op(int kfd, struct kfd_ioctl_criu_args *args, uint32_t op)
{
	args->op = op;
	return kfd_ioctl(kfd, AMDKFD_IOC_CRIU_OP, args);
}

/*
 * Queue memory the way the thunk lays it out (§3.5), all in ordinary
 * anonymous memory: the 6.1 driver only access_ok()s these addresses.  The
 * context save area has room for one 64 KiB area per XCC of an MI300X in
 * SPX mode (8), as the thunk allocates it there.
 */
#define QUEUE_MEM_SIZE (128 * 1024 + 8 * 64 * 1024)

int queue_mem_init(struct queue_mem *m)
{
	uint8_t *base = mmap(NULL, QUEUE_MEM_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		return -errno;
	memset(base, 0, QUEUE_MEM_SIZE);
	m->ring = base;
	m->wptr = (uint64_t *)(base + 64 * 1024);
	m->eop = base + 68 * 1024;
	m->ctx_save = base + 128 * 1024;
	return 0;
}

void queue_mem_free(struct queue_mem *m)
{
	munmap(m->ring, QUEUE_MEM_SIZE);
}

void queue_args_init(struct kfd_ioctl_create_queue_args *a, uint32_t gpu_id,
		     const struct queue_mem *m, volatile uint64_t *rptr)
{
	memset(a, 0, sizeof(*a));
	a->ring_base_address = (uint64_t)(uintptr_t)m->ring;
	a->write_pointer_address = (uint64_t)(uintptr_t)m->wptr;
	a->read_pointer_address = (uint64_t)(uintptr_t)rptr;
	a->ring_size = 4096;
	a->gpu_id = gpu_id;
	a->queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
	a->queue_percentage = 100;
	a->queue_priority = 7;
	a->eop_buffer_address = (uint64_t)(uintptr_t)m->eop;
	a->eop_buffer_size = 4096;
	a->ctx_save_restore_address = (uint64_t)(uintptr_t)m->ctx_save;
	a->ctx_save_restore_size = 64 * 1024;
	a->ctl_stack_size = 4096;
}

void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* True once the emulator's heartbeat has moved *p. */
bool wait_changes(volatile uint64_t *p, int timeout_ms)
{
	uint64_t start = *p;

	for (int t = 0; t < timeout_ms; t += 5) {
		if (*p != start)
			return true;
		sleep_ms(5);
	}
	return *p != start;
}

/*
 * True if *p does not move over @window_ms. A short settle time first lets a
 * heartbeat tick that raced with the pausing ioctl land.
 */
bool stays_still(volatile uint64_t *p, int window_ms, uint64_t *before, uint64_t *after)
{
	sleep_ms(30);
	*before = *p;
	sleep_ms(window_ms);
	*after = *p;
	return *before == *after;
}

/* One byte over a unix socket with room for one fd beside it (SCM_RIGHTS). */
struct fd_msg {
	char byte;
	struct iovec iov;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg;
};

static void fd_msg_init(struct fd_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->byte = 'F';
	m->iov = (struct iovec){ .iov_base = &m->byte, .iov_len = 1 };
	m->msg = (struct msghdr){
		.msg_iov = &m->iov,
		.msg_iovlen = 1,
		.msg_control = m->u.buf,
		.msg_controllen = sizeof(m->u.buf),
	};
}

int send_fd(int sock, int fd)
{
	struct fd_msg m;
	struct cmsghdr *c;

	fd_msg_init(&m);
	c = CMSG_FIRSTHDR(&m.msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m.msg, 0) == 1 ? 0 : -errno;
}

int recv_fd(int sock)
{
	struct fd_msg m;
	struct cmsghdr *c;
	int fd;

	fd_msg_init(&m);
	if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	c = CMSG_FIRSTHDR(&m.msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EIO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Leaves root without the two capabilities CRIU_OP accepts (§2.0 item 3). */
int drop_criu_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	const int caps[] = { CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE };

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		data[CAP_TO_INDEX(caps[i])].effective &= ~CAP_TO_MASK(caps[i]);
		data[CAP_TO_INDEX(caps[i])].permitted &= ~CAP_TO_MASK(caps[i]);
		data[CAP_TO_INDEX(caps[i])].inheritable &= ~CAP_TO_MASK(caps[i]);
	}
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/*
 * Reaches a BO's pages through a dma-buf the way the plugin's copy path does
 * (§4.4): import into a render file of the same device - which must resolve
 * to the very GEM object - then GEM_MMAP for its fake offset and mmap that.
 */
void *dmabuf_map(int render_fd, int dmabuf_fd, uint64_t size, int prot, uint64_t *gem_offset,
		 uint32_t *gem_handle)
{
	struct drm_prime_handle prime = { .fd = dmabuf_fd };
	union drm_amdgpu_gem_mmap mm;
	void *p;
	int r;

	r = kfd_ioctl(render_fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &prime);
	if (r) {
		errno = -r;
		return MAP_FAILED;
	}
	memset(&mm, 0, sizeof(mm));
	mm.in.handle = prime.handle;
	r = kfd_ioctl(render_fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mm);
	if (r) {
		struct drm_gem_close gc = { .handle = prime.handle };

		kfd_ioctl(render_fd, DRM_IOCTL_GEM_CLOSE, &gc);
		errno = -r;
		return MAP_FAILED;
	}
	*gem_offset = mm.out.addr_ptr;
	*gem_handle = prime.handle;
	p = mmap(NULL, size, prot, MAP_SHARED, render_fd, (off_t)mm.out.addr_ptr);
	if (p == MAP_FAILED) {
		int e = errno;
		struct drm_gem_close gc = { .handle = prime.handle };

		kfd_ioctl(render_fd, DRM_IOCTL_GEM_CLOSE, &gc);
		errno = e;
	}
	return p;
}

void dmabuf_unmap(int render_fd, void *p, uint64_t size, uint32_t gem_handle)
{
	struct drm_gem_close gc = { .handle = gem_handle };

	if (p != MAP_FAILED)
		munmap(p, size);
	kfd_ioctl(render_fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

/*
 * Runs @fn in a forked child: a new mm, hence (§2.0 item 5) a new kfd
 * process the moment it opens /dev/kfd. The child reports its own TAP lines.
 */
pid_t run_child(const char *what, void (*fn)(struct ctx *, void *), struct ctx *ctx, void *arg)
{
	pid_t pid = fork();

	if (pid < 0) {
		tap_ok(false, "%s: fork", what);
		tap_diag("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		alarm(120);
		fn(ctx, arg);
		_exit(0);
	}
	return pid;
}

bool wait_child(pid_t pid, const char *what)
{
	int status;

	if (pid < 0)
		return false;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			tap_ok(false, "%s: child reaped", what);
			return false;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	tap_ok(false, "%s: child exited cleanly", what);
	if (WIFSIGNALED(status))
		tap_diag("child killed by signal %d", WTERMSIG(status));
	else
		tap_diag("child status 0x%x", status);
	return false;
}

/* A number of /sys/class/kfd/kfd/proc/<pid>/<rel>, printed as KFD prints them: decimal, newline. */
int kfd_proc_number(pid_t pid, const char *rel, uint64_t *v)
{
	char path[256], text[32], *end;
	int r;

	snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/%s", (int)pid, rel);
	r = read_text(path, text, sizeof(text));
	if (r)
		return r;
	*v = strtoull(text, &end, 10);
	return end != text && !strcmp(end, "\n") ? 0 : -EINVAL;
}

/* proc/<pid>/vram_<gpu_id>: the bytes of VRAM KFD counts for the process on that GPU. */
int kfd_proc_vram(pid_t pid, uint32_t gpu_id, uint64_t *bytes)
{
	char rel[32];

	snprintf(rel, sizeof(rel), "vram_%u", gpu_id);
	return kfd_proc_number(pid, rel, bytes);
}

bool debugfs_ready(void)
{
	if (!access(EMU_DEBUGFS "/fault", W_OK))
		return true;
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	return !access(EMU_DEBUGFS "/fault", W_OK);
}

int fault_arm(const char *cmd)
{
	int fd = open(EMU_DEBUGFS "/fault", O_WRONLY | O_CLOEXEC);
	size_t len = strlen(cmd);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, cmd, len);
	n = n < 0 ? -errno : n;
	close(fd);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}
