// SPDX-License-Identifier: GPL-2.0-only
//
// The C ABI criu sees. Each hook runs its work inside guarded(): any exception becomes a negative
// errno for criu, logged once here with the message composed where the failure was decided. No
// exception ever crosses into criu.
//
// Hook contexts (criu 3.17): DUMP_EXT_FILE and HANDLE_DEVICE_VMA run in the criu process that
// dumps (as do criu 4.1's CHECKPOINT_DEVICES and 4.3's DUMP_DEVICES_LATE); RESTORE_EXT_FILE and UPDATE_VMA_MAP run
// inside the task being restored; RESUME_DEVICES_LATE runs in the criu main process once all tasks are restored. Which
// hooks criu is told about, and their arguments in the criu at hand, is plugin_descriptor.cpp's and criu_abi.hpp's
// business.

#include "hooks/plugin_hooks.hpp"

#include "criu/criu_abi.hpp"
#include "criu/criu_api.hpp"
#include "driver/device_files.hpp"
#include "support/error.hpp"
#include "images/image_store.hpp"
#include "sessions/dump_session.hpp"
#include "sessions/restore_session.hpp"
#include "support/log.hpp"
#include "sessions/options.hpp"
#include "guard/restore_guard.hpp"
#include "driver/task_fds.hpp"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

constexpr const char *kPluginName = "amdgpu_plugin";

// Everything that lives from init to exit of one criu run.
struct PluginRun {
	int stage;
	Options options;
	bool in_inventory = false;		     // named in the dump's inventory (criu 4.1+)
	std::unique_ptr<DumpSession> dump;	     // criu's dumping process
	std::unique_ptr<RestoreSession> restore;     // one restored task (after fork)
	std::unique_ptr<RestoreGuard> restore_guard; // started by criu's main process
};

// Never destroyed. criu ends with exit() where it gives up (while it dumps, its SIGCHLD handler
// when a dumped task dies): destroying the run there would tear the session down under the
// plugin's copy threads. The process is ending; the dump guard resumes what it paused. (A union
// whose destructor does nothing holds it: static storage, no destructor at exit.)
union ImmortalRun {
	ImmortalRun() : run() {}
	~ImmortalRun() {}
	std::unique_ptr<PluginRun> run;
} immortal;

std::unique_ptr<PluginRun> &run = immortal.run;

template <typename Fn> int guarded(const char *hook, Fn &&fn) noexcept
{
	try {
		return fn();
	} catch (const Error &e) {
		pr_err("%s", e.what());
		return e.err();
	} catch (const std::bad_alloc &) {
		pr_err("%s: out of memory", hook);
		return -ENOMEM;
	} catch (const std::exception &e) {
		pr_err("%s: unexpected error: %s", hook, e.what());
		return -EIO;
	} catch (...) {
		pr_err("%s: unexpected error", hook);
		return -EIO;
	}
}

PluginRun &current_run()
{
	if (!run)
		fail(-EINVAL, "plugin hook called before init");
	return *run;
}

// A dump that claims GPU files or mappings names the plugin in the inventory, so that a restore
// without it fails saying so instead of failing on the first GPU file.
void name_plugin_in_inventory()
{
	PluginRun &r = current_run();
	if (r.in_inventory || !add_inventory_plugin)
		return;
	if (add_inventory_plugin(kPluginName))
		fail(-ENOMEM, "cannot add %s to the inventory's plugin list", kPluginName);
	r.in_inventory = true;
}

// Where this run's images are. With --stream, criu holds a connection to the image streamer's
// socket in the image directory, which criu names streamer-capture.sock when it dumps and
// streamer-serve.sock when it restores, and the plugin's images must go the same way, through
// criu's img_streamer_open(); every task criu restores inherits that connection.
ImageDir run_image_dir()
{
	const int dirfd = criu_get_image_dir();
	char path[PATH_MAX];
	const std::string link = strprintf("/proc/self/fd/%d", dirfd);
	const ssize_t n = readlink(link.c_str(), path, sizeof(path) - 1);
	if (n <= 0)
		return ImageDir::files(dirfd);
	const std::string dir(path, static_cast<size_t>(n));
	const struct {
		const char *socket;
		ImageDir::Stream direction;
	} streams[] = { { "streamer-capture.sock", ImageDir::Stream::capture },
			{ "streamer-serve.sock", ImageDir::Stream::serve } };
	for (const auto &s : streams) {
		if (!has_socket_connected_to(dir + "/" + s.socket))
			continue;
		if (!img_streamer_open)
			fail(-EOPNOTSUPP,
			     "criu streams its images through %s/%s but offers plugins no img_streamer_open",
			     dir.c_str(), s.socket);
		pr_info("images go through criu's image streamer (%s/%s)", dir.c_str(), s.socket);
		return ImageDir::streamed(dirfd, s.direction, [](const std::string &name, bool write) {
			std::string copy = name; // criu's prototype takes a mutable string
			return img_streamer_open(copy.data(), write ? kCriuStreamDump : kCriuStreamRestore);
		});
	}
	return ImageDir::files(dirfd);
}

// The restore guard is for images with GPU state: the inventory says so (criu 4.1+), or a kfd
// image is there, or criu streams them (and nothing can be looked at before the tasks read them).
// A restore that cannot have its guard goes on without it, and says so.
void start_restore_guard(bool listed_in_inventory)
{
	PluginRun &r = current_run();
	const ImageDir dir = run_image_dir();
	try {
		if (!listed_in_inventory && !dir.streamed() && kfd_image_ids(dir.dirfd()).empty())
			return;
		r.restore_guard = std::make_unique<RestoreGuard>(dir.dirfd());
	} catch (const Error &e) {
		pr_warn("%s; the restore goes on without a guard: should criu die before it ends, GPU tasks "
			"would be left half-restored",
			e.what());
	}
}

DumpSession &dump_session()
{
	PluginRun &r = current_run();
	r.options.require_valid();
	if (!r.dump) {
		r.dump = std::make_unique<DumpSession>(r.options, run_image_dir(), std::string(kDefaultTopologyDir));
		const CriuAbi &abi = running_criu();
		r.dump->plan_copies(abi.hooks > kHookDumpDevicesLate, std::string(abi.era));
	}
	return *r.dump;
}

RestoreSession &restore_session()
{
	PluginRun &r = current_run();
	r.options.require_valid();
	// criu forks the restored tasks from processes that may already hold a session: a child
	// drops its copy (closing only its own duplicates of the fds) and starts its own.
	if (!r.restore || r.restore->owner() != getpid())
		r.restore = std::make_unique<RestoreSession>(r.options, run_image_dir(), r.restore_guard.get());
	return *r.restore;
}

const char *env_lookup(const char *name)
{
	return secure_getenv(name);
}

// criu 4.3's --plugin-option words; errors go where invalid settings go.
std::vector<std::string> criu_plugin_options(std::vector<std::string> &errors)
{
	if (!criu_plugin_get_options)
		return {};
	int argc = 0;
	char **argv = nullptr;
	if (const int ret = criu_plugin_get_options(&argc, &argv)) {
		errors.push_back(strprintf("criu cannot hand over its plugin options: %s", strerror(-ret)));
		return {};
	}
	std::vector<std::string> args;
	for (int i = 1; i < argc && argv && argv[i]; i++)
		args.emplace_back(argv[i]);
	return args;
}

} // namespace

namespace hooks {

int init(int stage)
{
	return guarded("init", [&] {
		std::vector<std::string> option_errors;
		const std::vector<std::string> args = criu_plugin_options(option_errors);
		run = std::make_unique<PluginRun>(
			PluginRun { stage, options_from(env_lookup, args), false, nullptr, nullptr, nullptr });
		run->options.errors.insert(run->options.errors.end(), option_errors.begin(), option_errors.end());
		pr_info("%s", describe(running_criu()).c_str());
		for (const std::string &line : describe(run->options))
			pr_info("%s", line.c_str());
		for (const std::string &line : run->options.errors)
			pr_err("%s", line.c_str());
		// Images from a criu 4.1+ dump of GPU state list this plugin: take it off, or criu refuses
		// the restore as missing a plugin. Images without GPU state are restored all the same.
		if (stage != CR_PLUGIN_STAGE__RESTORE)
			return 0;
		const bool listed = check_and_remove_inventory_plugin &&
				    check_and_remove_inventory_plugin(kPluginName, strlen(kPluginName));
		if (check_and_remove_inventory_plugin && !listed)
			pr_debug("the inventory does not list %s: no GPU state in these images", kPluginName);
		start_restore_guard(listed);
		return 0;
	});
}

// Resumes the GPU queues of the dumped tasks, after any GPU copy still running beside criu ended
// (a dump that failed before dump_devices_late). Every criu from 3.17 to 4.3 calls the plugins'
// exit before it releases the dumped tasks (resumed or killed), on success and on failure alike,
// so this is the moment; criu 4.3's DUMP_FINISH runs at the same point and would add nothing.
void exit(int stage, int ret)
{
	guarded("exit", [&] {
		pr_debug("exit: stage %d, criu result %d", stage, ret);
		if (run && run->dump)
			run->dump->finish();
		if (run && run->restore_guard)
			run->restore_guard->release();
		run.reset();
		return 0;
	});
}

// criu 4.1+, for every task of the frozen tree before anything is dumped: the task's GPU state is
// taken now, so that a dump that cannot be restored is refused before anything is written.
int checkpoint_devices(int pid)
{
	return guarded("checkpoint_devices", [&] {
		TaskGpuFiles files = gpu_files_of_task(static_cast<pid_t>(pid));
		if (files.kfd.empty())
			return -ENOTSUP;
		dump_session().checkpoint_task(static_cast<pid_t>(pid), std::move(files));
		return 0;
	});
}

// criu 4.3, once it dumped every task's memory, and the last moment a failure fails the dump: the
// GPU copies begun beside criu's work end here (dump_session.hpp).
int dump_devices_late(int pid)
{
	return guarded("dump_devices_late", [&] {
		(void)pid;
		if (!run || !run->dump)
			return -ENOTSUP;
		run->dump->join_copies();
		return 0;
	});
}

int dump_ext_file(int fd, int id)
{
	return guarded("dump_ext_file", [&] {
		struct stat st;
		if (fstat(fd, &st))
			fail_errno(errno, "cannot stat file id %d (fd %d)", id, fd);
		if (is_dmabuf(fd) && run && run->dump && run->dump->met_gpu_process()) {
			run->dump->dump_dmabuf(fd, static_cast<uint32_t>(id));
			return 0;
		}
		const GpuFileKind kind = classify_device(st);
		if (kind == GpuFileKind::none)
			return -ENOTSUP;
		name_plugin_in_inventory();
		if (kind == GpuFileKind::kfd)
			dump_session().dump_kfd(fd, static_cast<uint32_t>(id));
		else
			dump_session().dump_render_node(fd, static_cast<uint32_t>(id), minor(st.st_rdev));
		return 0;
	});
}

int restore_ext_file(int id, bool *retry_needed)
{
	// Only criu versions with the flag pass it (criu_abi.hpp), and they leave it uninitialised. The plugin
	// asks for a retry only for a render node that comes before its task's kfd file through a stream.
	bool *retry = running_criu().restore_file_retry_flag ? retry_needed : nullptr;
	if (retry)
		*retry = false;
	return guarded("restore_ext_file",
		       [&] { return restore_session().restore_file(static_cast<uint32_t>(id), retry); });
}

int handle_device_vma(int fd, const struct stat *st)
{
	return guarded("handle_device_vma", [&] {
		(void)fd;
		const GpuFileKind kind = classify_device(*st);
		if (kind == GpuFileKind::none)
			return -ENOTSUP;
		name_plugin_in_inventory();
		if (run && run->dump)
			run->dump->close_census();
		pr_debug("accepting mapping of %s", to_string(kind));
		return 0;
	});
}

int update_vma_map(const char *path, const uint64_t addr, const uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd)
{
	return guarded("update_vma_map", [&] {
		const GpuFileKind file = classify_path(path);
		if (file == GpuFileKind::none)
			return -ENOTSUP;
		return restore_session().update_vma(file, addr, old_pgoff, new_pgoff, plugin_fd);
	});
}

int resume_devices_late(int pid)
{
	return guarded("resume_devices_late", [&] {
		if (run && run->restore_guard)
			join_gpu_copy(pid, *run->restore_guard);
		const int ret = resume_gpu_process(pid);
		if (!ret && run && run->restore_guard)
			run->restore_guard->resumed(pid);
		return ret;
	});
}

} // namespace hooks
} // namespace amdgpu
