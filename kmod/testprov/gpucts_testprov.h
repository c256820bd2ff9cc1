/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Control interface of gpucts_testprov, the test provider that exports the
 * nvidia_p2p_* symbols backed by host pages so the companion module can be
 * exercised without NVIDIA hardware.  Same conventions as gpucts_p2p.h.
 *
 * Fake "GPU memory" is owned by the open file that allocated it: closing the
 * file frees it, firing the free callbacks of pins on it, as an exiting CUDA
 * process does (gpudirect §2.3).  Each 64-bit word at GPU VA x initially
 * holds GPUCTS_TESTPROV_PATTERN(x), so CPU mappings can be checked.
 *
 * Ownership (gpudirect §2.6): get_pages with both tokens zero pins only for
 * the process that allocated the memory; another process gets -EINVAL, as
 * the range is not in its VA space.  With tokens, the tokens must be the
 * allocation's (TOKENS), and then any process may pin.
 */
#ifndef _UAPI_GPUCTS_TESTPROV_H
#define _UAPI_GPUCTS_TESTPROV_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define GPUCTS_TESTPROV_DEVICE_PATH	"/dev/gpucts_testprov"
#define GPUCTS_TESTPROV_PATTERN(va)	((__u64)(va) ^ 0x9e3779b97f4a7c15ULL)
#define GPUCTS_TESTPROV_MAX_ALLOC	(64ULL << 20)

/* ALLOC: -EINVAL (0 or > MAX_ALLOC, pad), -ENOMEM */
struct gpucts_testprov_alloc {
	__u64 length;		/* in: rounded up to the GPU page size */
	__u64 va;		/* out: fake GPU virtual address */
	__u8  gpu_uuid[16];	/* out: the UUID page tables will carry */
};

/* FREE: like cuMemFree; fires the callbacks of non-persistent pins.
 * -EINVAL (pad, va not an allocation of this file)
 */
struct gpucts_testprov_free {
	__u64 va;		/* in */
	__u32 callbacks;	/* out: callbacks fired */
	__u32 pad;		/* in: zero */
};

/* A page-table version of a major no driver release has (R515-R575: 1, R580: 2) */
#define GPUCTS_TESTPROV_BAD_PT_VERSION	0x00030000

/* INJECT: replaces the pending injections. */
struct gpucts_testprov_inject {
	__u32 enomem;		/* the next N get_pages fail with -ENOMEM */
	__u32 bad_version;	/* the next N page tables carry
				 * GPUCTS_TESTPROV_BAD_PT_VERSION
				 */
	__u32 put_delay_us;	/* every put_pages sleeps this long before looking
				 * up the pin, widening the window for a free
				 */
	__u32 pad;		/* zero */
};

/* STATS: what the provider holds now. */
struct gpucts_testprov_stats {
	__u32 pins;		/* live page tables (not revoked) */
	__u32 persistent_pins;	/* of which persistent */
	__u32 dma_mappings;	/* live DMA mappings */
	__u32 allocs;		/* allocations still holding host pages */
	__u64 callbacks;	/* free callbacks fired since load */
	__u64 violations;	/* API misuse seen (also printed at unload) */
};

/*
 * MODE: how the provider behaves from now on; all zero is how it loads.
 * -EINVAL (a delay above 100000 us)
 */
struct gpucts_testprov_mode {
	__u32 pt_version;	/* non-zero: the version page tables carry
				 * (NVIDIA_P2P_PAGE_TABLE_VERSION otherwise)
				 */
	__u32 dma_version;	/* non-zero: the version DMA mappings carry
				 * (NVIDIA_P2P_DMA_MAPPING_VERSION otherwise)
				 */
	__u32 get_delay_us;	/* get_pages sleeps this long between finding
				 * the allocation and registering the pin,
				 * the provider's lock dropped, so a free can
				 * come in between
				 */
	__u32 stray_callbacks;	/* the next N released registrations get
				 * their callback once more, at the next
				 * get_pages, after put_pages returned (what
				 * drivers before R560 could do)
				 */
};

/*
 * TOKENS: the allocation's tokens, as cuPointerGetAttribute(
 * CU_POINTER_ATTRIBUTE_P2P_TOKENS) gives them (gpudirect §2.6): the same for
 * every allocation of one open file (the "context"), p2p_token random.
 * -EINVAL (pad, va not an allocation of this file)
 */
struct gpucts_testprov_tokens {
	__u64 va;		/* in */
	__u64 p2p_token;	/* out */
	__u32 va_space_token;	/* out */
	__u32 pad;		/* in: zero */
};

/*
 * PT_FLAGS: the flags word of the page tables handed out from now on
 * (NVIDIA_P2P_PAGE_TABLE_FLAGS_*; 0 as it loads).  Page tables are major
 * version 2 (NVIDIA_P2P_PAGE_TABLE_VERSION) unless MODE says otherwise.
 * -EINVAL (pad)
 */
struct gpucts_testprov_pt_flags {
	__u32 flags;		/* in */
	__u32 pad;		/* in: zero */
};

#define GPUCTS_TESTPROV_IOC_ALLOC	_IOWR('g', 0x01, struct gpucts_testprov_alloc)
#define GPUCTS_TESTPROV_IOC_FREE	_IOWR('g', 0x02, struct gpucts_testprov_free)
#define GPUCTS_TESTPROV_IOC_INJECT	_IOW('g', 0x03, struct gpucts_testprov_inject)
#define GPUCTS_TESTPROV_IOC_STATS	_IOR('g', 0x04, struct gpucts_testprov_stats)
#define GPUCTS_TESTPROV_IOC_MODE	_IOW('g', 0x05, struct gpucts_testprov_mode)
#define GPUCTS_TESTPROV_IOC_TOKENS	_IOWR('g', 0x06, struct gpucts_testprov_tokens)
#define GPUCTS_TESTPROV_IOC_PT_FLAGS	_IOW('g', 0x07, struct gpucts_testprov_pt_flags)

/* Numbers and sizes: ALLOC 0xc0206701 (32), FREE 0xc0106702 (16),
 * INJECT 0x40106703 (16), STATS 0x80206704 (32), MODE 0x40106705 (16),
 * TOKENS 0xc0186706 (24), PT_FLAGS 0x40086707 (8).
 */

#endif /* _UAPI_GPUCTS_TESTPROV_H */
