// SPDX-License-Identifier: GPL-2.0-only
//
// A second and third try for the KFD calls that end a dump (UNPAUSE) or a restore (RESUME): if one
// of them fails for good, a task lives on with GPU queues that never run again, so an error that
// may pass (anything but a refusal of the caller or the arguments) is worth 110 ms.
#pragma once

#include <cerrno>
#include <chrono>
#include <thread>

namespace amdgpu {

template <typename Op> int with_transient_retries(Op &&op)
{
	int ret = op();
	for (const int ms : { 10, 100 }) {
		if (!ret || ret == -EINVAL || ret == -EBADF || ret == -EACCES || ret == -EPERM || ret == -ESRCH ||
		    ret == -ENODEV)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
		ret = op();
	}
	return ret;
}

} // namespace amdgpu
