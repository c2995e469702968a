// SPDX-License-Identifier: GPL-2.0-only
#pragma once

#include <sys/types.h>
#include <unistd.h>

namespace amdgpu::test {

// A child that only sleeps: a stand-in for a GPU task, holding the files this process had open
// when it forked. The caller kills and reaps it.
inline pid_t sleeping_child()
{
	const pid_t child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	return child;
}

} // namespace amdgpu::test
