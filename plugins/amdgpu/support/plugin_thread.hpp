// SPDX-License-Identifier: GPL-2.0-only
//
// Threads of the plugin's own inside criu. criu handles signals as a single-threaded program: while
// it dumps, its SIGCHLD handler logs into its (unlocked) log and calls exit() when a dumped task
// dies. Taken on one of our threads, that handler would write criu's log beside criu's own thread
// and end the process under it. A thread started here blocks every signal, so they all go to
// criu's thread, as criu expects.
#pragma once

#include <signal.h>

#include <thread>
#include <utility>

namespace amdgpu {

// Blocks every signal in the calling thread while it lives (a new thread inherits the mask).
class AllSignalsBlocked {
public:
	AllSignalsBlocked()
	{
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old_);
	}
	~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
	AllSignalsBlocked(const AllSignalsBlocked &) = delete;
	AllSignalsBlocked &operator=(const AllSignalsBlocked &) = delete;

private:
	sigset_t old_;
};

// std::thread(fn), its thread taking no signal.
template <typename Fn> std::thread plugin_thread(Fn &&fn)
{
	const AllSignalsBlocked blocked;
	return std::thread(std::forward<Fn>(fn));
}

} // namespace amdgpu
