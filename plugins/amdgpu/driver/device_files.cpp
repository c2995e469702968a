// SPDX-License-Identifier: GPL-2.0-only
#include "driver/device_files.hpp"

#include "support/error.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>

namespace amdgpu {

GpuFileKind classify_device(const struct stat &st, const char *kfd_path)
{
	if (!S_ISCHR(st.st_mode))
		return GpuFileKind::none;

	struct stat kfd;
	if (!stat(kfd_path, &kfd) && S_ISCHR(kfd.st_mode) && major(st.st_rdev) == major(kfd.st_rdev) &&
	    minor(st.st_rdev) == 0)
		return GpuFileKind::kfd;

	const unsigned int minor_nr = minor(st.st_rdev);
	if (major(st.st_rdev) == kDrmMajor && minor_nr >= kFirstRenderMinor && minor_nr <= kLastRenderMinor)
		return GpuFileKind::render_node;

	return GpuFileKind::none;
}

GpuFileKind classify_path(const char *path)
{
	struct stat st;
	if (!stat(path, &st))
		return classify_device(st);
	// By name: the last "/dev/" of the path, which a task's root may prefix.
	const std::string_view p(path);
	const size_t dev = p.rfind("/dev/");
	if (dev == std::string_view::npos)
		return GpuFileKind::none;
	const std::string_view name = p.substr(dev + strlen("/dev/"));
	if (name == "kfd")
		return GpuFileKind::kfd;
	constexpr std::string_view render = "dri/renderD";
	if (name.size() > render.size() && name.substr(0, render.size()) == render &&
	    name.find_first_not_of("0123456789", render.size()) == std::string_view::npos)
		return GpuFileKind::render_node;
	return GpuFileKind::none;
}

const char *to_string(GpuFileKind kind)
{
	switch (kind) {
	case GpuFileKind::kfd:
		return "/dev/kfd";
	case GpuFileKind::render_node:
		return "render node";
	case GpuFileKind::none:
		break;
	}
	return "not a GPU file";
}

namespace {

bool is_char_device(const std::string &path, dev_t rdev, std::string *what)
{
	struct stat st;
	if (stat(path.c_str(), &st)) {
		if (what)
			*what = errno == ENOENT ? "absent" : strerror(errno);
		return false;
	}
	if (S_ISCHR(st.st_mode) && st.st_rdev == rdev)
		return true;
	if (what)
		*what = S_ISCHR(st.st_mode) ? strprintf("device %u:%u", major(st.st_rdev), minor(st.st_rdev))
					    : std::string("not a character device");
	return false;
}

struct DirCloser {
	void operator()(DIR *d) const { closedir(d); }
};

} // namespace

std::string find_char_device(const std::string &dir, const std::string &preferred, dev_t rdev,
			     std::string *preferred_is)
{
	const std::string first = dir + "/" + preferred;
	if (is_char_device(first, rdev, preferred_is))
		return first;
	std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str()));
	if (!d)
		return {};
	while (const dirent *de = readdir(d.get())) {
		if (de->d_name[0] == '.' || preferred == de->d_name)
			continue;
		const std::string path = dir + "/" + de->d_name;
		if (is_char_device(path, rdev, nullptr))
			return path;
	}
	return {};
}

int device_rules_restrict(const std::string &dir)
{
	constexpr unsigned int kNoDeviceMinor = 127;
	const std::string probe = strprintf("%s/.amdgpu_plugin-probe-%d", dir.c_str(), getpid());
	unlink(probe.c_str());
	if (mknod(probe.c_str(), S_IFCHR | 0600, makedev(kDrmMajor, kNoDeviceMinor)))
		return -errno;
	const int fd = open(probe.c_str(), O_RDWR | O_CLOEXEC);
	const int err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	unlink(probe.c_str());
	switch (err) {
	case EPERM:
		return 1;
	case ENODEV:
	case ENXIO:
		return 0;
	default:
		return -(err ? err : EEXIST); // a device where none should be: nothing can be told
	}
}

int make_char_device(const std::string &dir, const std::string &name, dev_t rdev, std::string_view like,
		     std::string *how)
{
	struct stat model = {};
	model.st_mode = S_IFCHR | 0600;
	std::string model_name;
	if (std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str())); d) {
		while (const dirent *de = readdir(d.get())) {
			struct stat st;
			if (std::string_view(de->d_name).starts_with(like) &&
			    !stat((dir + "/" + de->d_name).c_str(), &st) && S_ISCHR(st.st_mode) &&
			    (model_name.empty() || model_name > de->d_name)) {
				model = st;
				model_name = de->d_name;
			}
		}
	}
	const std::string path = dir + "/" + name;
	const mode_t mode = model.st_mode & 07777;
	if (mknod(path.c_str(), S_IFCHR | mode, rdev))
		return -errno;
	if (chown(path.c_str(), model.st_uid, model.st_gid) || chmod(path.c_str(), mode)) {
		const int err = errno;
		unlink(path.c_str());
		return -err;
	}
	if (how)
		*how = strprintf("mode %04o, owner %u:%u, %s", mode, model.st_uid, model.st_gid,
				 model_name.empty() ? "no other node to follow" : ("as " + model_name).c_str());
	return 0;
}

std::string describe_char_devices(const std::string &dir)
{
	std::set<std::string> found;
	if (std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str())); d) {
		while (const dirent *de = readdir(d.get())) {
			struct stat st;
			if (de->d_name[0] != '.' && !stat((dir + "/" + de->d_name).c_str(), &st) && S_ISCHR(st.st_mode))
				found.insert(strprintf("%s (%u:%u)", de->d_name, major(st.st_rdev), minor(st.st_rdev)));
		}
	}
	std::string out;
	for (const std::string &f : found)
		out += (out.empty() ? "" : ", ") + f;
	return out.empty() ? "no device" : out;
}

} // namespace amdgpu
