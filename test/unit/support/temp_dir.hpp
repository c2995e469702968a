// SPDX-License-Identifier: GPL-2.0-only
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace amdgpu::test {

// A fresh directory under $TMPDIR (or `base`), removed with everything in it at the end of the
// scope.
class TempDir {
public:
	explicit TempDir(const std::filesystem::path &base = std::filesystem::temp_directory_path())
	{
		std::string tmpl = (base / "amdgpu-test-XXXXXX").string();
		if (!mkdtemp(tmpl.data()))
			throw std::runtime_error("mkdtemp failed");
		path_ = tmpl;
		fd_ = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	~TempDir()
	{
		if (fd_ >= 0)
			close(fd_);
		// A process a test started (a restore guard, say) may still unlink a file of its own
		// in here as it ends; remove_all gives up at the first entry that vanished under it.
		std::error_code ec;
		for (int attempt = 0; attempt < 50 && std::filesystem::exists(path_, ec); attempt++) {
			if (attempt)
				usleep(20 * 1000);
			std::filesystem::remove_all(path_, ec);
		}
	}
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;

	const std::filesystem::path &path() const { return path_; }
	std::string str() const { return path_.string(); }
	int fd() const { return fd_; }

	// Writes `bytes` to the file `name` inside the directory.
	void write(const std::string &name, const std::string &bytes) const
	{
		std::filesystem::create_directories((path_ / name).parent_path());
		std::ofstream(path_ / name, std::ios::binary) << bytes;
	}

private:
	std::filesystem::path path_;
	int fd_ = -1;
};

} // namespace amdgpu::test
