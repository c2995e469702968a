// SPDX-License-Identifier: GPL-2.0-only
//
// amdgpu-topology: shows the KFD topology the plugin sees, and which local GPU would take the
// place of each GPU of a checkpoint (another node's topology tree, or criu images) on restore, and
// checks a checkpoint's GPU images against their checksums.
#include "support/error.hpp"
#include "matching/gpu_matcher.hpp"
#include "images/image_store.hpp"
#include "images/image_verify.hpp"
#include "images/metadata_images.hpp"
#include "sessions/options.hpp"
#include "topology/topology.hpp"
#include "topology/topology_image.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <functional>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

enum ExitCode {
	kExitOk = 0,
	kExitNoMapping = 1,
	kExitUsage = 2,
	kExitDamaged = 3,
};

const char *kUsage =
	"Usage: amdgpu-topology [--sysfs DIR] [--from DIR | --images DIR]\n"
	"       amdgpu-topology --verify DIR\n"
	"\n"
	"Prints the KFD topology of this node (or of the tree DIR) as the amdgpu CRIU plugin sees it:\n"
	"CPU and GPU nodes, gpu_ids, device ids, gfx targets, VRAM, render nodes, PCIe/xGMI links\n"
	"and xGMI hives.\n"
	"\n"
	"  --sysfs DIR    the topology to show or restore onto (default %s)\n"
	"  --from DIR     a second topology tree, the node a process was checkpointed on:\n"
	"                 prints how its GPUs would map onto the --sysfs topology on restore\n"
	"  --images DIR   a criu image directory: for every amdgpu-kfd-<id>.img in it, prints how\n"
	"                 the GPUs of the image would map onto the --sysfs topology on restore\n"
	"  --verify DIR   a criu image directory: checks every process's GPU images (kfd and pages) and every\n"
	"                 render-node file's (its image and the memory of its GEM objects)\n"
	"                 against the checksums the plugin wrote with them, as a restore would;\n"
	"                 needs no GPU\n"
	"  -h, --help     this text\n"
	"\n"
	"Matching honours KFD_FW_VER_CHECK, KFD_SDMA_FW_VER_CHECK, KFD_CACHES_COUNT_CHECK,\n"
	"KFD_NUM_GWS_CHECK, KFD_VRAM_SIZE_CHECK, KFD_NUMA_CHECK and KFD_CAPABILITY_CHECK like the\n"
	"plugin (0/no disables a check, 1/yes enables it).\n"
	"\n"
	"Exit status: 0 topology shown, mapping found or images intact, 1 no mapping, 2 usage or\n"
	"parse error, 3 an image is damaged or has no checksums.\n";

std::string gfx_target(uint32_t version)
{
	if (!version)
		return "gfx?";
	// major * 10000 + minor * 100 + stepping, minor and stepping printed as hex digits.
	return strprintf("gfx%u%x%x", version / 10000, (version / 100) % 100, version % 100);
}

std::string gib(uint64_t bytes)
{
	return strprintf("%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
}

// Links grouped by type and state: "PCIe<->0  xGMI<->3-9  xGMI->12 (hidden)".
std::string describe_links(const Node &n)
{
	struct Group {
		IoLinkType type;
		int state; // 0 both ways, 1 one way, 2 peer hidden
		std::vector<uint32_t> peers;
	};
	std::vector<Group> groups;
	for (const IoLink &l : n.links) {
		const int state = !l.valid ? 2 : l.bidirectional ? 0 : 1;
		auto it = std::find_if(groups.begin(), groups.end(),
				       [&](const Group &g) { return g.type == l.type && g.state == state; });
		if (it == groups.end())
			it = groups.insert(groups.end(), Group { l.type, state, {} });
		it->peers.push_back(l.node_to);
	}
	std::string out;
	for (Group &g : groups) {
		std::sort(g.peers.begin(), g.peers.end());
		out += strprintf("%s%s%s%s%s", out.empty() ? "" : "  ", io_link_type_name(g.type),
				 g.state == 0 ? "<->" : "->", node_ranges(g.peers).c_str(),
				 g.state == 2 ? " (hidden)" : "");
	}
	return out.empty() ? "none" : out;
}

void print_topology(const Topology &t, const std::string &where)
{
	std::printf("KFD topology of %s: %zu CPU node(s), %zu GPU(s), %zu xGMI hive(s)\n", where.c_str(),
		    t.cpus().size(), t.gpus().size(), t.hives().size());
	for (const Node &n : t.nodes()) {
		const NodeProperties &p = n.props;
		if (n.is_gpu())
			std::printf("  node %-3u GPU  gpu_id 0x%04x  device 0x%04x  %s  %u CUs  VRAM %s%s  renderD%u  "
				    "fw %u  sdma fw %u\n",
				    n.node_id, n.gpu_id, p.device_id, gfx_target(p.gfx_target_version).c_str(),
				    p.simd_per_cu ? p.simd_count / p.simd_per_cu : 0, gib(p.vram_size).c_str(),
				    p.vram_public ? "" : " (private)", p.drm_render_minor, p.fw_version,
				    p.sdma_fw_version);
		else
			std::printf("  node %-3u CPU  %u cores\n", n.node_id, p.cpu_cores_count);
		std::printf("           links: %s\n", describe_links(n).c_str());
	}
	for (size_t h = 0; h < t.hives().size(); h++) {
		const std::vector<uint32_t> &hive = t.hives()[h];
		std::printf("  hive %zu: nodes %s (hive_id 0x%llx)\n", h, node_ranges(hive).c_str(),
			    static_cast<unsigned long long>(t.node(hive.front())->props.hive_id));
	}
}

std::string describe_gpu(const Node &n)
{
	return strprintf("gpu 0x%04x (node %u, device 0x%04x, renderD%u)", n.gpu_id, n.node_id, n.props.device_id,
			 n.props.drm_render_minor);
}

// Prints the mapping of `src` onto `dest`; returns false (after printing why) when there is none.
bool print_mapping(const Topology &src, const std::string &src_name, const Topology &dest, const std::string &dest_name,
		   const MatchPolicy &policy)
{
	std::printf("Restore of %s (%zu GPU(s)) onto %s (%zu GPU(s)):\n", src_name.c_str(), src.gpus().size(),
		    dest_name.c_str(), dest.gpus().size());
	GpuMap map;
	try {
		map = match_gpus(src, dest, policy);
	} catch (const Error &e) {
		std::printf("  no mapping: %s\n", e.what());
		return false;
	}
	for (const Node *gpu : src.gpus())
		std::printf("  %s -> %s\n", describe_gpu(*gpu).c_str(),
			    describe_gpu(*dest.gpu(map.gpu_ids.at(gpu->gpu_id))).c_str());
	if (!map.cpu_nodes.empty()) {
		std::string numa;
		for (const auto &[from, to] : map.cpu_nodes)
			numa += strprintf("%s%u -> %u", numa.empty() ? "" : ", ", from, to);
		std::printf("  NUMA nodes: %s\n", numa.c_str());
	}
	if (src.gpus().empty())
		std::printf("  (no GPUs to map)\n");
	return true;
}

unique_fd open_image_dir(const std::string &path)
{
	unique_fd dirfd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!dirfd)
		fail_errno(errno, "cannot open %s", path.c_str());
	return dirfd;
}

namespace {

// One line for the images of one file: intact, damaged, or without sums. False unless intact.
bool verdict_line(const std::string &name, uint32_t id, const char *what, const std::function<ImagesVerdict()> &verify)
{
	try {
		const ImagesVerdict v = verify();
		if (!v.has_sums) {
			std::printf("%s: no %s (written by upstream's plugin, or by this one before checksums): "
				    "cannot be checked\n",
				    name.c_str(), sums_image_name(id).c_str());
			return false;
		}
		const std::string chain = v.chain_bytes ? strprintf(", %.1f MiB of it read from earlier checkpoints",
								    static_cast<double>(v.chain_bytes) / (1 << 20))
							: std::string();
		std::printf("%s: intact (the %s and %zu blocks, %.1f MiB, of GPU memory in %zu pages images match "
			    "their checksums%s)\n",
			    name.c_str(), what, v.blocks, static_cast<double>(v.bytes) / (1 << 20),
			    v.pages_images.size(), chain.c_str());
		return true;
	} catch (const Error &e) {
		std::printf("%s: DAMAGED: %s\n", name.c_str(), e.what());
	} catch (const std::exception &e) {
		std::printf("%s: DAMAGED: cannot be checked: %s\n", name.c_str(), e.what());
	}
	return false;
}

} // namespace

// Every process's images, and every render-node file's, against their checksums; one line each.
int verify_images(const std::string &dir)
{
	const unique_fd dirfd = open_image_dir(dir);
	const ImageDir images = ImageDir::files(dirfd.get());
	const std::vector<uint32_t> ids = kfd_image_ids(dirfd.get());
	const std::vector<uint32_t> render_ids = render_image_ids(dirfd.get());
	if (ids.empty() && render_ids.empty())
		fail(-ENOENT, "%s holds no amdgpu-kfd-<id>.img and no amdgpu-renderD-<id>.img", dir.c_str());
	bool intact = true;
	for (const uint32_t id : ids)
		intact &= verdict_line(kfd_image_name(id), id, "kfd image",
				       [&] { return verify_process_images(images, id); });
	// a render-node file without objects or contexts has no sums: nothing to check, nothing to say
	const std::vector<uint32_t> sums = sums_image_ids(dirfd.get());
	for (const uint32_t id : render_ids)
		if (std::binary_search(sums.begin(), sums.end(), id))
			intact &= verdict_line(render_image_name(id), id, "render-node image",
					       [&] { return verify_render_images(images, id); });
	return intact ? kExitOk : kExitDamaged;
}

int run(int argc, char **argv)
{
	std::string sysfs(kDefaultTopologyDir), from, images, verify;
	static const option long_options[] = {
		{ "sysfs", required_argument, nullptr, 's' },  { "from", required_argument, nullptr, 't' },
		{ "images", required_argument, nullptr, 'i' }, { "verify", required_argument, nullptr, 'v' },
		{ "help", no_argument, nullptr, 'h' },	       { nullptr, 0, nullptr, 0 },
	};
	for (int c; (c = getopt_long(argc, argv, "h", long_options, nullptr)) != -1;) {
		switch (c) {
		case 's':
			sysfs = optarg;
			break;
		case 't':
			from = optarg;
			break;
		case 'i':
			images = optarg;
			break;
		case 'v':
			verify = optarg;
			break;
		case 'h':
			std::printf(kUsage, std::string(kDefaultTopologyDir).c_str());
			return kExitOk;
		default:
			std::fprintf(stderr, kUsage, std::string(kDefaultTopologyDir).c_str());
			return kExitUsage;
		}
	}
	if (optind != argc || (!from.empty() + !images.empty() + !verify.empty()) > 1) {
		std::fprintf(stderr, kUsage, std::string(kDefaultTopologyDir).c_str());
		return kExitUsage;
	}

	try {
		if (!verify.empty())
			return verify_images(verify);
		const Topology local = parse_topology(sysfs);
		if (from.empty() && images.empty()) {
			print_topology(local, sysfs);
			return kExitOk;
		}
		const MatchPolicy policy =
			match_policy_from_env([](const char *name) -> const char * { return getenv(name); });
		if (!from.empty()) {
			const Topology src = parse_topology(from);
			return print_mapping(src, from, local, sysfs, policy) ? kExitOk : kExitNoMapping;
		}

		const unique_fd dirfd = open_image_dir(images);
		const std::vector<uint32_t> ids = kfd_image_ids(dirfd.get());
		if (ids.empty())
			fail(-ENOENT, "%s holds no amdgpu-kfd-<id>.img", images.c_str());
		bool all_mapped = true;
		for (uint32_t id : ids) {
			const std::string name = kfd_image_name(id);
			const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(dirfd.get()), id);
			const Topology src = topology_from_image(*msg, name);
			all_mapped &= print_mapping(src, images + "/" + name, local, sysfs, policy);
		}
		return all_mapped ? kExitOk : kExitNoMapping;
	} catch (const Error &e) {
		const bool no_kfd = e.err() == -ENOENT && sysfs == kDefaultTopologyDir;
		std::fprintf(stderr, "amdgpu-topology: %s%s\n", e.what(),
			     no_kfd ? " (no KFD here: is the amdgpu driver loaded? --sysfs DIR reads another tree)"
				    : "");
		return kExitUsage;
	}
}

} // namespace
} // namespace amdgpu

int main(int argc, char **argv)
{
	return amdgpu::run(argc, argv);
}
