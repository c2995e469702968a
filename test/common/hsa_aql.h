/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Publishing AQL packets on an HSA queue, as a runtime's producer does: take a
 * slot with the write index, fill the packet's body, store its first dword
 * (header and setup) last with release semantics, then ring the doorbell with
 * the packet's index.  Shared by the test programs that talk to ROCm's runtime.
 */
#ifndef TEST_COMMON_HSA_AQL_H
#define TEST_COMMON_HSA_AQL_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <stdint.h>
#include <string.h>

#define AQL_PACKET_BYTES 64

/* A header with the barrier bit and system-scope acquire and release fences. */
static inline uint16_t aql_header(hsa_packet_type_t type)
{
	return (uint16_t)(type << HSA_PACKET_HEADER_TYPE | 1 << HSA_PACKET_HEADER_BARRIER |
			  HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
			  HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
}

/*
 * Publishes the 64 bytes at @pkt (its first dword is replaced by @header and
 * @setup) on @q; returns the packet's index.  The caller keeps fewer than a
 * ring of packets outstanding.
 */
static inline uint64_t aql_submit(hsa_queue_t *q, const void *pkt, uint16_t header, uint16_t setup)
{
	uint64_t index = hsa_queue_add_write_index_screlease(q, 1);
	uint8_t *slot = (uint8_t *)q->base_address + (index % q->size) * AQL_PACKET_BYTES;

	memcpy(slot + 4, (const uint8_t *)pkt + 4, AQL_PACKET_BYTES - 4);
	__atomic_store_n((uint32_t *)slot, header | (uint32_t)setup << 16, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)index);
	return index;
}

/* A barrier-AND or barrier-OR packet on up to five dependencies; its index. */
static inline uint64_t aql_submit_barrier(hsa_queue_t *q, hsa_packet_type_t type, const hsa_signal_t *deps,
					  unsigned int n, hsa_signal_t completion)
{
	hsa_barrier_and_packet_t b;

	memset(&b, 0, sizeof(b));
	for (unsigned int i = 0; i < n && i < 5; i++)
		b.dep_signal[i] = deps[i];
	b.completion_signal = completion;
	return aql_submit(q, &b, aql_header(type), 0);
}

/*
 * An AMD barrier-value packet (hsa_ext_amd.h): processing waits until
 * (@sig's value & @mask) compares to @value by @cond; its index.  The vendor
 * format goes where a standard packet has its setup field.
 */
static inline uint64_t aql_submit_barrier_value(hsa_queue_t *q, hsa_signal_t sig, hsa_signal_value_t value,
						hsa_signal_value_t mask, hsa_signal_condition_t cond,
						hsa_signal_t completion)
{
	hsa_amd_barrier_value_packet_t b;

	memset(&b, 0, sizeof(b));
	b.signal = sig;
	b.value = value;
	b.mask = mask;
	b.cond = cond;
	b.completion_signal = completion;
	return aql_submit(q, &b, aql_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC), HSA_AMD_PACKET_TYPE_BARRIER_VALUE);
}

#endif
