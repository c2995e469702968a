/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the two HIP workloads (hip_workload.c, in C; hip_kernel_workload.cpp, in C++ built by
 * hipcc) share at set-up: a failed HIP call named with its values and HIP's error, and the HIP
 * device of a topology GPU node. Header-only, so that each compiler builds its own copy. Include
 * after workload.h (hip_kernel_workload.cpp includes that one as C).
 */
#ifndef E2E_HIP_DEVICE_H
#define E2E_HIP_DEVICE_H

#include <hip/hip_runtime_api.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/* A HIP call at set-up failed: names the call with its values and HIP's error; WL_EXIT_SETUP. */
static int hip_setup_failed(hipError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int hip_setup_failed(hipError_t e, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	wl_err("%s: %s", what, hipGetErrorString(e));
	return WL_EXIT_SETUP;
}

#define HIP_SETUP_CHECK(call, ...)                                                                                     \
	do {                                                                                                           \
		hipError_t e_ = (call);                                                                                \
		if (e_ != hipSuccess)                                                                                  \
			return hip_setup_failed(e_, __VA_ARGS__);                                                      \
	} while (0)

/* What hip_find_device tells of the device it found */
struct hip_device {
	int *dev;
	char *pci; /* as HIP reports it: hipDeviceGetPCIBusId */
	size_t pci_size;
	char *arch;
	size_t arch_size;
	char *name;
	size_t name_size;
};

/*
 * The HIP device of GPU node @node, among @devices, those @taken skipped: the one at the PCI
 * domain, bus and device the topology gives the node (KFD's location_id is bus << 8 | device << 3
 * | function). HIP numbers devices in ROCr's agent order, which need not be the topology's.
 * 0, or WL_EXIT_SETUP with a message that lists every device's address.
 */
static int hip_find_device(const struct wl_gpu_node *node, int devices, const bool *taken, const struct hip_device *out)
{
	const unsigned int bus = node->location_id >> 8 & 0xff, slot = node->location_id >> 3 & 0x1f;
	char seen[512] = "";
	size_t at = 0;

	for (int d = 0; d < devices; d++) {
		hipDeviceProp_t prop;

		HIP_SETUP_CHECK(hipGetDeviceProperties(&prop, d), "hipGetDeviceProperties(%d)", d);
		if (at < sizeof(seen))
			at += (size_t)snprintf(seen + at, sizeof(seen) - at, "%s%d: %04x:%02x:%02x", d ? ", " : "", d,
					       prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
		if (taken[d] || (unsigned int)prop.pciDomainID != node->domain || (unsigned int)prop.pciBusID != bus ||
		    (unsigned int)prop.pciDeviceID != slot)
			continue;
		*out->dev = d;
		snprintf(out->arch, out->arch_size, "%s", prop.gcnArchName);
		snprintf(out->name, out->name_size, "%s", prop.name);
		HIP_SETUP_CHECK(hipDeviceGetPCIBusId(out->pci, (int)out->pci_size, d), "hipDeviceGetPCIBusId(%d)", d);
		return 0;
	}
	wl_err("GPU node %u (gpu_id 0x%x) is at PCI %04x:%02x:%02x; no HIP device is (%s)", node->node, node->gpu_id,
	       node->domain, bus, slot, seen);
	return WL_EXIT_SETUP;
}

#endif
