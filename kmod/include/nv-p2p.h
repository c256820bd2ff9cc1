/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The nvidia_p2p_* kernel API as declared in gpudirect §4.3 (desktop) and
 * §4.4.2 (Tegra, selected with GPUCTS_TEGRA).  Written from those
 * declarations for gpucts; both the companion module and the test provider
 * include it.  On a real rig, build with NV_P2P_INCLUDE=<dir holding the
 * driver's own nv-p2p.h> to use NVIDIA's header instead (see README.md).
 *
 * The version numbers, the page size enum values and the persistent API
 * signatures are not spelled out by the document; they follow the nv-p2p.h
 * that ships with the driver.
 */
#ifndef GPUCTS_NV_P2P_H
#define GPUCTS_NV_P2P_H

#include <linux/types.h>

struct pci_dev;
struct device;

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

#define NVIDIA_P2P_VERSION_MAJOR(v)	(((v) >> 16) & 0xffff)
#define NVIDIA_P2P_VERSION_MINOR(v)	((v) & 0xffff)
/* same major, and at least the minor this code was written for (§4.3) */
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v) \
	(NVIDIA_P2P_VERSION_MAJOR((p)->version) == NVIDIA_P2P_VERSION_MAJOR(v) && \
	 NVIDIA_P2P_VERSION_MINOR((p)->version) >= NVIDIA_P2P_VERSION_MINOR(v))

#define NVIDIA_P2P_PAGE_TABLE_VERSION	0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

#define NVIDIA_P2P_DMA_MAPPING_VERSION	0x00020003
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_DMA_MAPPING_VERSION)

typedef struct nvidia_p2p_page_table {
	uint32_t version;
	uint32_t page_size;		/* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	uint32_t entries;
	uint8_t *gpu_uuid;
} nvidia_p2p_page_table_t;

typedef struct nvidia_p2p_dma_mapping {
	uint32_t version;
	enum nvidia_p2p_page_size_type page_size_type;
	uint32_t entries;
	uint64_t *dma_addresses;
} nvidia_p2p_dma_mapping_t;

#ifndef GPUCTS_TEGRA

/* gpudirect §4.3 */
int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space_token,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space_token,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

/* gpudirect §1.10: persistent mappings, no callback (R535.14 and later) */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
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
