// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parts of the end-to-end workloads that do not depend on how GPU memory
 * is obtained (raw KFD ioctls or libhsakmt). See workload.h and README.md.
 */
#include "workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define DRM_MAJOR 226

const char *wl_prog = "workload";

void wl_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", wl_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void wl_info(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *to)
{
	fprintf(to,
		"usage: %s --state FILE [--gpus N] [--vram-mb M[,M...]] [--bo-mb B] [--hb-timeout-ms T]\n"
		"          [--render-first] [--gem] [--always-valid] [--zeros PCT[,RUN_KIB]] [--rewrite-pct P]\n"
		"          [--host-mb H]\n"
		"  --state FILE       state file written once set up; results in FILE.verify, FILE.heartbeat,\n"
		"                     FILE.rewrite\n"
		"  --gpus N           use the first N GPU nodes of the topology (default: all)\n"
		"  --vram-mb M[,M...] VRAM per GPU in content BOs, one value per GPU in order, the last\n"
		"                     repeated for the rest (default %d)\n"
		"  --bo-mb B          largest content BO (default %d)\n"
		"  --hb-timeout-ms T  how long a queue's heartbeat may stall (default %d)\n"
		"  --render-first     open the render nodes before /dev/kfd (kfd_workload only)\n"
		"  --gem              also hold GEM handles on the first GPU's render node: one of a KFD\n"
		"                     buffer, one of a buffer of its own (rocr_workload only)\n"
		"  --always-valid     one more GEM buffer, created VM_ALWAYS_VALID: it lives in its file's\n"
		"                     VM alone and no other file can read it (render_workload only)\n"
		"  --zeros PCT[,RUN]  PCT %% of the content is zeros, in runs of RUN KiB (default 1024)\n"
		"                     placed by the pattern (VRAM that was allocated and never written)\n"
		"  --rewrite-pct P    a rewrite gives the next content BOs, in rotation, a new generation\n"
		"                     of their pattern until P %% of the content bytes are rewritten\n"
		"                     (0..100, default %d; kfd_workload only)\n"
		"  --host-mb H        H MiB of ordinary host memory (anonymous, private) in a pattern of\n"
		"                     its own, checked by every verification (default 0: none)\n"
		"signals: SIGUSR1 verify, SIGUSR2 heartbeat check, SIGHUP rewrite, SIGRTMIN+1/+2 memory/illegal fault, SIGTERM/SIGINT exit\n",
		wl_prog, WL_DEFAULT_VRAM_MB, WL_DEFAULT_BO_MB, WL_DEFAULT_HB_TIMEOUT_MS, WL_DEFAULT_REWRITE_PCT);
}

unsigned int wl_parse_uint(const char *opt, const char *s, unsigned int min, unsigned int max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		wl_err("%s: '%s' is not a number in %u..%u", opt, s, min, max);
		exit(WL_EXIT_USAGE);
	}
	return (unsigned int)v;
}

/* "M[,M...]": one value per GPU, the last one repeated for the GPUs after it */
static void parse_vram_list(const char *s, unsigned int *out)
{
	char buf[256], *tok, *save = NULL;
	unsigned int i = 0;

	if (strlen(s) >= sizeof(buf)) {
		wl_err("--vram-mb: '%s' is too long", s);
		exit(WL_EXIT_USAGE);
	}
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (i == WL_MAX_GPUS) {
			wl_err("--vram-mb: more than %d values", WL_MAX_GPUS);
			exit(WL_EXIT_USAGE);
		}
		out[i++] = wl_parse_uint("--vram-mb", tok, 1, 1 << 20);
	}
	if (!i) {
		wl_err("--vram-mb: '%s' has no value", s);
		exit(WL_EXIT_USAGE);
	}
	for (; i < WL_MAX_GPUS; i++)
		out[i] = out[i - 1];
}

void wl_parse_opts(int argc, char **argv, struct wl_opts *o)
{
	static const struct option longopts[] = {
		{ "gpus", required_argument, NULL, 'g' },
		{ "vram-mb", required_argument, NULL, 'm' },
		{ "bo-mb", required_argument, NULL, 'b' },
		{ "state", required_argument, NULL, 's' },
		{ "hb-timeout-ms", required_argument, NULL, 't' },
		{ "render-first", no_argument, NULL, 'r' },
		{ "gem", no_argument, NULL, 'G' },
		{ "always-valid", no_argument, NULL, 'A' },
		{ "zeros", required_argument, NULL, 'z' },
		{ "rewrite-pct", required_argument, NULL, 'w' },
		{ "host-mb", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *slash = strrchr(argv[0], '/');
	int c;

	wl_prog = slash ? slash + 1 : argv[0];
	/* stdout is a log file under the scenarios: keep it line by line */
	setvbuf(stdout, NULL, _IOLBF, 0);

	*o = (struct wl_opts) {
		.bo_mb = WL_DEFAULT_BO_MB,
		.hb_timeout_ms = WL_DEFAULT_HB_TIMEOUT_MS,
		.rewrite_pct = WL_DEFAULT_REWRITE_PCT,
	};
	for (c = 0; c < WL_MAX_GPUS; c++)
		o->vram_mb[c] = WL_DEFAULT_VRAM_MB;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			o->gpus = wl_parse_uint("--gpus", optarg, 1, WL_MAX_GPUS);
			break;
		case 'm':
			parse_vram_list(optarg, o->vram_mb);
			break;
		case 'b':
			o->bo_mb = wl_parse_uint("--bo-mb", optarg, 1, 1 << 20);
			break;
		case 'r':
			o->render_first = true;
			break;
		case 'G':
			o->gem = true;
			break;
		case 'A':
			o->always_valid = true;
			break;
		case 'z': {
			char *run = strchr(optarg, ',');

			if (run)
				*run++ = '\0';
			wl_zero_pct = wl_parse_uint("--zeros", optarg, 0, 100);
			if (run)
				wl_zero_run = (uint64_t)wl_parse_uint("--zeros", run, 4, 1 << 20) << 10;
			break;
		}
		case 'w':
			o->rewrite_pct = wl_parse_uint("--rewrite-pct", optarg, 0, 100);
			break;
		case 'H':
			o->host_mb = wl_parse_uint("--host-mb", optarg, 0, 1 << 20);
			break;
		case 's':
			o->state = optarg;
			break;
		case 't':
			o->hb_timeout_ms = wl_parse_uint("--hb-timeout-ms", optarg, 10, 600000);
			break;
		case 'h':
			usage(stdout);
			exit(WL_EXIT_OK);
		default:
			usage(stderr);
			exit(WL_EXIT_USAGE);
		}
	}
	if (optind != argc || !o->state || !*o->state) {
		usage(stderr);
		exit(WL_EXIT_USAGE);
	}
}

/* ---- sysfs topology ------------------------------------------------------- */

static int read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

/* The value of "key value" line @key in a properties file, 0 if absent. */
static uint64_t prop_value(const char *props, const char *key)
{
	size_t klen = strlen(key);
	const char *line = props;

	while (line && *line) {
		if (!strncmp(line, key, klen) && line[klen] == ' ')
			return strtoull(line + klen + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

int wl_gpu_nodes(struct wl_gpu_node *out, unsigned int max, unsigned int *n_nodes)
{
	unsigned int nodes[256], n = 0, i, n_gpus = 0;
	char path[512], buf[8192];
	struct dirent *de;
	DIR *dir;

	dir = opendir(WL_TOPOLOGY);
	if (!dir)
		return -errno;
	while ((de = readdir(dir)) && n < 256) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && !*end)
			nodes[n++] = (unsigned int)v;
	}
	closedir(dir);
	qsort(nodes, n, sizeof(nodes[0]), cmp_uint);
	*n_nodes = n;

	for (i = 0; i < n && n_gpus < max; i++) {
		struct wl_gpu_node *g = &out[n_gpus];
		unsigned long gpu_id;

		snprintf(path, sizeof(path), WL_TOPOLOGY "/%u/gpu_id", nodes[i]);
		if (read_text(path, buf, sizeof(buf)))
			continue;
		gpu_id = strtoul(buf, NULL, 10);
		if (!gpu_id)
			continue;
		snprintf(path, sizeof(path), WL_TOPOLOGY "/%u/properties", nodes[i]);
		if (read_text(path, buf, sizeof(buf)))
			continue;
		g->node = nodes[i];
		g->gpu_id = (uint32_t)gpu_id;
		g->render_minor = (unsigned int)prop_value(buf, "drm_render_minor");
		g->simd_count = (uint32_t)prop_value(buf, "simd_count");
		g->simd_per_cu = (uint32_t)prop_value(buf, "simd_per_cu");
		g->array_count = (uint32_t)prop_value(buf, "array_count");
		g->simd_arrays_per_engine = (uint32_t)prop_value(buf, "simd_arrays_per_engine");
		g->gfx_target_version = (uint32_t)prop_value(buf, "gfx_target_version");
		g->location_id = (uint32_t)prop_value(buf, "location_id");
		g->domain = (uint32_t)prop_value(buf, "domain");
		n_gpus++;
	}
	return (int)n_gpus;
}

int wl_pick_gpus(const struct wl_opts *o, struct wl_gpu_node *gpus, unsigned int *n_gpus, unsigned int *n_nodes)
{
	int n = wl_gpu_nodes(gpus, WL_MAX_GPUS, n_nodes);

	if (n <= 0) {
		wl_err("no GPU node in %s", WL_TOPOLOGY);
		return WL_EXIT_SKIP;
	}
	*n_gpus = o->gpus ? o->gpus : (unsigned int)n;
	if (*n_gpus > (unsigned int)n) {
		wl_err("%u GPUs asked for, the topology has %d", *n_gpus, n);
		return WL_EXIT_SKIP;
	}
	return 0;
}

unsigned int wl_content_bos(const struct wl_opts *o, unsigned int gpu)
{
	uint64_t total = (uint64_t)o->vram_mb[gpu] << 20, most = (uint64_t)o->bo_mb << 20;
	uint64_t n = (total + most - 1) / most;

	return n < 2 ? 2 : (unsigned int)n;
}

uint64_t wl_content_bo_size(const struct wl_opts *o, unsigned int gpu, unsigned int i)
{
	uint64_t total = (uint64_t)o->vram_mb[gpu] << 20;
	unsigned int n = wl_content_bos(o, gpu);
	uint64_t base = total / n & ~(WL_PAGE - 1);

	return i == n - 1 ? total - base * (n - 1) : base;
}

void *wl_array_slot(void **items, unsigned int n, unsigned int *cap, size_t size)
{
	char *slot;

	if (n == *cap) {
		unsigned int more = *cap ? *cap * 2 : 32;
		void *grown = realloc(*items, more * size);

		if (!grown)
			return NULL;
		*items = grown;
		*cap = more;
	}
	slot = (char *)*items + n * size;
	memset(slot, 0, size);
	return slot;
}

uint64_t wl_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
}

/* ---- content pattern -------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

unsigned int wl_zero_pct;
uint64_t wl_zero_run = 1 << 20;

uint64_t wl_pattern(uint64_t seed, uint32_t bo, uint64_t off)
{
	/* whole runs of zeros, chosen by the run's own hash */
	if (wl_zero_pct &&
	    mix64(seed ^ ((uint64_t)bo << 44) ^ (off / wl_zero_run) ^ 0x5a5a5a5a00000000ULL) % 100 < wl_zero_pct)
		return 0;
	return mix64(seed ^ ((uint64_t)bo << 44) ^ off);
}

void wl_fill(void *p, uint64_t size, uint64_t seed, uint32_t bo)
{
	uint64_t *w = p, i;

	for (i = 0; i < size / 8; i++)
		w[i] = wl_pattern(seed, bo, i * 8);
}

uint64_t wl_generation_seed(uint64_t seed, uint32_t gen)
{
	/* generation 0 keeps the seed: a workload that never rewrites has the pattern it always had */
	return gen ? mix64(seed ^ ((uint64_t)gen << 32) ^ 0xc3a5c85c97cb3127ULL) : seed;
}

/* ---- host memory ---------------------------------------------------------- */

static struct {
	uint64_t *p;
	uint64_t size, seed;
} host;

/*
 * Word @i of host page @page: the page's own key, from the seed, plus @i times an odd constant.
 * One hash per page keeps the fill and the check cheap under TCG, and no two pages are alike.
 */
static uint64_t host_key(uint64_t seed, uint64_t page)
{
	return mix64(seed ^ 0x686f73746d656d00ULL ^ page);
}

#define HOST_STEP	0x9e3779b97f4a7c15ULL
#define HOST_PAGE_WORDS (WL_PAGE / 8)

int wl_host_setup(const struct wl_opts *o)
{
	uint64_t page, i;

	if (!o->host_mb)
		return 0;
	host.size = (uint64_t)o->host_mb << 20;
	host.seed = mix64(wl_seed() ^ 0x686f7374ULL);
	host.p = mmap(NULL, host.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (host.p == MAP_FAILED) {
		wl_err("--host-mb %u: mmap of 0x%" PRIx64 " bytes of anonymous memory: %s", o->host_mb, host.size,
		       strerror(errno));
		host.p = NULL;
		return WL_EXIT_SETUP;
	}
	for (page = 0; page < host.size / WL_PAGE; page++) {
		uint64_t key = host_key(host.seed, page), *w = host.p + page * HOST_PAGE_WORDS;

		for (i = 0; i < HOST_PAGE_WORDS; i++)
			w[i] = key + i * HOST_STEP;
	}
	return 0;
}

void wl_host_state(FILE *f)
{
	if (host.p)
		fprintf(f, "host va 0x%" PRIx64 " size 0x%" PRIx64 " seed 0x%016" PRIx64 "\n",
			(uint64_t)(uintptr_t)host.p, host.size, host.seed);
}

/* ---- report --------------------------------------------------------------- */

void wl_report_init(struct wl_report *r)
{
	memset(r, 0, sizeof(*r));
}

void wl_report_free(struct wl_report *r)
{
	free(r->log);
	r->log = NULL;
}

void wl_pass(struct wl_report *r)
{
	r->checks++;
}

void wl_fail(struct wl_report *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);

	r->checks++;
	if (!r->failures++)
		snprintf(r->first, sizeof(r->first), "%s", line);
	len = strlen(line);
	if (r->log_len + len + 2 > r->log_cap) {
		size_t cap = (r->log_cap ? r->log_cap * 2 : 4096) + len + 2;
		char *n = realloc(r->log, cap);

		if (!n)
			return;
		r->log = n;
		r->log_cap = cap;
	}
	memcpy(r->log + r->log_len, line, len);
	r->log_len += len;
	r->log[r->log_len++] = '\n';
	r->log[r->log_len] = '\0';
}

/* ---- guarded reads ----------------------------------------------------------- */

/*
 * Per thread: a fault is delivered to the thread that made it, and the
 * workloads with copy threads (rocr, hip) check bytes in several at once.
 */
static __thread sigjmp_buf guard_env;
static __thread volatile sig_atomic_t guard_active;
static __thread volatile sig_atomic_t guard_signal;

static void guard_handler(int sig)
{
	if (guard_active) {
		guard_active = 0;
		guard_signal = sig;
		siglongjmp(guard_env, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void wl_guard_init(void)
{
	struct sigaction sa = { .sa_handler = guard_handler };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/* Run @fn(@arg); 0, or the signal that a memory fault in it raised. */
static int guarded(void (*fn)(void *), void *arg)
{
	if (sigsetjmp(guard_env, 1))
		return guard_signal;
	guard_active = 1;
	fn(arg);
	guard_active = 0;
	return 0;
}

struct scan {
	const uint64_t *p;
	uint64_t nwords, seed;
	uint32_t bo;
	uint64_t pos; /* byte offset reached, for a fault report */
	uint64_t bad, first, expected, actual;
};

static void scan_words(void *arg)
{
	struct scan *s = arg;
	uint64_t i;

	for (i = 0; i < s->nwords; i++) {
		uint64_t want, have;

		if (!(i & 511))
			*(volatile uint64_t *)&s->pos = i * 8;
		have = ((const volatile uint64_t *)s->p)[i];
		want = wl_pattern(s->seed, s->bo, i * 8);
		if (have != want && !s->bad++) {
			s->first = i * 8;
			s->expected = want;
			s->actual = have;
		}
	}
}

bool wl_check_pattern(struct wl_report *r, const char *what, const void *p, uint64_t size, uint64_t seed, uint32_t bo)
{
	struct scan s = { .p = p, .nwords = size / 8, .seed = seed, .bo = bo };
	int sig;

	sig = guarded(scan_words, &s);
	if (sig) {
		wl_fail(r, "%s: reading offset 0x%" PRIx64 " at %p raises %s", what, s.pos,
			(const void *)((const char *)p + s.pos), strsignal(sig));
		return false;
	}
	if (s.bad) {
		wl_fail(r,
			"%s: %" PRIu64 " of %" PRIu64 " words differ, first at offset 0x%" PRIx64
			": expected 0x%016" PRIx64 ", actual 0x%016" PRIx64,
			what, s.bad, s.nwords, s.first, s.expected, s.actual);
		return false;
	}
	wl_pass(r);
	return true;
}

struct host_scan {
	const uint64_t *p;
	uint64_t pages, seed;
	uint64_t pos; /* byte offset reached, for a fault report */
	uint64_t bad, first, expected, actual;
};

static void scan_host(void *arg)
{
	struct host_scan *s = arg;
	uint64_t page, i;

	for (page = 0; page < s->pages; page++) {
		const volatile uint64_t *w = s->p + page * HOST_PAGE_WORDS;
		uint64_t key = host_key(s->seed, page);

		*(volatile uint64_t *)&s->pos = page * WL_PAGE;
		for (i = 0; i < HOST_PAGE_WORDS; i++) {
			uint64_t have = w[i], want = key + i * HOST_STEP;

			if (have != want && !s->bad++) {
				s->first = page * WL_PAGE + i * 8;
				s->expected = want;
				s->actual = have;
			}
		}
	}
}

/* The host memory of --host-mb is mapped as it was set up and holds its pattern. */
static void check_host(struct wl_report *r)
{
	struct host_scan s = { .p = host.p, .pages = host.size / WL_PAGE, .seed = host.seed };
	char name[128];
	int sig;

	snprintf(name, sizeof(name), "host memory (va %p, size 0x%" PRIx64 ")", (void *)host.p, host.size);
	if (!wl_check_mapping(r, name, (uint64_t)(uintptr_t)host.p, host.size, WL_BACK_ANON, "rw-p", NULL))
		return;
	sig = guarded(scan_host, &s);
	if (sig) {
		wl_fail(r, "%s: reading offset 0x%" PRIx64 " raises %s", name, s.pos, strsignal(sig));
		return;
	}
	if (s.bad) {
		wl_fail(r,
			"%s: %" PRIu64 " of %" PRIu64 " words differ, first at offset 0x%" PRIx64
			": expected 0x%016" PRIx64 ", actual 0x%016" PRIx64,
			name, s.bad, (uint64_t)(s.pages * HOST_PAGE_WORDS), s.first, s.expected, s.actual);
		return;
	}
	wl_pass(r);
}

struct write {
	uint64_t *p;
	uint64_t nwords, seed;
	uint32_t bo;
	uint64_t pos; /* byte offset reached, for a fault report */
};

static void write_words(void *arg)
{
	struct write *w = arg;
	uint64_t i;

	for (i = 0; i < w->nwords; i++) {
		if (!(i & 511))
			*(volatile uint64_t *)&w->pos = i * 8;
		((volatile uint64_t *)w->p)[i] = wl_pattern(w->seed, w->bo, i * 8);
	}
}

/* wl_fill through a guard; false (and a failure named @what) if a write faults. */
static bool fill_guarded(struct wl_report *r, const char *what, void *p, uint64_t size, uint64_t seed, uint32_t bo)
{
	struct write w = { .p = p, .nwords = size / 8, .seed = seed, .bo = bo };
	int sig;

	sig = guarded(write_words, &w);
	if (sig) {
		wl_fail(r, "%s: writing offset 0x%" PRIx64 " at %p raises %s", what, w.pos, (void *)((char *)p + w.pos),
			strsignal(sig));
		return false;
	}
	wl_pass(r);
	return true;
}

struct probe {
	const volatile uint64_t *p;
	uint64_t val;
};

static void probe_word(void *arg)
{
	struct probe *pr = arg;

	pr->val = *pr->p;
}

bool wl_probe_read(struct wl_report *r, const char *what, const volatile void *p, uint64_t *val)
{
	struct probe pr = { .p = p };
	int sig;

	sig = guarded(probe_word, &pr);
	if (sig) {
		wl_fail(r, "%s: reading %p raises %s", what, (const void *)p, strsignal(sig));
		return false;
	}
	if (val)
		*val = pr.val;
	return true;
}

/* ---- /proc/self/maps -------------------------------------------------------- */

bool wl_find_vma(uint64_t addr, struct wl_vma *v)
{
	char line[1024];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		int path_at = 0;
		char perms[5];

		if (sscanf(line, "%llx-%llx %4s %llx %*x:%*x %*u %n", &start, &end, perms, &off, &path_at) < 4)
			continue;
		if (addr < start || addr >= end)
			continue;
		v->start = start;
		v->end = end;
		v->offset = off;
		memcpy(v->perms, perms, sizeof(v->perms));
		v->path[0] = '\0';
		if (path_at > 0) {
			snprintf(v->path, sizeof(v->path), "%s", line + path_at);
			v->path[strcspn(v->path, "\n")] = '\0';
		}
		found = true;
		break;
	}
	fclose(f);
	return found;
}

static const char *backing_name(enum wl_backing b)
{
	switch (b) {
	case WL_BACK_RENDER:
		return "/dev/dri/renderD*";
	case WL_BACK_KFD:
		return "/dev/kfd";
	default:
		return "anonymous memory";
	}
}

/* @want is one permission string, or several separated by '|' */
static bool perms_match(const char *have, const char *want)
{
	size_t len = strlen(have);

	while (*want) {
		if (!strncmp(want, have, len) && (want[len] == '|' || !want[len]))
			return true;
		want = strchr(want, '|');
		if (!want)
			break;
		want++;
	}
	return false;
}

int wl_vma_render_minor(const struct wl_vma *v)
{
	unsigned int minor;

	if (sscanf(v->path, "/dev/dri/renderD%u", &minor) != 1)
		return -1;
	return (int)minor;
}

bool wl_check_mapping(struct wl_report *r, const char *what, uint64_t va, uint64_t size, enum wl_backing backing,
		      const char *perms, struct wl_vma *vma)
{
	struct wl_vma v;
	bool ok;

	if (!wl_find_vma(va, &v)) {
		wl_fail(r, "%s: nothing is mapped at 0x%" PRIx64 " (expected %s, %s)", what, va, backing_name(backing),
			perms);
		return false;
	}
	if (v.end < va + size) {
		wl_fail(r,
			"%s: the mapping at 0x%" PRIx64 " ends at 0x%" PRIx64 ", expected it to cover 0x%" PRIx64
			" bytes to 0x%" PRIx64,
			what, va, v.end, size, va + size);
		return false;
	}
	switch (backing) {
	case WL_BACK_RENDER:
		ok = !strncmp(v.path, "/dev/dri/renderD", 16);
		break;
	case WL_BACK_KFD:
		ok = !strcmp(v.path, "/dev/kfd");
		break;
	default:
		ok = !v.path[0] || v.path[0] == '[';
		break;
	}
	if (!ok) {
		wl_fail(r, "%s: the mapping at 0x%" PRIx64 " is '%s', expected %s", what, va,
			v.path[0] ? v.path : "anonymous", backing_name(backing));
		return false;
	}
	if (!perms_match(v.perms, perms)) {
		wl_fail(r, "%s: the mapping at 0x%" PRIx64 " has permissions %s, expected %s", what, va, v.perms,
			perms);
		return false;
	}
	if (vma)
		*vma = v;
	wl_pass(r);
	return true;
}

static void *try_map(int fd, uint64_t offset, uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

void *wl_map_render(int fd, unsigned int render_minor, uint64_t offset, uint64_t size)
{
	dev_t want = makedev(DRM_MAJOR, render_minor);
	int saved = 0;
	struct dirent *de;
	void *p;
	DIR *dir;

	if (fd >= 0) {
		p = try_map(fd, offset, size);
		if (p)
			return p;
		saved = errno;
	}
	/*
	 * DRM lets only files that were given access to a BO map it; the one
	 * KFD acquired the GPU VM with is among the process' own files.
	 */
	dir = opendir("/proc/self/fd");
	if (!dir) {
		errno = saved ? saved : errno;
		return NULL;
	}
	while ((de = readdir(dir))) {
		struct stat st;
		int other = atoi(de->d_name);

		if (de->d_name[0] == '.' || other == fd || other == dirfd(dir))
			continue;
		if (fstat(other, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != want)
			continue;
		p = try_map(other, offset, size);
		if (p) {
			closedir(dir);
			return p;
		}
		saved = errno;
	}
	closedir(dir);
	errno = saved ? saved : ENOENT;
	return NULL;
}

/*
 * A new read-write mapping of BO @bo, which has no host access, through the
 * render node and at the offset of its mapping @v now (a restore moves it,
 * maybe to another render node); NULL, with a failure, if there is none.
 */
static void *map_current(struct wl_report *r, const struct wl_bo_view *bo, const struct wl_vma *v)
{
	uint64_t offset = wl_vma_offset(v, bo->va);
	void *p = wl_map_render(bo->render_fd, (unsigned int)wl_vma_render_minor(v), offset, bo->size);

	if (!p)
		wl_fail(r, "%s: cannot map it through %s at its current offset 0x%" PRIx64 ": %s", bo->name, v->path,
			offset, strerror(errno));
	return p;
}

void wl_check_bo(struct wl_report *r, const struct wl_bo_view *bo)
{
	bool host_access = strncmp(bo->perms, "---", 3); /* "---p", "---p|---s": no host access */
	uint64_t seed = wl_generation_seed(bo->seed, bo->generation);
	struct wl_vma v;
	void *p;

	if (!wl_check_mapping(r, bo->name, bo->va, bo->size, bo->backing, bo->perms, &v))
		return;
	if (!bo->content) {
		if (host_access)
			wl_probe_read(r, bo->name, (const volatile void *)(uintptr_t)bo->va, NULL);
		return;
	}
	if (host_access) {
		wl_check_pattern(r, bo->name, (const void *)(uintptr_t)bo->va, bo->size, seed, bo->index);
		return;
	}
	p = map_current(r, bo, &v);
	if (!p)
		return;
	wl_check_pattern(r, bo->name, p, bo->size, seed, bo->index);
	munmap(p, bo->size);
}

bool wl_rewrite_bo(struct wl_report *r, const struct wl_bo_view *bo)
{
	uint64_t seed = wl_generation_seed(bo->seed, bo->generation);
	struct wl_vma v;
	bool ok;
	void *p;

	if (!wl_check_mapping(r, bo->name, bo->va, bo->size, bo->backing, bo->perms, &v))
		return false;
	if (strncmp(bo->perms, "---", 3))
		return fill_guarded(r, bo->name, (void *)(uintptr_t)bo->va, bo->size, seed, bo->index);
	p = map_current(r, bo, &v);
	if (!p)
		return false;
	ok = fill_guarded(r, bo->name, p, bo->size, seed, bo->index);
	munmap(p, bo->size);
	return ok;
}

/* ---- state and result files ------------------------------------------------ */

FILE *wl_state_begin(const char *path, char *tmp, size_t tmplen)
{
	snprintf(tmp, tmplen, "%s.tmp.%d", path, (int)getpid());
	return fopen(tmp, "we");
}

int wl_state_commit(FILE *f, const char *tmp, const char *path)
{
	int ret = 0;

	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int wl_state_write(const char *path, void (*fill)(FILE *f, void *ctx), void *ctx)
{
	char tmp[4200];
	FILE *f;
	int ret;

	f = wl_state_begin(path, tmp, sizeof(tmp));
	if (!f) {
		wl_err("cannot create '%s': %s", tmp, strerror(errno));
		return WL_EXIT_SETUP;
	}
	fill(f, ctx);
	ret = wl_state_commit(f, tmp, path);
	if (ret) {
		wl_err("cannot write '%s': %s", path, strerror(-ret));
		return WL_EXIT_SETUP;
	}
	return 0;
}

void wl_publish(const char *state, const char *suffix, const char *line, const char *details)
{
	char path[4096], tmp[4200];
	FILE *f;
	int ret;

	printf("%s\n", line);
	if (details && *details)
		printf("%s", details);
	fflush(stdout);

	snprintf(path, sizeof(path), "%s%s", state, suffix);
	f = wl_state_begin(path, tmp, sizeof(tmp));
	if (!f) {
		wl_err("cannot create '%s': %s", tmp, strerror(errno));
		return;
	}
	fprintf(f, "%s\n%s", line, details ? details : "");
	ret = wl_state_commit(f, tmp, path);
	if (ret)
		wl_err("cannot write '%s': %s", path, strerror(-ret));
}

/* ---- heartbeat ------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void wl_check_heartbeats(struct wl_report *r, const struct wl_heartbeat *hb, unsigned int n, unsigned int timeout_ms)
{
	uint64_t start[WL_MAX_GPUS * 4], last[WL_MAX_GPUS * 4], t0, waited;
	bool readable[WL_MAX_GPUS * 4], pending;
	unsigned int i;

	if (n > WL_MAX_GPUS * 4)
		n = WL_MAX_GPUS * 4;
	for (i = 0; i < n; i++)
		readable[i] = wl_probe_read(r, hb[i].name, hb[i].rptr, &start[i]);

	t0 = now_ms();
	do {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		pending = false;
		for (i = 0; i < n; i++) {
			if (!readable[i])
				continue;
			last[i] = *hb[i].rptr;
			/* two beats: one could have been in flight when we looked */
			if (last[i] - start[i] < 2)
				pending = true;
		}
		waited = now_ms() - t0;
	} while (pending && waited < timeout_ms);

	for (i = 0; i < n; i++) {
		if (!readable[i])
			continue;
		if (last[i] - start[i] >= 2)
			wl_pass(r);
		else
			wl_fail(r,
				"%s: heartbeat stalled: read pointer 0x%" PRIx64 " went from %" PRIu64 " to %" PRIu64
				" in %" PRIu64 " ms, expected at least 2 beats",
				hb[i].name, (uint64_t)(uintptr_t)hb[i].rptr, start[i], last[i], waited);
	}
}

/* ---- the main loop ------------------------------------------------------------ */

static volatile sig_atomic_t got_usr1, got_usr2, got_hup, got_fault, got_term;

/* The fault requests: SIGRTMIN+1 a memory violation, SIGRTMIN+2 an illegal instruction */
static const char *const fault_kinds[] = { NULL, "memory", "illegal" };
#define FAULT_SIGNALS 2

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else if (sig == SIGUSR2)
		got_usr2 = 1;
	else if (sig == SIGHUP)
		got_hup = 1;
	else if (sig > SIGRTMIN && sig <= SIGRTMIN + FAULT_SIGNALS)
		got_fault = sig - SIGRTMIN;
	else
		got_term = 1;
}

static sigset_t contract_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGHUP);
	for (int i = 1; i <= FAULT_SIGNALS; i++)
		sigaddset(&set, SIGRTMIN + i);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	return set;
}

void wl_signals_block(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t set = contract_signals();

	sigprocmask(SIG_BLOCK, &set, NULL);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	for (int i = 1; i <= FAULT_SIGNALS; i++)
		sigaction(SIGRTMIN + i, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	wl_guard_init();
}

/* VERIFY: the workload's checks, then the heartbeat's; HEARTBEAT: the heartbeat's alone. */
static void run_check(const struct wl_opts *o, const struct wl_ops *ops, void *ctx, const char *name,
		      const char *suffix)
{
	struct wl_report r;
	char line[700];

	wl_report_init(&r);
	if (!strcmp(name, "VERIFY")) {
		ops->verify(ctx, &r);
		if (host.p)
			check_host(&r);
	}
	ops->heartbeat(ctx, &r);
	if (r.failures)
		snprintf(line, sizeof(line), "%s FAIL: %s", name, r.first);
	else
		snprintf(line, sizeof(line), "%s OK", name);
	/* the first line decides; every failure follows for the log */
	wl_publish(o->state, suffix, line, r.failures > 1 ? r.log : NULL);
	if (!r.failures)
		wl_info("%s: %u checks passed", name, r.checks);
	else
		wl_info("%s: %u of %u checks failed", name, r.failures, r.checks);
	wl_report_free(&r);
}

/* REWRITE: the workload's rewrite of its next content BOs, if it has one. */
static void run_rewrite(const struct wl_opts *o, const struct wl_ops *ops, void *ctx)
{
	struct wl_rewrite w = { 0 };
	struct wl_report r;
	char line[700];

	wl_report_init(&r);
	if (!ops->rewrite)
		wl_fail(&r, "this workload cannot rewrite its memory");
	else
		ops->rewrite(ctx, o->rewrite_pct, &w, &r);
	if (r.failures)
		snprintf(line, sizeof(line), "REWRITE FAIL: %s", r.first);
	else
		snprintf(line, sizeof(line),
			 "REWRITE OK %u BOs, %" PRIu64 " bytes (%.1f %% of %" PRIu64 " content bytes), rewrite %u",
			 w.bos, w.bytes, w.total ? 100.0 * (double)w.bytes / (double)w.total : 0.0, w.total, w.n);
	wl_publish(o->state, ".rewrite", line, r.failures > 1 ? r.log : NULL);
	wl_report_free(&r);
}

/* FAULT: a fault of @kind, made and reported as the workload's fault op says */
static void run_fault(const struct wl_opts *o, const struct wl_ops *ops, void *ctx, const char *kind)
{
	unsigned int ms = 0;
	struct wl_report r;
	char line[700];

	wl_report_init(&r);
	if (!ops->fault)
		wl_fail(&r, "this workload cannot make its GPU fault");
	else
		ops->fault(ctx, kind, &ms, &r);
	if (r.failures)
		snprintf(line, sizeof(line), "FAULT FAIL: %s", r.first);
	else
		snprintf(line, sizeof(line), "FAULT OK: %s: reported in %u ms", kind, ms);
	wl_publish(o->state, ".fault", line, r.failures > 1 ? r.log : NULL);
	wl_report_free(&r);
}

int wl_serve(const struct wl_opts *o, const struct wl_ops *ops, void *ctx)
{
	sigset_t wait_mask;

	sigprocmask(SIG_BLOCK, NULL, &wait_mask);
	sigdelset(&wait_mask, SIGUSR1);
	sigdelset(&wait_mask, SIGUSR2);
	sigdelset(&wait_mask, SIGHUP);
	for (int i = 1; i <= FAULT_SIGNALS; i++)
		sigdelset(&wait_mask, SIGRTMIN + i);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGINT);

	printf("READY %d\n", (int)getpid());
	fflush(stdout);

	for (;;) {
		/* criu may interrupt this at any time; it just comes back here */
		while (!got_usr1 && !got_usr2 && !got_hup && !got_fault && !got_term)
			sigsuspend(&wait_mask);
		if (got_term)
			break;
		if (got_usr1) {
			got_usr1 = 0;
			run_check(o, ops, ctx, "VERIFY", ".verify");
		}
		if (got_usr2) {
			got_usr2 = 0;
			run_check(o, ops, ctx, "HEARTBEAT", ".heartbeat");
		}
		if (got_hup) {
			got_hup = 0;
			run_rewrite(o, ops, ctx);
		}
		if (got_fault) {
			const char *kind = fault_kinds[got_fault];

			got_fault = 0;
			run_fault(o, ops, ctx, kind);
		}
	}
	printf("EXIT\n");
	fflush(stdout);
	if (ops->teardown)
		ops->teardown(ctx);
	return WL_EXIT_OK;
}
