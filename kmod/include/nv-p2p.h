/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The nvidia_p2p_* kernel API as declared in gpudirect §4.3 (desktop) and
 * §4.4.2 (Tegra, selected with GPUCTS_TEGRA).  Written for gpucts; both the
 * companion module and the test provider include it.  On a real rig, build
 * with NV_P2P_INCLUDE=<dir holding the driver's own nv-p2p.h> to use
 * NVIDIA's header instead (see README.md).
 *
 * Names, values, structure layouts and prototypes are the ones the open
 * driver's nv-p2p.h has in R515 to R595 (ci/nv-p2p-headers checks them
 * against each release's header).  The page table is major version 2 (R580
 * and later: a flags word after gpu_uuid); major 1 (R515 to R575) is the
 * same layout without that word.
 */
#ifndef GPUCTS_NV_P2P_H
#define GPUCTS_NV_P2P_H

#include <linux/types.h>

struct pci_dev;
struct device;

/*
 * GPUCTS_NV_P2P_FUNCTIONS_ONLY: the prototypes alone, for a file that has the
 * types from NVIDIA's header (kmod/tests/nv_p2p_abi_check.c: a prototype of
 * ours that differs from the release's is then a compile error).
 */
#ifndef GPUCTS_NV_P2P_FUNCTIONS_ONLY

/*
 * Every structure the driver allocates starts with a u32 version: major in
 * the upper half (a layout change that needs a rebuild), minor in the lower
 * half (fields added at the end; older callers keep working).
 */
#define NVIDIA_P2P_MAJOR_VERSION_MASK	0xffff0000
#define NVIDIA_P2P_MINOR_VERSION_MASK	0x0000ffff
#define NVIDIA_P2P_MAJOR_VERSION(v) \
	(((v) & NVIDIA_P2P_MAJOR_VERSION_MASK) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v) \
	((v) & NVIDIA_P2P_MINOR_VERSION_MASK)
/* p->version has the major of v */
#define NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v) \
	(NVIDIA_P2P_MAJOR_VERSION((p)->version) == NVIDIA_P2P_MAJOR_VERSION(v))
/* ... and at least its minor */
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v) \
	(NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v) && \
	 NVIDIA_P2P_MINOR_VERSION((p)->version) >= NVIDIA_P2P_MINOR_VERSION(v))

#define NVIDIA_P2P_GPU_UUID_LEN		16

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
	uint64_t physical_address;
	union nvidia_p2p_request_registers {
		struct {
			uint32_t wreqmb_h;
			uint32_t rreqmb_h;
			uint32_t rreqmb_0;
			uint32_t reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

/* major 2 since R580 (R515-R575: 0x00010002, no flags word) */
#define NVIDIA_P2P_PAGE_TABLE_VERSION	0x00020000
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

/* page_table->flags: the pages may be mapped cacheable for the CPU */
#define NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE	0x1

typedef struct nvidia_p2p_page_table {
	uint32_t version;
	uint32_t page_size;		/* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	uint32_t entries;
	uint8_t *gpu_uuid;
	uint32_t flags;			/* major 2: NVIDIA_P2P_PAGE_TABLE_FLAGS_* */
} nvidia_p2p_page_table_t;

#define NVIDIA_P2P_DMA_MAPPING_VERSION	0x00020003
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_DMA_MAPPING_VERSION)

typedef struct nvidia_p2p_dma_mapping {
	uint32_t version;
	enum nvidia_p2p_page_size_type page_size_type;
	uint32_t entries;
	uint64_t *dma_addresses;
	void *private;			/* the driver's own */
	struct pci_dev *pci_dev;	/* the peer it was mapped for */
} nvidia_p2p_dma_mapping_t;

#endif /* GPUCTS_NV_P2P_FUNCTIONS_ONLY */

#ifndef GPUCTS_TEGRA

/* gpudirect §4.3 */
int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

/* gpudirect §1.10: persistent mappings, no callback (R535 and later) */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API

/* flags of the persistent calls (R570 and later; R535 wants 0) */
#define NVIDIA_P2P_FLAGS_DEFAULT		0
/* BAR1 mappings even on a coherent platform, where the device supports it */
#define NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING	1

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table,
				    uint32_t flags);
int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    uint32_t flags);

#else /* GPUCTS_TEGRA: gpudirect §4.4.2 */

#include <linux/dma-direction.h>

int nvidia_p2p_get_pages(u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct device *dev,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping,
			     enum dma_data_direction direction);
int nvidia_p2p_dma_unmap_pages(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* GPUCTS_TEGRA */

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* GPUCTS_NV_P2P_H */
