/* SPDX-License-Identifier: MIT */
/*
 * gpumem: "GPU memory" for a program that drives a GPUDirect consumer module
 * (a NIC, storage or FPGA driver that calls nvidia_p2p_*) in the gpucts VM,
 * where gpucts_testprov stands in for NVIDIA's driver.
 *
 * An allocation is what cuMemAlloc gives a CUDA program: a GPU virtual
 * address that the consumer module pins with nvidia_p2p_get_pages (tokens
 * 0/0: only from the process that allocated it, gpudirect §2.6) or
 * nvidia_p2p_get_pages_persistent.  Freeing it is cuMemFree: it fires the
 * free callback of every non-persistent pin (§2.3).  Each 64-bit word at GPU
 * VA x starts as gpumem_pattern(x), so a CPU or DMA mapping can be checked.
 *
 * The stand-in counts every contract violation of its callers (put_pages
 * from the callback, a callback that returns without free_page_table, ...);
 * gpumem_stats() reads that count, the live pins and the allocations.
 */
#ifndef GPUCTS_GPUMEM_H
#define GPUCTS_GPUMEM_H

#include <stddef.h>
#include <stdint.h>

struct gpumem_stats {
	uint32_t pins;			/* live page tables (not revoked) */
	uint32_t persistent_pins;	/* of which persistent */
	uint32_t dma_mappings;		/* live DMA mappings */
	uint32_t allocs;		/* allocations still holding pages */
	uint64_t callbacks;		/* free callbacks fired since load */
	uint64_t violations;		/* contract violations seen since load */
};

/* The GPU page size of the stand-in's desktop flavour (nvidia_p2p_get_pages
 * pins 64 KiB pages). */
#define GPUMEM_PAGE_SIZE (64u << 10)

/* Every call returns 0 or a negative errno. */
int gpumem_open(void);			/* a "context": returns an fd */
int gpumem_alloc(int ctx, uint64_t len, uint64_t *va);
/* Frees va; *callbacks (may be NULL) gets the free callbacks it fired. */
int gpumem_free(int ctx, uint64_t va, uint32_t *callbacks);
int gpumem_stats(int ctx, struct gpumem_stats *s);
/* The next put_pages calls sleep delay_us first (0: none), widening the
 * window in which a free can race them. */
int gpumem_put_delay(int ctx, uint32_t delay_us);
/* Closing the fd frees what the context still holds, firing callbacks, as
 * an exiting CUDA process does. */
void gpumem_close(int ctx);

uint64_t gpumem_pattern(uint64_t gpu_va);

/* Whether the consumer left the stand-in as `before` found it: no contract
 * violation since, and as many pins (persistent ones among them), DMA mappings
 * and allocations. 0, or -1 with what differs written to why[n] naming `who`. */
int gpumem_clean_since(int ctx, const struct gpumem_stats *before, const char *who,
		       char *why, size_t n);

/* A free on a thread of its own, to race the consumer's own release path:
 * start it, do the racing call, join it; `result` is the free's return. */
struct gpumem_async_free {
	int ctx;
	uint64_t va;
	int result;
	unsigned long thread;	/* pthread_t */
};
int gpumem_free_start(struct gpumem_async_free *f, int ctx, uint64_t va);
int gpumem_free_join(struct gpumem_async_free *f);

#endif
