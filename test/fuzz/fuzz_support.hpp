// SPDX-License-Identifier: GPL-2.0-only
//
// What the harnesses share: a directory on tmpfs where an input becomes an image file, read back
// through the plugin's own image reader, and the local topology a restore would match against
// (a checked-in sysfs tree). An amdgpu::Error is the plugin refusing bad input, as it must; any
// other exception, a crash or a sanitizer report is a finding.
#pragma once

#include "support/error.hpp"
#include "images/image_store.hpp"
#include "topology/topology.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace amdgpu::fuzz {

// Where the checked-in sysfs trees are: make fuzz runs the harnesses from the repository root.
inline std::filesystem::path fixture(const char *name)
{
	const char *root = getenv("FUZZ_FIXTURES");
	return std::filesystem::path(root ? root : "test/unit/fixtures/topology") / name;
}

class ScratchDir {
public:
	ScratchDir()
	{
		std::string tmpl = (std::filesystem::exists("/dev/shm") ? std::string("/dev/shm") : std::string("/tmp")) +
				   "/amdgpu-fuzz-XXXXXX";
		if (!mkdtemp(tmpl.data()))
			abort();
		path_ = tmpl;
		fd_.reset(open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	}
	~ScratchDir()
	{
		std::error_code ec;
		std::filesystem::remove_all(path_, ec);
	}
	const std::filesystem::path &path() const { return path_; }
	ImageDir images() const { return ImageDir::files(fd_.get()); }

	// Makes `name` hold exactly these bytes.
	void put(const std::string &name, const uint8_t *data, size_t size) const
	{
		unique_fd f(openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
		if (!f || (size && write(f.get(), data, size) != static_cast<ssize_t>(size)))
			abort();
	}

private:
	std::filesystem::path path_;
	unique_fd fd_;
};

// The node a restore lands on: 2 x MI210 on one socket.
inline const Topology &local_topology()
{
	static const Topology local = parse_topology(fixture("mi210-2gpu-pcie"));
	return local;
}

template <typename Fn> void refusals_are_fine(Fn &&fn)
{
	try {
		fn();
	} catch (const Error &) {
		// bad input, refused with a message: what the plugin must do
	}
}

} // namespace amdgpu::fuzz
