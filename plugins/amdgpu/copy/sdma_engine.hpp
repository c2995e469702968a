// SPDX-License-Identifier: GPL-2.0-only
//
// The copy engine of a GPU on a node: its SDMA engine through libdrm_amdgpu (amdgpu_device.hpp).
// The job's BOs are imported from their dma-bufs when a batch first needs them (while earlier
// batches copy); each staging buffer is registered with the GPU once, with an indirect buffer
// of its own that the batches through it are written to (sdma_packets.hpp).
#pragma once

#include "copy/copy_engine.hpp"

namespace amdgpu {

// Opens each job's GPU through the render fd the job carries.
CopyEngines &sdma_engines();

} // namespace amdgpu
