// SPDX-License-Identifier: GPL-2.0-only
#include "images/image_checksums.hpp"

#include "criu-amdgpu.pb-c.h"
#include "support/error.hpp"
#include "images/sparse_pages.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

namespace amdgpu {

namespace {

constexpr uint8_t kKindData = 0;
constexpr uint8_t kKindZero = 1;
constexpr uint8_t kKindInChain = 2;

Digest digest_from(XXH128_hash_t h)
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	Digest d;
	static_assert(sizeof(c.digest) == sizeof(d.bytes));
	std::memcpy(d.bytes.data(), c.digest, d.bytes.size());
	return d;
}

// Zeros to hash where a block that has data also has a hole.
const uint8_t kZeros[64 * 1024] = {};

struct SumsFree {
	void operator()(AmdgpuImageSums *msg) const { amdgpu_image_sums__free_unpacked(msg, nullptr); }
};

} // namespace

std::string Digest::hex() const
{
	std::string s;
	for (uint8_t b : bytes)
		s += strprintf("%02x", b);
	return s;
}

Digest digest_of(std::span<const uint8_t> bytes)
{
	return digest_from(XXH3_128bits(bytes.data(), bytes.size()));
}

std::vector<BlockPlace> block_grid(std::span<const uint64_t> bo_sizes, uint64_t block_size)
{
	std::vector<BlockPlace> grid;
	for (uint32_t bo = 0; bo < bo_sizes.size(); bo++)
		for (uint64_t off = 0; off < bo_sizes[bo]; off += block_size)
			grid.push_back({ bo, off, std::min(block_size, bo_sizes[bo] - off) });
	return grid;
}

struct BlockSummer::State {
	State() : xxh(XXH3_createState())
	{
		if (!xxh)
			throw std::bad_alloc();
	}
	~State() { XXH3_freeState(xxh); }
	State(const State &) = delete;
	State &operator=(const State &) = delete;
	XXH3_state_t *xxh;
};

BlockSummer::BlockSummer(std::span<const uint64_t> bo_sizes, uint64_t block_size)
    : grid_(block_grid(bo_sizes, block_size)), state_(std::make_unique<State>())
{
	sums_.reserve(grid_.size());
}

BlockSummer::~BlockSummer() = default;
BlockSummer::BlockSummer(BlockSummer &&) noexcept = default;
BlockSummer &BlockSummer::operator=(BlockSummer &&) noexcept = default;

namespace {

// Adds the time of its life to a counter.
class Stopwatch {
public:
	explicit Stopwatch(double &total) : total_(total), start_(std::chrono::steady_clock::now()) {}
	~Stopwatch() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
	Stopwatch(const Stopwatch &) = delete;
	Stopwatch &operator=(const Stopwatch &) = delete;

private:
	double &total_;
	std::chrono::steady_clock::time_point start_;
};

} // namespace

void BlockSummer::add(std::span<const uint8_t> bytes)
{
	const Stopwatch watch(seconds_);
	feed(bytes.data(), bytes.size());
}

void BlockSummer::add_zeros(uint64_t n)
{
	const Stopwatch watch(seconds_);
	feed(nullptr, n);
}

void BlockSummer::feed(const uint8_t *bytes, uint64_t n)
{
	while (n) {
		if (sums_.size() == grid_.size())
			fail(-EINVAL, "%llu bytes more than the %zu blocks of the BOs hold",
			     static_cast<unsigned long long>(n), grid_.size());
		const uint64_t len = std::min(n, grid_[sums_.size()].len - seen_);
		take(bytes, len);
		if (bytes)
			bytes += len;
		n -= len;
	}
}

void BlockSummer::hash_zeros(uint64_t n)
{
	for (uint64_t k; n; n -= k) {
		k = std::min<uint64_t>(n, sizeof(kZeros));
		XXH3_128bits_update(state_->xxh, kZeros, k);
	}
}

// While a block has shown only zeros nothing is hashed; its first non-zero byte hashes the zeros
// before it, so a block's digest is always the hash of all its bytes.
void BlockSummer::take(const uint8_t *bytes, uint64_t n)
{
	if (!hashing_ && bytes && !is_zero(bytes, n)) {
		XXH3_128bits_reset(state_->xxh);
		hash_zeros(seen_);
		hashing_ = true;
	}
	if (hashing_ && bytes)
		XXH3_128bits_update(state_->xxh, bytes, n);
	else if (hashing_)
		hash_zeros(n);
	seen_ += n;
	if (seen_ == grid_[sums_.size()].len)
		close_block();
}

void BlockSummer::close_block()
{
	BlockSum sum;
	sum.zero = !hashing_;
	if (hashing_)
		sum.digest = digest_from(XXH3_128bits_digest(state_->xxh));
	sums_.push_back(sum);
	seen_ = 0;
	hashing_ = false;
}

uint64_t PagesSums::stored_bytes() const
{
	const std::vector<BlockPlace> grid = block_grid(bo_sizes);
	uint64_t n = 0;
	for (size_t i = 0; i < grid.size(); i++)
		if (!block_in_chain(i))
			n += grid[i].len;
	return n;
}

const PagesSums *ImageSums::pages_of(uint32_t gpu_id) const
{
	for (const PagesSums &p : pages)
		if (p.gpu_id == gpu_id)
			return &p;
	return nullptr;
}

std::vector<uint8_t> pack_image_sums(const ImageSums &sums)
{
	std::vector<AmdgpuPagesSums> pages(sums.pages.size());
	std::vector<AmdgpuPagesSums *> page_ptrs;
	std::vector<std::vector<uint8_t>> kinds(sums.pages.size()), digests(sums.pages.size());
	for (size_t i = 0; i < sums.pages.size(); i++) {
		const PagesSums &src = sums.pages[i];
		for (size_t b = 0; b < src.blocks.size(); b++) {
			const BlockSum &sum = src.blocks[b];
			kinds[i].push_back(src.block_in_chain(b) ? kKindInChain : sum.zero ? kKindZero : kKindData);
			digests[i].insert(digests[i].end(), sum.digest.bytes.begin(), sum.digest.bytes.end());
		}
		AmdgpuPagesSums &m = pages[i];
		amdgpu_pages_sums__init(&m);
		m.has_gpu_id = m.has_stored_size = m.has_kinds = m.has_digests = true;
		m.gpu_id = src.gpu_id;
		m.stored_size = src.stored_size;
		m.kinds = { kinds[i].size(), kinds[i].data() };
		m.digests = { digests[i].size(), digests[i].data() };
		m.n_bo_sizes = src.bo_sizes.size();
		m.bo_sizes = const_cast<uint64_t *>(src.bo_sizes.data()); // protobuf-c only reads it
		page_ptrs.push_back(&m);
	}
	AmdgpuImageSums msg = AMDGPU_IMAGE_SUMS__INIT;
	msg.has_algorithm = msg.has_block_size = msg.has_kfd_digest = true;
	msg.algorithm = kSumAlgorithmXxh3_128;
	msg.block_size = sums.block_size;
	Digest kfd = sums.kfd;
	msg.kfd_digest = { kfd.bytes.size(), kfd.bytes.data() };
	msg.n_pages = page_ptrs.size();
	msg.pages = page_ptrs.data();
	std::vector<uint8_t> out(amdgpu_image_sums__get_packed_size(&msg));
	amdgpu_image_sums__pack(&msg, out.data());
	return out;
}

ImageSums unpack_image_sums(std::span<const uint8_t> bytes, const std::string &name)
{
	const std::unique_ptr<AmdgpuImageSums, SumsFree> msg(
		amdgpu_image_sums__unpack(nullptr, bytes.size(), bytes.data()));
	if (!msg)
		fail(-EINVAL, "image %s is not a valid amdgpu_image_sums message (%zu bytes)", name.c_str(),
		     bytes.size());
	if (!msg->has_algorithm || msg->algorithm != kSumAlgorithmXxh3_128)
		fail(-EINVAL, "image %s: checksum algorithm %u is not XXH3-128 (%u), the only one this plugin knows",
		     name.c_str(), msg->has_algorithm ? msg->algorithm : 0, kSumAlgorithmXxh3_128);
	if (!msg->has_block_size || msg->block_size != kSumBlock)
		fail(-EINVAL, "image %s: checksum block of %llu bytes, where this plugin sums blocks of %llu",
		     name.c_str(), static_cast<unsigned long long>(msg->block_size),
		     static_cast<unsigned long long>(kSumBlock));
	ImageSums sums;
	sums.block_size = msg->block_size;
	if (!msg->has_kfd_digest || msg->kfd_digest.len != sums.kfd.bytes.size())
		fail(-EINVAL, "image %s: the kfd image's digest is missing or not %zu bytes", name.c_str(),
		     sums.kfd.bytes.size());
	std::memcpy(sums.kfd.bytes.data(), msg->kfd_digest.data, sums.kfd.bytes.size());
	std::set<uint32_t> gpus;
	for (size_t i = 0; i < msg->n_pages; i++) {
		const AmdgpuPagesSums &m = *msg->pages[i];
		if (!m.has_gpu_id || !gpus.insert(m.gpu_id).second)
			fail(-EINVAL, "image %s: pages sums %zu name %s", name.c_str(), i,
			     m.has_gpu_id ? strprintf("GPU 0x%04x a second time", m.gpu_id).c_str() : "no GPU");
		const size_t blocks = m.has_kinds ? m.kinds.len : 0;
		if (!m.has_digests || m.digests.len != blocks * Digest {}.bytes.size())
			fail(-EINVAL, "image %s: GPU 0x%04x has %zu block kinds but %zu digest bytes", name.c_str(),
			     m.gpu_id, blocks, m.has_digests ? m.digests.len : 0);
		PagesSums p;
		p.gpu_id = m.gpu_id;
		p.stored_size = m.stored_size;
		p.bo_sizes.assign(m.bo_sizes, m.bo_sizes + m.n_bo_sizes);
		uint64_t grid_blocks = 0;
		for (const uint64_t size : p.bo_sizes) {
			if (!size || size > kMaxSummedBo)
				fail(-EINVAL, "image %s: GPU 0x%04x has a BO of %llu bytes", name.c_str(), m.gpu_id,
				     static_cast<unsigned long long>(size));
			grid_blocks += (size + kSumBlock - 1) / kSumBlock;
		}
		if (grid_blocks != blocks)
			fail(-EINVAL, "image %s: GPU 0x%04x has %zu block kinds, but its %zu BOs make %llu blocks",
			     name.c_str(), m.gpu_id, blocks, p.bo_sizes.size(),
			     static_cast<unsigned long long>(grid_blocks));
		p.blocks.resize(blocks);
		for (size_t b = 0; b < blocks; b++) {
			const uint8_t kind = m.kinds.data[b];
			if (kind != kKindData && kind != kKindZero && kind != kKindInChain)
				fail(-EINVAL,
				     "image %s: GPU 0x%04x block %zu has kind %u, which this plugin does not know",
				     name.c_str(), m.gpu_id, b + 1, kind);
			p.blocks[b].zero = kind == kKindZero;
			if (kind == kKindInChain) {
				p.in_chain.resize(blocks);
				p.in_chain[b] = true;
			}
			std::memcpy(p.blocks[b].digest.bytes.data(),
				    m.digests.data + b * p.blocks[b].digest.bytes.size(),
				    p.blocks[b].digest.bytes.size());
		}
		if (p.stored_bytes() != p.stored_size)
			fail(-EINVAL, "image %s: GPU 0x%04x's pages image holds %llu bytes, but its blocks make %llu",
			     name.c_str(), m.gpu_id, static_cast<unsigned long long>(p.stored_size),
			     static_cast<unsigned long long>(p.stored_bytes()));
		sums.pages.push_back(std::move(p));
	}
	return sums;
}

void write_image_sums(const ImageDir &dir, uint32_t id, const ImageSums &sums)
{
	write_image(dir, sums_image_name(id), pack_image_sums(sums));
}

std::optional<ImageSums> read_image_sums(const ImageDir &dir, uint32_t id)
{
	const std::string name = sums_image_name(id);
	auto reader = ImageReader::open_if_exists(dir, name, kMaxSumsImageSize);
	if (!reader)
		return std::nullopt;
	return unpack_image_sums(read_payload(*reader), name);
}

void check_bo_sizes(const PagesSums &dumped, std::span<const uint64_t> bo_sizes, const std::string &image)
{
	if (!std::equal(bo_sizes.begin(), bo_sizes.end(), dumped.bo_sizes.begin(), dumped.bo_sizes.end()))
		fail(-EBADMSG,
		     "image %s of GPU 0x%04x is refused: the kfd image gives it %zu BOs, but its checksums were made "
		     "for %zu BOs of other sizes",
		     image.c_str(), dumped.gpu_id, bo_sizes.size(), dumped.bo_sizes.size());
}

void check_pages_sums(const PagesSums &dumped, std::span<const BlockSum> restored, std::span<const uint64_t> bo_sizes,
		      std::span<const uint64_t> addrs, const std::string &image)
{
	check_bo_sizes(dumped, bo_sizes, image);
	const std::vector<BlockPlace> grid = block_grid(bo_sizes);
	if (restored.size() != grid.size())
		fail(-EBADMSG, "image %s of GPU 0x%04x: %zu blocks were read of the %zu its BOs make", image.c_str(),
		     dumped.gpu_id, restored.size(), grid.size());
	for (size_t i = 0; i < grid.size(); i++) {
		if (dumped.blocks[i] == restored[i])
			continue;
		const BlockPlace &at = grid[i];
		const auto what = [](const BlockSum &b) { return b.zero ? std::string("all zeros") : b.digest.hex(); };
		fail(-EBADMSG,
		     "image %s is damaged: GPU 0x%04x, the BO at 0x%llx, bytes 0x%llx..0x%llx (block %zu of %zu%s) "
		     "read back as %s where the dump summed %s; the restore is refused",
		     image.c_str(), dumped.gpu_id,
		     static_cast<unsigned long long>(at.bo < addrs.size() ? addrs[at.bo] : 0),
		     static_cast<unsigned long long>(at.bo_offset),
		     static_cast<unsigned long long>(at.bo_offset + at.len), i + 1, grid.size(),
		     dumped.block_in_chain(i) ? ", read from an earlier checkpoint" : "", what(restored[i]).c_str(),
		     what(dumped.blocks[i]).c_str());
	}
}

void check_kfd_digest(const ImageSums &sums, std::span<const uint8_t> payload, const std::string &kfd_image,
		      const std::string &sums_image)
{
	const Digest got = digest_of(payload);
	if (got != sums.kfd)
		fail(-EBADMSG,
		     "image %s is damaged: its %zu payload bytes hash to %s, where %s says %s; the restore is "
		     "refused",
		     kfd_image.c_str(), payload.size(), got.hex().c_str(), sums_image.c_str(), sums.kfd.hex().c_str());
}

} // namespace amdgpu
