// SPDX-License-Identifier: GPL-2.0-only
//
// libhost-faults.so: the fault sweep's seam for host calls (test/host-faults/README.md). Preloaded
// into criu (LD_PRELOAD) by test/e2e/scenarios/95-fault-sweep.sh only; nothing users run loads it.
//
// It sees the calls the plugin makes on its image files (amdgpu-*.img: open, read, write, pread,
// pwrite, lseek, fstat, ftruncate, close) and for its staging memory (posix_memalign and numa_alloc_onnode called
// from amdgpu_plugin.so), and
//   - with AMDGPU_HOST_CALLS=<file>, appends one line per call to that file: "<call> <what>",
//     <what> being the image's name with criu's file id as "*" (amdgpu-pages-*-c1e6.img) or
//     "staging";
//   - with AMDGPU_HOST_FAULT="<call> <what> <nth> <errno>[;...]", makes the nth such call fail with
//     that errno (a number) and appends "fired <call> <what> <nth>" to the calls file.
// The nth is counted over every process and thread criu runs the plugin in (a restore runs it in
// criu and in the tasks it restores; the plugin copies each GPU's pages in a thread of its own)
// through a small table mapped shared from AMDGPU_HOST_CALLS's "<file>.count" and updated with
// atomic operations only (criu closes inherited descriptors in the tasks it restores, so no lock
// that needs a descriptor would do).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum { kMaxFd = 4096, kSlots = 512, kWhatLen = 96, kMaxFaults = 8 };

// A slot is claimed (0 -> 1) by the first process to see its key, which writes the key and then
// publishes it (1 -> 2); the others wait for the key before they compare it.
struct slot {
	int state;
	unsigned int count;
	char key[kWhatLen + 16];
};

// The plugin's open image files, by fd: name and inode (an fd closed behind our back and reused
// for something else is noticed by its inode).
static struct {
	char name[kWhatLen];
	dev_t dev;
	ino_t ino;
} images[kMaxFd];

static const char *calls_path;
static struct slot *table;
static struct {
	char call[32];
	char what[kWhatLen];
	unsigned int nth;
	int err;
} faults[kMaxFaults];
static int armed; // how many

static int (*real_openat)(int, const char *, int, ...);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fstat)(int, struct stat *);
static int (*real_ftruncate)(int, off_t);
static int (*real_close)(int);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_numa_alloc_onnode)(size_t, int);

// The next definition of a symbol: the C library's (resolved on first use, as the constructors of
// libraries loaded before this one may already call in here). libnuma is loaded by the plugin
// itself, privately (criu dlopens plugins), so it is looked up among the loaded objects by name.
static void *next(const char *name)
{
	void *sym = dlsym(RTLD_NEXT, name);
	if (!sym) {
		void *numa = dlopen("libnuma.so.1", RTLD_LAZY | RTLD_NOLOAD);
		sym = numa ? dlsym(numa, name) : NULL;
	}
	if (!sym) {
		dprintf(2, "host-faults: no %s to call after this seam\n", name);
		abort();
	}
	return sym;
}

static void resolve(void)
{
	static int done;
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return;
	real_openat = next("openat");
	real_read = next("read");
	real_write = next("write");
	real_pread = next("pread");
	real_pwrite = next("pwrite");
	real_lseek = next("lseek");
	real_fstat = next("fstat");
	real_ftruncate = next("ftruncate");
	real_close = next("close");
	real_posix_memalign = next("posix_memalign");
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

#define REAL(fn) (resolve(), real_##fn)

__attribute__((constructor)) static void host_faults_init(void)
{
	calls_path = getenv("AMDGPU_HOST_CALLS");
	if (!calls_path)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s.count", calls_path);
	const int fd = REAL(openat)(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && !REAL(ftruncate)(fd, sizeof(struct slot) * kSlots))
		table = mmap(NULL, sizeof(struct slot) * kSlots, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!table || table == MAP_FAILED) {
		// (a 9p mount without a cache cannot map a file shared: use a local filesystem)
		dprintf(2, "host-faults: cannot share the call counts through %s: %s\n", path, strerror(errno));
		table = NULL;
	}
	if (fd >= 0)
		REAL(close)(fd);
	const char *spec = getenv("AMDGPU_HOST_FAULT");
	char specs[1024];
	snprintf(specs, sizeof(specs), "%s", spec ? spec : "");
	char *save = NULL;
	for (char *one = strtok_r(specs, ";", &save); one && table; one = strtok_r(NULL, ";", &save)) {
		if (armed == kMaxFaults ||
		    sscanf(one, "%31s %95s %u %d", faults[armed].call, faults[armed].what, &faults[armed].nth,
			   &faults[armed].err) != 4) {
			dprintf(2, "host-faults: AMDGPU_HOST_FAULT: cannot take \"%s\"\n", one);
			abort();
		}
		armed++;
	}
}

static void note(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	const int fd = REAL(openat)(AT_FDCWD, calls_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	(void)!REAL(write)(fd, line, (size_t)n); // one O_APPEND write: whole lines across processes
	REAL(close)(fd);
}

// The occurrence this call is of its key, counted across processes; 0 if the table is full.
static unsigned int count(const char *key)
{
	for (int i = 0; i < kSlots; i++) {
		struct slot *sl = &table[i];
		int state = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (state == 0 && __atomic_compare_exchange_n(&sl->state, &state, 1, false, __ATOMIC_ACQ_REL,
							      __ATOMIC_ACQUIRE)) {
			snprintf(sl->key, sizeof(sl->key), "%s", key);
			__atomic_store_n(&sl->state, 2, __ATOMIC_RELEASE);
			state = 2;
		}
		while (state != 2) // another process is writing this slot's key
			state = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (!strcmp(sl->key, key))
			return __atomic_add_fetch(&sl->count, 1, __ATOMIC_ACQ_REL);
	}
	note("table full: %s not counted", key);
	return 0;
}

// Counts the call and says whether it is the one to fail (then with which errno, else 0).
static int host_call(const char *call, const char *what)
{
	if (!table)
		return 0;
	const int saved = errno;
	char key[sizeof(table[0].key)];
	snprintf(key, sizeof(key), "%s %s", call, what);
	const unsigned int nth = count(key);
	note("%s", key);
	int err = 0;
	for (int i = 0; i < armed && !err; i++) {
		if (nth != faults[i].nth || strcmp(call, faults[i].call) || strcmp(what, faults[i].what))
			continue;
		err = faults[i].err;
		note("fired %s %u", key, nth);
	}
	errno = saved;
	return err;
}

static const char *image_of(int fd)
{
	if (fd < 0 || fd >= kMaxFd || !images[fd].name[0])
		return NULL;
	struct stat st;
	if (syscall(SYS_fstat, fd, &st) || st.st_dev != images[fd].dev || st.st_ino != images[fd].ino) {
		images[fd].name[0] = 0;
		return NULL;
	}
	return images[fd].name;
}

// Calls from the plugin's own code, not from criu or a library it uses.
static int from_plugin(const void *caller)
{
	Dl_info info;
	return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "amdgpu_plugin.so");
}

// An image's name with criu's file id (the first number) as "*": amdgpu-pages-*-c1e6.img. The ids
// follow criu's numbering of every file and mapping of the dumped tree, which can move between
// two dumps of the same task; the calls on one image must keep their name.
static void image_kind(const char *base, char what[kWhatLen])
{
	const size_t digits = strcspn(base, "0123456789");
	const size_t run = strspn(base + digits, "0123456789");
	if (!base[digits])
		snprintf(what, kWhatLen, "%s", base);
	else
		snprintf(what, kWhatLen, "%.*s*%s", (int)digits, base, base + digits + run);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const size_t len = strlen(base);
	const int image = table && !strncmp(base, "amdgpu-", 7) && len > 4 && len < kWhatLen &&
			  !strcmp(base + len - 4, ".img");
	char what[kWhatLen];
	if (image) {
		image_kind(base, what);
		const int err = host_call("open", what);
		if (err) {
			errno = err;
			return -1;
		}
	}
	const int fd = REAL(openat)(dirfd, path, flags, mode);
	struct stat st;
	if (image && fd >= 0 && fd < kMaxFd && !REAL(fstat)(fd, &st)) {
		snprintf(images[fd].name, sizeof(images[fd].name), "%s", what);
		images[fd].dev = st.st_dev;
		images[fd].ino = st.st_ino;
	}
	return fd;
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

#define FAIL_ON_IMAGE(call, fd, ret)                                                                               \
	do {                                                                                                       \
		const char *name = image_of(fd);                                                                   \
		const int err = name ? host_call(call, name) : 0;                                                  \
		if (err) {                                                                                         \
			errno = err;                                                                               \
			return ret;                                                                                \
		}                                                                                                  \
	} while (0)

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	FAIL_ON_IMAGE("read", fd, -1);
	return REAL(read)(fd, buf, count);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	FAIL_ON_IMAGE("write", fd, -1);
	return REAL(write)(fd, buf, count);
}

EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
	FAIL_ON_IMAGE("pread", fd, -1);
	return REAL(pread)(fd, buf, count, offset);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
	FAIL_ON_IMAGE("pwrite", fd, -1);
	return REAL(pwrite)(fd, buf, count, offset);
}

EXPORT off_t lseek(int fd, off_t offset, int whence)
{
	FAIL_ON_IMAGE("lseek", fd, -1);
	return REAL(lseek)(fd, offset, whence);
}

EXPORT int fstat(int fd, struct stat *st)
{
	FAIL_ON_IMAGE("fstat", fd, -1);
	return REAL(fstat)(fd, st);
}

EXPORT int ftruncate(int fd, off_t length)
{
	FAIL_ON_IMAGE("ftruncate", fd, -1);
	return REAL(ftruncate)(fd, length);
}

// The 64-bit-offset names (_FILE_OFFSET_BITS=64): on x86-64 the same calls.
EXPORT off64_t lseek64(int fd, off64_t offset, int whence)
{
	return lseek(fd, offset, whence);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t offset)
{
	return pread(fd, buf, count, offset);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset)
{
	return pwrite(fd, buf, count, offset);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	return fstat(fd, (struct stat *)st);
}

EXPORT int ftruncate64(int fd, off64_t length)
{
	return ftruncate(fd, length);
}

// As Linux's close: the descriptor is gone even when close reports an error.
EXPORT int close(int fd)
{
	const char *name = image_of(fd);
	const int err = name ? host_call("close", name) : 0;
	if (name)
		images[fd].name[0] = 0;
	const int ret = REAL(close)(fd);
	if (err) {
		errno = err;
		return -1;
	}
	return ret;
}

EXPORT int posix_memalign(void **p, size_t alignment, size_t size)
{
	if (table && from_plugin(__builtin_return_address(0))) {
		const int err = host_call("posix_memalign", "staging");
		if (err)
			return err;
	}
	return REAL(posix_memalign)(p, alignment, size);
}

EXPORT void *numa_alloc_onnode(size_t size, int node)
{
	if (table && from_plugin(__builtin_return_address(0)) && host_call("numa_alloc_onnode", "staging")) {
		errno = ENOMEM;
		return NULL;
	}
	if (!real_numa_alloc_onnode)
		real_numa_alloc_onnode = next("numa_alloc_onnode");
	return real_numa_alloc_onnode(size, node);
}
