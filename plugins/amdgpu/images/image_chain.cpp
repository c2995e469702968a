// SPDX-License-Identifier: GPL-2.0-only
#include "images/image_chain.hpp"

#include "support/error.hpp"
#include "images/image_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

namespace amdgpu {

namespace {

// The directory `parent` of `dirfd` links to; empty without one. Throws for a link that leads
// nowhere usable.
unique_fd open_parent(int dirfd)
{
	struct stat st;
	if (fstatat(dirfd, "parent", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return unique_fd();
		fail_errno(errno, "`parent` cannot be looked at");
	}
	unique_fd fd(openat(dirfd, "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!fd) {
		const int err = errno;
		char target[512] = {};
		const ssize_t n = readlinkat(dirfd, "parent", target, sizeof(target) - 1);
		fail_errno(err, "`parent` (%s) cannot be opened", n > 0 ? target : "not a link");
	}
	return fd;
}

} // namespace

ImageChain ImageChain::below(int dirfd, unsigned max_depth)
{
	ImageChain chain;
	int at = dirfd;
	std::set<std::pair<dev_t, ino_t>> seen; // a chain that loops is followed once
	struct stat st;
	if (!fstat(dirfd, &st))
		seen.emplace(st.st_dev, st.st_ino);
	for (unsigned level = 1; level <= max_depth; level++) {
		unique_fd parent;
		try {
			parent = open_parent(at);
			if (parent && (fstat(parent.get(), &st) || !seen.emplace(st.st_dev, st.st_ino).second))
				fail(-ELOOP, "`parent` leads back to a directory of the chain");
		} catch (const Error &e) {
			chain.cut_short_ = level == 1 ? strprintf("the image directory's %s", e.what())
						      : strprintf("the checkpoint %u back in the `parent` chain: %s",
								  level - 1, e.what());
			break;
		}
		if (!parent)
			break;
		std::string why;
		const int fd = parent.get();
		chain.levels_.push_back(std::move(parent));
		if (!chain.add_level(fd, level, why)) {
			chain.levels_.pop_back();
			chain.cut_short_ = strprintf("the checkpoint %u back in the `parent` chain cannot be used: %s",
						     level, why.c_str());
			break;
		}
		at = fd;
	}
	return chain;
}

bool ImageChain::add_level(int dirfd, unsigned level, std::string &why)
{
	// All of a level's sums are read before any of its blocks is indexed: a level is used whole
	// or not at all.
	struct Stored {
		uint32_t gpu_id;
		std::string pages;
		PagesSums sums;
	};
	std::vector<Stored> stored;
	try {
		const ImageDir dir = ImageDir::files(dirfd);
		const std::vector<uint32_t> sums_ids = sums_image_ids(dirfd);
		for (const uint32_t id : kfd_image_ids(dirfd))
			if (!std::binary_search(sums_ids.begin(), sums_ids.end(), id))
				fail(-ENOENT, "%s has no %s", kfd_image_name(id).c_str(), sums_image_name(id).c_str());
		for (const uint32_t id : sums_ids) {
			std::optional<ImageSums> sums = read_image_sums(dir, id);
			if (!sums)
				continue;
			for (PagesSums &p : sums->pages) {
				const std::string pages = pages_image_name(id, p.gpu_id);
				if (p.stored_size) {
					auto reader = ImageReader::open_if_exists(dir, pages, p.stored_size);
					if (!reader)
						fail(-ENOENT, "%s is missing", pages.c_str());
					if (reader->payload_size() != p.stored_size)
						fail(-EBADMSG, "%s holds %llu bytes where its sums say %llu",
						     pages.c_str(),
						     static_cast<unsigned long long>(reader->payload_size()),
						     static_cast<unsigned long long>(p.stored_size));
				}
				stored.push_back({ p.gpu_id, pages, std::move(p) });
			}
		}
	} catch (const Error &e) {
		why = e.what();
		return false;
	}
	gpu_levels_ += !stored.empty();
	for (const Stored &s : stored) {
		const uint32_t image = static_cast<uint32_t>(images_.size());
		images_.push_back({ level, dirfd, s.pages, s.sums.stored_size });
		const std::vector<BlockPlace> grid = block_grid(s.sums.bo_sizes);
		uint64_t offset = 0;
		for (size_t i = 0; i < grid.size(); i++) {
			if (s.sums.block_in_chain(i))
				continue;
			if (!s.sums.blocks[i].zero)
				index_.try_emplace(Key { s.gpu_id, grid[i].len, s.sums.blocks[i].digest },
						   ChainBlock { image, offset });
			offset += grid[i].len;
		}
	}
	return true;
}

const ChainBlock *ImageChain::find(uint32_t gpu_id, const Digest &digest, uint64_t len) const
{
	const auto it = index_.find(Key { gpu_id, len, digest });
	return it == index_.end() ? nullptr : &it->second;
}

bool ImageChain::has_gpu(uint32_t gpu_id) const
{
	const auto it = index_.lower_bound(Key { gpu_id, 0, Digest {} });
	return it != index_.end() && it->first.gpu_id == gpu_id;
}

} // namespace amdgpu
