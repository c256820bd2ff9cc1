/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gpucts_p2p: userspace interface of the gpucts companion module.
 *
 * The module exposes the GPUDirect RDMA kernel API (nvidia_p2p_*, gpudirect
 * §4.3, Tegra variants §4.4.2) through the misc character device
 * GPUCTS_P2P_DEVICE_PATH so that a conformance harness can pin GPU memory,
 * read the page table, DMA-map it for a peer PCI device, map it for CPU
 * access and observe revocation (the free callback, gpudirect §2.3/§3.4).
 *
 * Conventions (all structures):
 *  - only __u32/__u64/__u8 fields, naturally aligned, no implicit padding;
 *  - fields marked "in" are read, "out" are written back on success only;
 *    "out" fields are ignored on input;
 *  - fields named pad* must be zero on input, otherwise -EINVAL;
 *  - user pointers are passed as __u64;
 *  - unknown flag bits give -EINVAL.
 *
 * Argument checks happen in this order, so the errno is exact:
 *   1. unknown ioctl number                          -ENOTTY
 *   2. copy_from_user/copy_to_user fails             -EFAULT
 *   3. non-zero pad, unknown flags, bad sizes        -EINVAL
 *   4. handle not known to this open file            -ENOENT
 *   5. caller is not the process that pinned         -EACCES
 *   6. handle revoked by the free callback           -ESTALE
 *   7. operation-specific errors (listed per ioctl)
 *
 * Handles are per open file: a handle is only valid on the file descriptor
 * that created it (-ENOENT on any other).  A process that inherits the
 * descriptor (fork) gets -EACCES: put_pages must be called from the process
 * that called get_pages (gpudirect §3.3), and the module applies the same
 * rule to every handle operation.
 *
 * Closing the last reference to the file releases every handle still held
 * (nvidia_p2p_put_pages / put_pages_persistent, or nothing for revoked ones).
 * A CPU mapping keeps the file open, so the release happens at munmap.
 */
#ifndef _UAPI_GPUCTS_P2P_H
#define _UAPI_GPUCTS_P2P_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define GPUCTS_P2P_DEVICE_PATH		"/dev/gpucts"

/* Interface version: a major bump breaks compatibility, a minor adds calls. */
#define GPUCTS_P2P_VERSION_MAJOR	1
#define GPUCTS_P2P_VERSION_MINOR	4

/* Which nvidia_p2p_* signatures the module was built against. */
#define GPUCTS_P2P_FLAVOUR_DESKTOP	0	/* gpudirect §4.3 */
#define GPUCTS_P2P_FLAVOUR_TEGRA	1	/* gpudirect §4.4.2 */

/* gpucts_p2p_version.caps */
/* built with NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API (desktop only) */
#define GPUCTS_P2P_CAP_PERSISTENT	(1U << 0)
/* the caller has CAP_SYS_ADMIN and may read physical/DMA addresses */
#define GPUCTS_P2P_CAP_ADDRESSES	(1U << 1)
/* (minor 2) a peer with a DMA engine is bound: QEMU's edu device, PCI
 * GPUCTS_P2P_PEER_VENDOR:GPUCTS_P2P_PEER_DEVICE; PEER_DMA drives it
 */
#define GPUCTS_P2P_CAP_PEER_DMA		(1U << 2)

/*
 * GPUCTS_P2P_IOC_GET_VERSION: never fails except -EFAULT.
 * Call it first and refuse to run when major differs from the header's.
 */
struct gpucts_p2p_version {
	__u32 major;		/* out: GPUCTS_P2P_VERSION_MAJOR of the module */
	__u32 minor;		/* out */
	__u32 flavour;		/* out: GPUCTS_P2P_FLAVOUR_* */
	__u32 caps;		/* out: GPUCTS_P2P_CAP_* */
	__u64 pin_align;	/* out: 65536 (desktop, §3.2) or 4096 (Tegra, §4.4.3) */
};

/* gpucts_p2p_pin.flags */
/* nvidia_p2p_get_pages_persistent: no callback, survives the free (§1.10) */
#define GPUCTS_P2P_PIN_PERSISTENT	(1U << 0)
/* pass va/length to the provider unrounded, to observe its alignment check */
#define GPUCTS_P2P_PIN_EXACT		(1U << 1)
/* (minor 2) call get_pages with a NULL free callback, to observe the driver
 * refusing it (gpudirect §1.10); a driver that accepts it gets the pages
 * back at once with put_pages and the ioctl answers -EPROTO
 */
#define GPUCTS_P2P_PIN_NO_CALLBACK	(1U << 2)
#define GPUCTS_P2P_PIN_FLAGS		(GPUCTS_P2P_PIN_PERSISTENT | \
					 GPUCTS_P2P_PIN_EXACT | \
					 GPUCTS_P2P_PIN_NO_CALLBACK)

/*
 * GPUCTS_P2P_IOC_PIN: nvidia_p2p_get_pages (with the module's free callback)
 * or nvidia_p2p_get_pages_persistent.  Unless GPUCTS_P2P_PIN_EXACT, the start
 * is rounded down and the end rounded up to pin_align (gpudirect §3.2, §3.5).
 *
 * Errors:
 *  -EINVAL   length is 0; va + length overflows; unknown flags; non-zero
 *            pad; tokens non-zero on Tegra (the Tegra API has none);
 *            NO_CALLBACK with PERSISTENT
 *  -EOPNOTSUPP  PERSISTENT on a module without the persistent API (Tegra)
 *  -ENOSPC   too many handles
 *  -ENOMEM   the module could not allocate its bookkeeping; or the pinned
 *            range (in CPU pages) would take the process's pinned memory
 *            beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK (the pages are
 *            charged as RDMA's ib_umem_get charges them, to mm->pinned_vm,
 *            and uncharged at unpin, revocation or release)
 *  any error returned by the provider's get_pages, unchanged (e.g. -EINVAL
 *  for a range it does not map or an unaligned EXACT range, or for a NULL
 *  callback (NO_CALLBACK, §1.10), -ENOMEM)
 *  -EPROTO   NO_CALLBACK and the driver accepted the NULL callback
 *
 * A page table whose version fails NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE
 * still yields a handle (so PAGE_TABLE can report the version), but no other
 * field of it is read: mmap and DMA_MAP of such a handle give -EPROTO.
 */
struct gpucts_p2p_pin {
	__u64 va;		/* in: GPU virtual address */
	__u64 length;		/* in: bytes */
	__u64 p2p_token;	/* in: desktop token, 0 since CUDA 6.0 (§2.6) */
	__u32 va_space_token;	/* in: desktop token, 0 since CUDA 6.0 (§2.6) */
	__u32 flags;		/* in: GPUCTS_P2P_PIN_* */
	__u64 handle;		/* out: non-zero */
	__u64 pinned_va;	/* out: start passed to get_pages */
	__u64 pinned_length;	/* out: length passed to get_pages */
	__u64 mmap_offset;	/* out: mmap offset giving CPU access to the pages */
};

/* gpucts_p2p_unpin.result */
/* put_pages / put_pages_persistent released the pages; no callback ran */
#define GPUCTS_P2P_UNPIN_PUT		1
/* the free callback had already revoked the pages: put_pages not called (§3.4) */
#define GPUCTS_P2P_UNPIN_REVOKED	2
/* the callback ran while this unpin was in progress (a race with a free, or
 * Tegra, where put_pages always fires it, §4.4.3)
 */
#define GPUCTS_P2P_UNPIN_REVOKED_DURING	3

/*
 * GPUCTS_P2P_IOC_UNPIN: release a handle.  Unpinning a revoked handle is
 * defined: it returns 0 with result GPUCTS_P2P_UNPIN_REVOKED and frees the
 * handle; the same handle afterwards gives -ENOENT.
 *
 * Errors: -EINVAL (pad), -ENOENT, -EACCES.  A failing put_pages is not an
 * error of the ioctl (the handle is gone either way): its value is in put_ret.
 */
struct gpucts_p2p_unpin {
	__u64 handle;		/* in */
	__u32 result;		/* out: GPUCTS_P2P_UNPIN_* */
	__u32 callbacks;	/* out: times the free callback ran for the handle */
	__s32 put_ret;		/* out: put_pages return value, 0 if not called */
	__u32 pad;		/* in: zero */
};

/*
 * GPUCTS_P2P_IOC_PAGE_TABLE: describe the page table of a handle.
 * When addrs_ptr is non-zero, up to addrs_count physical addresses of the
 * pages (nvidia_p2p_page.physical_address) are copied there; this needs
 * CAP_SYS_ADMIN.  entries always says how many there are.
 *
 * Errors: -EINVAL (pad), -ENOENT, -EACCES, -ESTALE,
 *         -EPERM (addrs_ptr without CAP_SYS_ADMIN), -EFAULT (addrs_ptr).
 * For an incompatible version only version and compatible are filled in.
 */
struct gpucts_p2p_page_table {
	__u64 handle;		/* in */
	__u64 addrs_ptr;	/* in: __u64 array in user memory, or 0 */
	__u32 addrs_count;	/* in: capacity of addrs_ptr */
	__u32 version;		/* out: nvidia_p2p_page_table.version */
	__u32 compatible;	/* out: NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE */
	__u32 page_size_type;	/* out: enum nvidia_p2p_page_size_type */
	__u64 page_size;	/* out: bytes */
	__u32 entries;		/* out */
	__u32 pad;		/* in: zero */
	__u8  gpu_uuid[16];	/* out: the GPU's UUID */
};

/*
 * GPUCTS_P2P_IOC_DMA_MAP: nvidia_p2p_dma_map_pages for the peer PCI device
 * domain:bus:devfn (devfn = slot << 3 | function).  One mapping per handle.
 * direction is used by the Tegra signature only (0 bidirectional, 1 to the
 * device, 2 from the device).  addrs_ptr as for PAGE_TABLE (DMA addresses).
 *
 * Errors, in this order: -EINVAL (pad, direction > 2, bus > 255,
 *         devfn > 255), -ENOENT, -EACCES, -ESTALE, -EPERM (addrs_ptr without
 *         CAP_SYS_ADMIN), -EPROTO (incompatible page table), -ENODEV (no such
 *         PCI device), -EBUSY (already mapped), the provider's error
 *         unchanged, -EPROTO (minor 3: the mapping's version fails
 *         NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE: no other field of it
 *         is read and it is unmapped again), -EFAULT (addrs_ptr; the
 *         mapping stays, DMA_UNMAP it).
 */
struct gpucts_p2p_dma_map {
	__u64 handle;		/* in */
	__u32 pci_domain;	/* in */
	__u32 pci_bus;		/* in */
	__u32 pci_devfn;	/* in */
	__u32 direction;	/* in: Tegra only */
	__u64 addrs_ptr;	/* in: __u64 array in user memory, or 0 */
	__u32 addrs_count;	/* in */
	__u32 version;		/* out: nvidia_p2p_dma_mapping.version */
	__u32 compatible;	/* out: NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE */
	__u32 page_size_type;	/* out */
	__u32 entries;		/* out */
	__u32 pad;		/* in: zero */
};

/*
 * GPUCTS_P2P_IOC_DMA_UNMAP: nvidia_p2p_dma_unmap_pages.
 * Errors: -ENOENT, -EACCES, -ESTALE (revoked: the callback freed the
 *         mapping), -EINVAL (no mapping on the handle), or the provider's
 *         error (the mapping is forgotten either way).
 */
struct gpucts_p2p_dma_unmap {
	__u64 handle;		/* in */
};

/* gpucts_p2p_events.state */
#define GPUCTS_P2P_STATE_PINNED		1
#define GPUCTS_P2P_STATE_REVOKED	2	/* the free callback ran */

/* gpucts_p2p_events.flags (besides the GPUCTS_P2P_PIN_* it was made with) */
#define GPUCTS_P2P_EV_INCOMPATIBLE	(1U << 8)  /* page table version refused */
#define GPUCTS_P2P_EV_DMA_MAPPED	(1U << 9)
/* (minor 3) the free callback found the first pinned word as it was at pin
 * time: the driver had not unmapped the pages yet (gpudirect §2.3).  Only
 * where the pages are RAM the module can read (the test provider); never
 * set for BAR memory.
 */
#define GPUCTS_P2P_EV_CB_SAW_PAGES	(1U << 10)
/* (minor 4) the page table is flagged NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
 * (major 2): CPU mappings are cacheable, not write-combined
 */
#define GPUCTS_P2P_EV_CPU_CACHEABLE	(1U << 11)

/*
 * GPUCTS_P2P_IOC_EVENTS: what happened to a handle; works on revoked handles
 * so a test can observe revocation.  Errors: -ENOENT, -EACCES.
 */
struct gpucts_p2p_events {
	__u64 handle;		/* in */
	__u32 state;		/* out: GPUCTS_P2P_STATE_* */
	__u32 callbacks;	/* out: times the free callback ran */
	__u32 flags;		/* out */
	__u32 zaps;		/* out: times CPU mappings were torn down */
};

/*
 * mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_SHARED, fd, pin.mmap_offset):
 * CPU access to the pinned pages (BAR1 on a discrete GPU, as gdrcopy does).
 * len may not exceed pinned_length.  Mappings are not inherited by fork.
 * Revocation (callback or unpin) tears the mapping down: later accesses
 * raise SIGBUS.
 * Errors: -EINVAL (offset not a handle's mmap_offset, len too big, private
 *         mapping), -ENOENT, -EACCES, -ESTALE, -EPROTO.
 */

/*
 * GPUCTS_P2P_IOC_STATS (minor 1): handles alive in the whole module, from a
 * successful PIN until the handle is released (UNPIN, or the close/munmap
 * that drops the file).  A harness checks it returns to its value before a
 * test, so no pin is left behind.  Never fails except -EFAULT.
 */
struct gpucts_p2p_stats {
	__u32 handles;		/* out */
	__u32 stray_callbacks;	/* out (minor 3; zero before): free callbacks
				 * for a registration that had already ended
				 * (after put_pages returned, or a second
				 * time), ignored without touching it
				 */
};

/*
 * GPUCTS_P2P_IOC_PEER_DMA (minor 2): the peer's DMA engine copies between
 * its own buffer and memory, the way a NIC does RDMA to GPU memory.  The
 * peer is QEMU's edu device (docs/specs/edu.txt: a 4096-byte buffer, a
 * 28-bit DMA mask), bound by the module; a handle must be DMA_MAPped for it.
 *
 * Without PEER_DMA_RAW the engine is given the bus address that the
 * handle's nvidia_p2p_dma_mapping holds for pinned byte `offset`, and the
 * transfer runs while the handle is in use, so the free callback waits for
 * it (gpudirect §2.3) and a revoked handle never reaches the engine (ESTALE).
 * With PEER_DMA_RAW (CAP_SYS_ADMIN, handle 0) `offset` is a bus address
 * given to the engine as is: a peer that kept an address after it was
 * revoked.  The module logs it ("gpucts_p2p: raw peer DMA ... bus address
 * 0x..."), so an IOMMU fault it causes can be told from an unexpected one.
 *
 * Errors, in this order: -EINVAL (pad, unknown flags, length 0,
 *         peer_offset + length >= GPUCTS_P2P_PEER_BUF_SIZE, RAW with a
 *         handle), -EPERM (RAW without CAP_SYS_ADMIN), -ENOENT, -EACCES,
 *         -ESTALE, -ENODEV (no peer bound, or the handle has no DMA mapping
 *         for it), -EPROTO (incompatible DMA mapping), -ERANGE (the bytes
 *         leave the pinned range or one page-table entry, or the bus
 *         addresses exceed the peer's DMA mask), -ETIMEDOUT (the engine did
 *         not finish; it is not used again), -EIO (an engine that timed out).
 * The last byte of the buffer is never used: QEMU 7.2's edu refuses a
 * transfer that ends at the buffer's end.
 */
#define GPUCTS_P2P_PEER_VENDOR		0x1234
#define GPUCTS_P2P_PEER_DEVICE		0x11e8
#define GPUCTS_P2P_PEER_BUF_SIZE	4096
/* gpucts_p2p_peer_dma.flags */
/* peer buffer -> memory (the peer writes); otherwise memory -> peer buffer */
#define GPUCTS_P2P_PEER_DMA_TO_MEM	(1U << 0)
#define GPUCTS_P2P_PEER_DMA_RAW		(1U << 1)
#define GPUCTS_P2P_PEER_DMA_FLAGS	(GPUCTS_P2P_PEER_DMA_TO_MEM | \
					 GPUCTS_P2P_PEER_DMA_RAW)

struct gpucts_p2p_peer_dma {
	__u64 handle;		/* in: 0 with PEER_DMA_RAW */
	__u64 offset;		/* in: byte in the pinned range; RAW: bus address */
	__u32 length;		/* in: bytes */
	__u32 peer_offset;	/* in: byte in the peer's buffer */
	__u32 flags;		/* in: GPUCTS_P2P_PEER_DMA_* */
	__u32 pad;		/* in: zero */
	__u64 bus_addr;		/* out: the address the engine was given */
};

#define GPUCTS_P2P_IOC_MAGIC		'G'
#define GPUCTS_P2P_IOC_GET_VERSION	_IOR(GPUCTS_P2P_IOC_MAGIC, 0x00, struct gpucts_p2p_version)
#define GPUCTS_P2P_IOC_PIN		_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x01, struct gpucts_p2p_pin)
#define GPUCTS_P2P_IOC_UNPIN		_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x02, struct gpucts_p2p_unpin)
#define GPUCTS_P2P_IOC_PAGE_TABLE	_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x03, struct gpucts_p2p_page_table)
#define GPUCTS_P2P_IOC_DMA_MAP		_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x04, struct gpucts_p2p_dma_map)
#define GPUCTS_P2P_IOC_DMA_UNMAP	_IOW(GPUCTS_P2P_IOC_MAGIC, 0x05, struct gpucts_p2p_dma_unmap)
#define GPUCTS_P2P_IOC_EVENTS		_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x06, struct gpucts_p2p_events)
#define GPUCTS_P2P_IOC_STATS		_IOR(GPUCTS_P2P_IOC_MAGIC, 0x07, struct gpucts_p2p_stats)
#define GPUCTS_P2P_IOC_PEER_DMA		_IOWR(GPUCTS_P2P_IOC_MAGIC, 0x08, struct gpucts_p2p_peer_dma)

/*
 * Resulting numbers (x86_64, arm64) and structure sizes, for bindings that
 * do not run the C preprocessor; a binding should assert the sizes:
 *   GET_VERSION 0x80184700 (24)   PIN        0xc0404701 (64)
 *   UNPIN       0xc0184702 (24)   PAGE_TABLE 0xc0404703 (64)
 *   DMA_MAP     0xc0384704 (56)   DMA_UNMAP  0x40084705 (8)
 *   EVENTS      0xc0184706 (24)   STATS      0x80084707 (8)
 *   PEER_DMA    0xc0284708 (40)
 */

#endif /* _UAPI_GPUCTS_P2P_H */
