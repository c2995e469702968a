// SPDX-License-Identifier: GPL-2.0-only
#include "copy/bo_transfer.hpp"

#include "support/error.hpp"
#include "images/image_store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

// Through criu's image streamer the GPUs take turns at their pages image, in gpu_id order. When
// the first in line fails, the others are cancelled: criu must hear of the GPU that failed, not of
// one that was only stopped (whatever their order among the jobs).
TEST(BoTransfer, CriuHearsTheGpuThatFailedNotOneThatWasCancelled)
{
	test::TempDir dir;
	const ImageDir streamed =
		ImageDir::streamed(dir.fd(), ImageDir::Stream::capture, [](const std::string &name, bool) {
			return name == pages_image_name(7, 0x1000) ? -ENOSPC : -EIO;
		});
	std::vector<GpuCopyJob> jobs(2);
	jobs[0].image_gpu_id = jobs[0].gpu_id = 0x2000; // second in line: cancelled
	jobs[1].image_gpu_id = jobs[1].gpu_id = 0x1000; // first in line: fails
	try {
		copy_bo_contents(CopyDirection::to_image, jobs, streamed, 7, 1 << 20);
		FAIL() << "the copy succeeded";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -ENOSPC) << e.what();
		EXPECT_NE(std::string(e.what()).find(pages_image_name(7, 0x1000)), std::string::npos) << e.what();
	}
}

} // namespace
} // namespace amdgpu
