// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_contexts.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <system_error>

namespace amdgpu {

namespace {

constexpr std::string_view kContextPrefix = "context_";
constexpr uint32_t kMaxContextId = 0xfffe; // 0xffff is the primary's
constexpr size_t kMaxContexts = 0xffff;

} // namespace

std::vector<uint32_t> secondary_kfd_contexts(const std::filesystem::path &process_dir)
{
	std::vector<uint32_t> ids;
	std::error_code ec;
	for (std::filesystem::directory_iterator it(process_dir, ec), end; !ec && it != end; it.increment(ec)) {
		const std::string name = it->path().filename().string();
		if (!name.starts_with(kContextPrefix) || !it->is_directory(ec))
			continue;
		const std::string_view digits = std::string_view(name).substr(kContextPrefix.size());
		uint32_t id = 0;
		const auto [end_ptr, err] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
		if (err != std::errc() || end_ptr != digits.data() + digits.size() || digits.empty() ||
		    id > kMaxContextId)
			continue;
		ids.push_back(id);
		if (ids.size() >= kMaxContexts)
			break;
	}
	std::sort(ids.begin(), ids.end());
	return ids;
}

std::string describe_kfd_contexts(const std::vector<uint32_t> &ids)
{
	std::string out;
	for (const uint32_t id : ids) {
		if (!out.empty())
			out += ", ";
		out += std::string(kContextPrefix) + std::to_string(id);
	}
	return out;
}

} // namespace amdgpu
