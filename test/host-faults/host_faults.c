// SPDX-License-Identifier: GPL-2.0-only
//
// libhost-faults.so: the fault sweep's seam for host calls (test/host-faults/README.md). Preloaded
// into criu (LD_PRELOAD) by test/e2e/scenarios/95-fault-sweep.sh only; nothing users run loads it.
//
// It sees the calls the plugin makes on its image files (amdgpu-*.img: open, read, write, lseek,
// fstat, ftruncate, close) and for its staging memory (posix_memalign and numa_alloc_onnode called
// from amdgpu_plugin.so), and
//   - with AMDGPU_HOST_CALLS=<file>, appends one line per call to that file: "<call> <what>",
//     <what> being the image's name or "staging";
//   - with AMDGPU_HOST_FAULT="<call> <what> <nth> <errno>", makes the nth such call fail with that
//     errno (a number) and appends "fired <call> <what> <nth>" to the calls file.
// The nth is counted over every process criu forks (a restore runs the plugin in criu and in the
// tasks it restores) through a small table shared in AMDGPU_HOST_CALLS's "<file>.count".
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum { kMaxFd = 4096, kSlots = 512, kWhatLen = 96 };

struct slot {
	char key[kWhatLen + 16];
	unsigned int count;
};

// The plugin's open image files, by fd: name and inode (an fd closed behind our back and reused
// for something else is noticed by its inode).
static struct {
	char name[kWhatLen];
	dev_t dev;
	ino_t ino;
} images[kMaxFd];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *calls_path;
static int count_fd = -1;
static struct slot *table;
static struct {
	char call[16];
	char what[kWhatLen];
	unsigned int nth;
	int err;
} fault;
static int armed;

static int (*real_openat)(int, const char *, int, ...);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fstat)(int, struct stat *);
static int (*real_ftruncate)(int, off_t);
static int (*real_close)(int);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_numa_alloc_onnode)(size_t, int);

__attribute__((constructor)) static void host_faults_init(void)
{
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_read = dlsym(RTLD_NEXT, "read");
	real_write = dlsym(RTLD_NEXT, "write");
	real_lseek = dlsym(RTLD_NEXT, "lseek");
	real_fstat = dlsym(RTLD_NEXT, "fstat");
	real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
	real_close = dlsym(RTLD_NEXT, "close");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");

	calls_path = getenv("AMDGPU_HOST_CALLS");
	if (!calls_path)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s.count", calls_path);
	count_fd = real_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (count_fd >= 0 && !real_ftruncate(count_fd, sizeof(struct slot) * kSlots))
		table = mmap(NULL, sizeof(struct slot) * kSlots, PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0);
	if (!table || table == MAP_FAILED) {
		// (a 9p mount without a cache cannot map a file shared: use a local filesystem)
		dprintf(2, "host-faults: cannot share the call counts through %s: %s\n", path, strerror(errno));
		table = NULL;
		return;
	}
	const char *spec = getenv("AMDGPU_HOST_FAULT");
	armed = table && spec &&
		sscanf(spec, "%15s %95s %u %d", fault.call, fault.what, &fault.nth, &fault.err) == 4;
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
	const int fd = real_openat(AT_FDCWD, calls_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	(void)!real_write(fd, line, (size_t)n); // one O_APPEND write: whole lines across processes
	real_close(fd);
}

// Counts the call and says whether it is the one to fail (then with which errno, else 0).
static int host_call(const char *call, const char *what)
{
	if (!table)
		return 0;
	const int saved = errno;
	char key[sizeof(table[0].key)];
	snprintf(key, sizeof(key), "%s %s", call, what);
	unsigned int nth = 0;
	pthread_mutex_lock(&lock);
	flock(count_fd, LOCK_EX);
	for (int i = 0; i < kSlots; i++) {
		if (!table[i].key[0])
			memcpy(table[i].key, key, sizeof(key));
		if (!strcmp(table[i].key, key)) {
			nth = ++table[i].count;
			break;
		}
	}
	flock(count_fd, LOCK_UN);
	pthread_mutex_unlock(&lock);
	note("%s", key);
	int err = 0;
	if (armed && nth == fault.nth && !strcmp(call, fault.call) && !strcmp(what, fault.what)) {
		err = fault.err;
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
	if (image) {
		const int err = host_call("open", base);
		if (err) {
			errno = err;
			return -1;
		}
	}
	const int fd = real_openat(dirfd, path, flags, mode);
	struct stat st;
	if (image && fd >= 0 && fd < kMaxFd && !real_fstat(fd, &st)) {
		snprintf(images[fd].name, sizeof(images[fd].name), "%s", base);
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
	return real_read(fd, buf, count);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	FAIL_ON_IMAGE("write", fd, -1);
	return real_write(fd, buf, count);
}

EXPORT off_t lseek(int fd, off_t offset, int whence)
{
	FAIL_ON_IMAGE("lseek", fd, -1);
	return real_lseek(fd, offset, whence);
}

EXPORT int fstat(int fd, struct stat *st)
{
	FAIL_ON_IMAGE("fstat", fd, -1);
	return real_fstat(fd, st);
}

EXPORT int ftruncate(int fd, off_t length)
{
	FAIL_ON_IMAGE("ftruncate", fd, -1);
	return real_ftruncate(fd, length);
}

// As Linux's close: the descriptor is gone even when close reports an error.
EXPORT int close(int fd)
{
	const char *name = image_of(fd);
	const int err = name ? host_call("close", name) : 0;
	if (name)
		images[fd].name[0] = 0;
	const int ret = real_close(fd);
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
	return real_posix_memalign(p, alignment, size);
}

EXPORT void *numa_alloc_onnode(size_t size, int node)
{
	if (!real_numa_alloc_onnode)
		real_numa_alloc_onnode = dlsym(RTLD_NEXT, "numa_alloc_onnode");
	if (table && from_plugin(__builtin_return_address(0)) && host_call("numa_alloc_onnode", "staging")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_numa_alloc_onnode ? real_numa_alloc_onnode(size, node) : NULL;
}
