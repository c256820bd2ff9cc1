// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/include/nv-p2p.h against one release of NVIDIA's own nv-p2p.h, the
 * desktop API (ci/nv-p2p-headers compiles this per release; NVIDIA's header
 * is read in place, never copied into the repository).
 *
 *   cc -std=gnu11 -Wall -Wextra -Wno-type-limits -Werror -DNV_P2P_REAL='"<dir>/nv-p2p.h"' \
 *      nv_p2p_abi_check.c && ./a.out
 *	the layouts (sizeof/offsetof of every structure and field the companion
 *	and the test provider use) and the constants, at compile time; the
 *	version macros on sample values, when run
 *   cc ... -DNV_P2P_ABI_PROTOTYPES -fsyntax-only nv_p2p_abi_check.c
 *	our prototypes declared after the release's: one that differs is a
 *	"conflicting types" error
 *
 * Where releases differ ours follows the newest: the page table is major 2
 * (R580: the flags word) and a major-1 release (R515-R575) must agree on
 * everything before flags, with its version 0x00010002, the oldest the
 * companion reads.  The persistent calls are compared where the release has
 * them (R535 and later), the persistent flags where it defines them (R570).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef NV_P2P_REAL
#error "NV_P2P_REAL: the path of a release's nv-p2p.h"
#endif

#ifdef NV_P2P_ABI_PROTOTYPES

#include NV_P2P_REAL
#define GPUCTS_NV_P2P_FUNCTIONS_ONLY
#include "../include/nv-p2p.h"

int main(void)
{
	return 0;
}

#else /* layouts and constants */

/* the release's names that ours declares too, moved aside */
#define nvidia_p2p_page			real_nvidia_p2p_page
#define nvidia_p2p_page_t		real_nvidia_p2p_page_t
#define nvidia_p2p_request_registers	real_nvidia_p2p_request_registers
#define nvidia_p2p_page_table		real_nvidia_p2p_page_table
#define nvidia_p2p_page_table_t		real_nvidia_p2p_page_table_t
#define nvidia_p2p_dma_mapping		real_nvidia_p2p_dma_mapping
#define nvidia_p2p_dma_mapping_t	real_nvidia_p2p_dma_mapping_t
#define nvidia_p2p_page_size_type	real_nvidia_p2p_page_size_type
#define NVIDIA_P2P_PAGE_SIZE_4KB	REAL_NVIDIA_P2P_PAGE_SIZE_4KB
#define NVIDIA_P2P_PAGE_SIZE_64KB	REAL_NVIDIA_P2P_PAGE_SIZE_64KB
#define NVIDIA_P2P_PAGE_SIZE_128KB	REAL_NVIDIA_P2P_PAGE_SIZE_128KB
#define NVIDIA_P2P_PAGE_SIZE_COUNT	REAL_NVIDIA_P2P_PAGE_SIZE_COUNT
#define nvidia_p2p_get_pages		real_nvidia_p2p_get_pages
#define nvidia_p2p_put_pages		real_nvidia_p2p_put_pages
#define nvidia_p2p_get_pages_persistent	real_nvidia_p2p_get_pages_persistent
#define nvidia_p2p_put_pages_persistent	real_nvidia_p2p_put_pages_persistent
#define nvidia_p2p_dma_map_pages	real_nvidia_p2p_dma_map_pages
#define nvidia_p2p_dma_unmap_pages	real_nvidia_p2p_dma_unmap_pages
#define nvidia_p2p_free_page_table	real_nvidia_p2p_free_page_table
#define nvidia_p2p_free_dma_mapping	real_nvidia_p2p_free_dma_mapping

#include NV_P2P_REAL

/* the release's constants, before its macros go */
static const uint32_t real_pt_version = NVIDIA_P2P_PAGE_TABLE_VERSION;
enum {
	real_pt_major = NVIDIA_P2P_PAGE_TABLE_VERSION >> 16,
	real_dma_version = NVIDIA_P2P_DMA_MAPPING_VERSION,
	real_major_mask = NVIDIA_P2P_MAJOR_VERSION_MASK >> 16,
	real_minor_mask = NVIDIA_P2P_MINOR_VERSION_MASK,
	real_uuid_len = NVIDIA_P2P_GPU_UUID_LEN,
#ifdef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
	real_cpu_cacheable = NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE,
#endif
#ifdef NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
	real_flags_default = NVIDIA_P2P_FLAGS_DEFAULT,
	real_force_bar1 = NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING,
#endif
};
#ifdef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
#define REAL_HAS_PT_FLAGS 1
#else
#define REAL_HAS_PT_FLAGS 0
#endif
#ifdef NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
#define REAL_HAS_BAR1_FLAG 1
#else
#define REAL_HAS_BAR1_FLAG 0
#endif

struct vers {
	uint32_t version;
};

/* the release's version macros, as functions to compare with ours */
static uint32_t real_major(uint32_t v) { return NVIDIA_P2P_MAJOR_VERSION(v); }
static uint32_t real_minor(uint32_t v) { return NVIDIA_P2P_MINOR_VERSION(v); }
static int real_matches(const struct vers *p, uint32_t v)
{
	return NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v);
}

static int real_compatible(const struct vers *p, uint32_t v)
{
	return NVIDIA_P2P_VERSION_COMPATIBLE(p, v);
}

static int real_pt_compatible(const struct vers *p)
{
	return NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p);
}

static int real_dma_compatible(const struct vers *p)
{
	return NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p);
}

#undef NVIDIA_P2P_MAJOR_VERSION_MASK
#undef NVIDIA_P2P_MINOR_VERSION_MASK
#undef NVIDIA_P2P_MAJOR_VERSION
#undef NVIDIA_P2P_MINOR_VERSION
#undef NVIDIA_P2P_MAJOR_VERSION_MATCHES
#undef NVIDIA_P2P_VERSION_COMPATIBLE
#undef NVIDIA_P2P_GPU_UUID_LEN
#undef NVIDIA_P2P_PAGE_TABLE_VERSION
#undef NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE
#undef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
#undef NVIDIA_P2P_DMA_MAPPING_VERSION
#undef NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE
#undef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
#undef NVIDIA_P2P_FLAGS_DEFAULT
#undef NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
#undef nvidia_p2p_page
#undef nvidia_p2p_page_t
#undef nvidia_p2p_request_registers
#undef nvidia_p2p_page_table
#undef nvidia_p2p_page_table_t
#undef nvidia_p2p_dma_mapping
#undef nvidia_p2p_dma_mapping_t
#undef nvidia_p2p_page_size_type
#undef NVIDIA_P2P_PAGE_SIZE_4KB
#undef NVIDIA_P2P_PAGE_SIZE_64KB
#undef NVIDIA_P2P_PAGE_SIZE_128KB
#undef NVIDIA_P2P_PAGE_SIZE_COUNT
#undef nvidia_p2p_get_pages
#undef nvidia_p2p_put_pages
#undef nvidia_p2p_get_pages_persistent
#undef nvidia_p2p_put_pages_persistent
#undef nvidia_p2p_dma_map_pages
#undef nvidia_p2p_dma_unmap_pages
#undef nvidia_p2p_free_page_table
#undef nvidia_p2p_free_dma_mapping

#include "../include/nv-p2p.h"

#define SAME(a, b) _Static_assert((long long)(a) == (long long)(b), #a " == " #b)
#define FIELD(real, ours, f)						\
	SAME(offsetof(real, f), offsetof(ours, f));			\
	SAME(sizeof(((real *)0)->f), sizeof(((ours *)0)->f))

/* constants */
SAME(real_major_mask, NVIDIA_P2P_MAJOR_VERSION_MASK >> 16);
SAME(real_minor_mask, NVIDIA_P2P_MINOR_VERSION_MASK);
SAME(real_uuid_len, NVIDIA_P2P_GPU_UUID_LEN);
SAME(real_dma_version, NVIDIA_P2P_DMA_MAPPING_VERSION);
SAME(REAL_NVIDIA_P2P_PAGE_SIZE_4KB, NVIDIA_P2P_PAGE_SIZE_4KB);
SAME(REAL_NVIDIA_P2P_PAGE_SIZE_64KB, NVIDIA_P2P_PAGE_SIZE_64KB);
SAME(REAL_NVIDIA_P2P_PAGE_SIZE_128KB, NVIDIA_P2P_PAGE_SIZE_128KB);
SAME(REAL_NVIDIA_P2P_PAGE_SIZE_COUNT, NVIDIA_P2P_PAGE_SIZE_COUNT);
SAME(sizeof(enum real_nvidia_p2p_page_size_type), sizeof(enum nvidia_p2p_page_size_type));
#if REAL_HAS_PT_FLAGS
SAME(real_pt_major, 2);
SAME(real_cpu_cacheable, NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE);
#else
SAME(real_pt_major, 1);
#endif
#if REAL_HAS_BAR1_FLAG
SAME(real_flags_default, NVIDIA_P2P_FLAGS_DEFAULT);
SAME(real_force_bar1, NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING);
#endif

/* struct nvidia_p2p_page */
SAME(sizeof(real_nvidia_p2p_page_t), sizeof(nvidia_p2p_page_t));
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, physical_address);
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, registers);
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, registers.fermi.wreqmb_h);
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, registers.fermi.rreqmb_h);
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, registers.fermi.rreqmb_0);
FIELD(real_nvidia_p2p_page_t, nvidia_p2p_page_t, registers.fermi.reserved);

/* struct nvidia_p2p_page_table: major 1 is major 2 without flags */
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, version);
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, page_size);
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, pages);
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, entries);
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, gpu_uuid);
#if REAL_HAS_PT_FLAGS
FIELD(real_nvidia_p2p_page_table_t, nvidia_p2p_page_table_t, flags);
SAME(sizeof(real_nvidia_p2p_page_table_t), sizeof(nvidia_p2p_page_table_t));
#else
SAME(sizeof(real_nvidia_p2p_page_table_t), offsetof(nvidia_p2p_page_table_t, flags));
#endif

/* struct nvidia_p2p_dma_mapping */
SAME(sizeof(real_nvidia_p2p_dma_mapping_t), sizeof(nvidia_p2p_dma_mapping_t));
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, version);
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, page_size_type);
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, entries);
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, dma_addresses);
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, private);
FIELD(real_nvidia_p2p_dma_mapping_t, nvidia_p2p_dma_mapping_t, pci_dev);

/* the version macros give what the release's give, on sample versions */
int main(void)
{
	static const uint32_t vs[] = {
		0, 0x00010001, 0x00010002, 0x00010003, 0x0001ffff, 0x00020000,
		0x00020001, 0x00020002, 0x00020003, 0x00020004, 0x00030000,
		0x00030003, 0xffff0000, 0xffffffff,
	};
	const size_t n = sizeof(vs) / sizeof(vs[0]);
	int bad = 0;
	size_t i, j;

	for (i = 0; i < n; i++) {
		struct vers p = { vs[i] };
		const struct nvidia_p2p_dma_mapping dma = { .version = vs[i] };

		if (real_major(vs[i]) != NVIDIA_P2P_MAJOR_VERSION(vs[i]) ||
		    real_minor(vs[i]) != NVIDIA_P2P_MINOR_VERSION(vs[i]) ||
		    real_dma_compatible(&p) != NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(&dma))
			bad = printf("version macros differ at 0x%08x\n", vs[i]);
		/* ours is 0x00020000; a major-1 release's is 0x00010002 */
		if (real_pt_major == 2) {
			const struct nvidia_p2p_page_table pt = { .version = vs[i] };

			if (real_pt_compatible(&p) != NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(&pt))
				bad = printf("PAGE_TABLE_VERSION_COMPATIBLE differs at 0x%08x\n", vs[i]);
		} else if (real_pt_compatible(&p) != NVIDIA_P2P_VERSION_COMPATIBLE(&p, 0x00010002)) {
			bad = printf("major-1 PAGE_TABLE_VERSION_COMPATIBLE differs at 0x%08x\n", vs[i]);
		}
		for (j = 0; j < n; j++)
			if (real_matches(&p, vs[j]) != NVIDIA_P2P_MAJOR_VERSION_MATCHES(&p, vs[j]) ||
			    real_compatible(&p, vs[j]) != NVIDIA_P2P_VERSION_COMPATIBLE(&p, vs[j]))
				bad = printf("MATCHES/COMPATIBLE differ at 0x%08x, 0x%08x\n",
					     vs[i], vs[j]);
	}
	if (real_pt_major == 1 && real_pt_version != 0x00010002)
		bad = printf("page table version 0x%08x\n", real_pt_version);
	if (real_pt_major == 2 && real_pt_version != NVIDIA_P2P_PAGE_TABLE_VERSION)
		bad = printf("page table version 0x%08x\n", real_pt_version);
	return bad ? 1 : 0;
}

#endif /* NV_P2P_ABI_PROTOTYPES */
