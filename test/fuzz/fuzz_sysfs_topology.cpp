// SPDX-License-Identifier: GPL-2.0-only
//
// The sysfs topology parser, on a tree whose files hold the input: the input's NUL-separated
// pieces replace, in order, the files of a checked-in tree (2 x MI210; files the input does not
// reach keep their contents). The parsed node then goes through the GPU matcher as the local
// node of a restore of the checked-in topology.
#include "fuzz_support.hpp"

#include "matching/gpu_matcher.hpp"

#include <algorithm>
#include <fstream>
#include <vector>

using namespace amdgpu;
namespace fs = std::filesystem;

namespace {

struct Tree {
	fuzz::ScratchDir dir;
	std::vector<fs::path> files; // relative, sorted
	std::vector<std::string> original;

	Tree()
	{
		const fs::path base = fuzz::fixture("mi210-2gpu-pcie");
		fs::copy(base, dir.path() / "nodes", fs::copy_options::recursive);
		for (const auto &e : fs::recursive_directory_iterator(base))
			if (e.is_regular_file())
				files.push_back(fs::relative(e.path(), base));
		std::sort(files.begin(), files.end());
		for (const fs::path &f : files) {
			std::ifstream in(base / f, std::ios::binary);
			original.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
		}
	}
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const Tree tree;
	const char *p = reinterpret_cast<const char *>(data), *end = p + size;
	for (size_t i = 0; i < tree.files.size(); i++) {
		std::string content = tree.original[i];
		if (p < end) {
			const char *nul = std::find(p, end, '\0');
			content.assign(p, nul);
			p = nul == end ? end : nul + 1;
		}
		std::ofstream(tree.dir.path() / "nodes" / tree.files[i], std::ios::binary | std::ios::trunc) << content;
	}
	fuzz::refusals_are_fine([&] {
		const Topology local = parse_topology(tree.dir.path() / "nodes");
		(void)match_gpus(fuzz::local_topology(), local, MatchPolicy {});
	});
	return 0;
}
