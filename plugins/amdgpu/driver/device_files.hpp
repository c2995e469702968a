// SPDX-License-Identifier: GPL-2.0-only
//
// Which files and mappings belong to this plugin: /dev/kfd and the DRM render nodes. Everything
// else is answered with -ENOTSUP so that criu asks the next plugin (or handles it itself).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <string_view>

namespace amdgpu {

enum class GpuFileKind {
	none,
	kfd,
	render_node,
};

inline constexpr unsigned int kDrmMajor = 226;
inline constexpr unsigned int kFirstRenderMinor = 128;
inline constexpr unsigned int kLastRenderMinor = 255;
inline constexpr const char *kKfdPath = "/dev/kfd";

// Classifies a file by its stat. The kfd major is dynamic: it is read from `kfd_path` (absent
// /dev/kfd means no file can be a kfd file, not an error).
GpuFileKind classify_device(const struct stat &st, const char *kfd_path = kKfdPath);

// The GPU file a path names, as criu hands it for a mapping: resolved in criu's mount namespace,
// "/dev/kfd" for a task that sees the node's /dev, but ".../root/dev/dri/renderD129" for a task
// chrooted into another userland. So the device number decides, not the name. A path that
// cannot be looked up (the node it names is gone: a restore on a node whose render minors differ)
// is judged by its name: ".../dev/kfd" or ".../dev/dri/renderD<N>", under whatever root.
GpuFileKind classify_path(const char *path);

const char *to_string(GpuFileKind kind);

// Where the character device `rdev` is in `dir` of this mount namespace: `preferred` (a name in
// `dir`) when it is that device, else the first entry of `dir` that is (a container may hold a
// GPU's render node under another name than the one sysfs gives: `podman run --device
// HOST:CONTAINER`, a device plugin that renames it). Empty when `dir` has no such device;
// `preferred_is` then says what `preferred` is instead ("absent", "device 226:129", ...).
std::string find_char_device(const std::string &dir, const std::string &preferred, dev_t rdev,
			     std::string *preferred_is = nullptr);

// Whether the device rules of this task's cgroup keep it to the devices it was given: 1 when they
// do, 0 when nothing keeps it from any device, -errno when it cannot be told. No one interface
// says so for both cgroup versions and every container engine, so it is probed: a node for a
// device no engine grants and no kernel has (DRM minor 127, between the card and the render
// ranges) is made in `dir`, opened once and removed. The kernel consults the cgroup's rules when
// the node is opened, before it looks for the driver: EPERM means the rules refused it; ENODEV or
// ENXIO means the kernel went looking for the device, so nothing stood in the way. A mknod that
// is refused (a user namespace, a read-only `dir`) leaves it unknown.
int device_rules_restrict(const std::string &dir);

// Makes `dir`/`name` the character device `rdev` with the mode and owner of the first character
// device in `dir` whose name begins with `like` (one the container engine made), or mode 0600 and
// root's when there is none; `*how` says which ("mode 0660, owner 0:105, as renderD128"). 0, or
// -errno (nothing is left behind).
int make_char_device(const std::string &dir, const std::string &name, dev_t rdev, std::string_view like,
		     std::string *how);

// The character devices in `dir`, for an error message: "renderD129 (226:129), card1 (226:1)"
// in name order, or "no device" (also when `dir` cannot be read).
std::string describe_char_devices(const std::string &dir);

} // namespace amdgpu
