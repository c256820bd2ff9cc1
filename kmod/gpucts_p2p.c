// SPDX-License-Identifier: GPL-2.0
/*
 * gpucts_p2p: companion module of the gpucts conformance harness.
 *
 * Exposes the GPUDirect RDMA kernel API (nvidia_p2p_*, gpudirect §4.3, or
 * the Tegra signatures of §4.4.2 when built with TEGRA=1) through the misc
 * device /dev/gpucts; the interface is include/uapi/gpucts_p2p.h.
 *
 * Lifetime of a pin (struct gp_pin), reference counted:
 *  - one reference for the handle table of the file (dropped by UNPIN/close);
 *  - one for the registration with the driver, dropped either after a
 *    put_pages that no callback raced, or by the free callback itself;
 *  - one per CPU mapping (vma) and one per ioctl in progress.
 *
 * Locking rules, all because of gpudirect §2.3 (the driver calls the free
 * callback under its own locks, so the callback may only wait for things
 * that never wait for the driver):
 *  - pin->lock is never held across a call into the driver;
 *  - code reading the page table or using the DMA mapping holds a "user"
 *    count; the callback marks the pin revoked (no new users), tears the CPU
 *    mappings down, waits for the users to leave, then frees the DMA mapping
 *    and the page table with nvidia_p2p_free_dma_mapping/free_page_table and
 *    never calls put_pages (§3.4);
 *  - UNPIN takes the handle out of the table first (so only one thread can
 *    release it), tears the mappings down, and calls put_pages holding no
 *    user count; if the callback ran meanwhile (a free racing the unpin, the
 *    race that crashed R515-R535 drivers, §1.10; or always on Tegra, §4.4.3)
 *    the callback owns the page table and UNPIN waits for it to finish.
 *
 * The peer: the module binds QEMU's edu device (PCI 1234:11e8) as a DMA
 * peer standing in for a NIC.  PEER_DMA drives its DMA engine with the bus
 * addresses nvidia_p2p_dma_map_pages returned, as a user of the pin (so the
 * callback waits for the transfer) and under pin->dma_lock (so DMA_UNMAP
 * cannot unmap under it).  Lock order: pin->dma_lock, gp_edu.lock,
 * pin->lock.
 *
 * The driver should not run the callback after put_pages has returned (the
 * fixed behaviour since R535.14, §1.10), but drivers before R560 could call
 * it for a registration that had ended (nvidia-peermem logs "detected
 * invalid context").  So the callback's data is not the pin but a
 * registration number, looked up in gp_regs: a callback for a number no
 * longer there touches nothing and is counted (STATS.stray_callbacks).
 *
 * Who may pin: /dev/gpucts is created with mode dev_mode (0660 by default,
 * so root's group unless a udev rule names another), and with dev_gid set
 * open() also requires membership of that group (or CAP_DAC_OVERRIDE).
 * Pinned pages are charged to the pinning process's mm->pinned_vm against
 * RLIMIT_MEMLOCK, exactly as RDMA's ib_umem_get does (CAP_IPC_LOCK
 * bypasses the limit; beyond it PIN fails with ENOMEM, ib_umem's and
 * mlock(2)'s errno); the charge goes when the pages go back: at put_pages,
 * in the free callback, or when the pin is released, once (pin->charged).
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/kref.h>
#include <linux/xarray.h>
#include <linux/idr.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/wait.h>
#include <linux/completion.h>
#include <linux/capability.h>
#include <linux/pci.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/dma-mapping.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/highmem.h>
#include <linux/ioport.h>

#include "nv-p2p.h"
#include "gpucts_p2p.h"

#ifdef GPUCTS_TEGRA
#define GP_FLAVOUR	GPUCTS_P2P_FLAVOUR_TEGRA
#define GP_ALIGN	(4ULL << 10)	/* gpudirect §4.4.3 */
#else
#define GP_FLAVOUR	GPUCTS_P2P_FLAVOUR_DESKTOP
#define GP_ALIGN	(64ULL << 10)	/* gpudirect §3.2 */
#endif

/* mmap offset of a handle: handle << 40, so that every pin has its own
 * range of the device's address space and tearing one down spares others
 */
#define GP_MMAP_SHIFT	40
#define GP_MMAP_PGSHIFT	(GP_MMAP_SHIFT - PAGE_SHIFT)
#define GP_MAX_HANDLE	((1U << 20) - 1)

enum gp_state {
	GP_PINNED,	/* usable */
	GP_REVOKED,	/* the free callback ran */
	GP_UNPINNING,	/* UNPIN or close in progress */
	GP_RELEASED,	/* unpinned */
};

struct gp_pin {
	struct kref ref;
	u32 handle;
	u32 reg;		/* registration number, the callback's data */
	u32 flags;		/* GPUCTS_P2P_PIN_* */
	struct pid *owner;	/* thread group that pinned */
	u64 va, len;		/* as passed to get_pages */
	struct address_space *mapping;
	struct mm_struct *mm;	/* charged (mmgrab'd), or NULL */
	atomic64_t charged;	/* pages charged to mm->pinned_vm */

	struct mutex dma_lock;	/* PEER_DMA against DMA_UNMAP */
	struct mutex lock;	/* the fields below */
	enum gp_state state;
	bool cb_ran;
	bool compatible;
	bool cpu_cacheable;	/* the table says NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE */
	bool dma_busy;		/* DMA_MAP in progress */
	bool probe_ok;		/* probe holds the first pinned word */
	bool cb_saw_pages;	/* the callback read the same word */
	u64 probe;
	u32 callbacks;
	u32 zaps;
	struct nvidia_p2p_page_table *pt;
	struct nvidia_p2p_dma_mapping *dma;
	struct pci_dev *peer;

	atomic_t users;
	atomic_t vmas;
	wait_queue_head_t users_wq;
	struct completion cb_done;
};

struct gp_file {
	struct xarray pins;	/* handle -> struct gp_pin */
	struct address_space *mapping;
};

/* QEMU's edu device (docs/specs/edu.txt), the DMA peer */
#define GP_EDU_ID		0x00
#define GP_EDU_DMA_SRC		0x80
#define GP_EDU_DMA_DST		0x88
#define GP_EDU_DMA_CNT		0x90
#define GP_EDU_DMA_CMD		0x98
#define GP_EDU_CMD_RUN		0x1
#define GP_EDU_CMD_TO_RAM	0x2	/* edu buffer -> bus address */
#define GP_EDU_BUF		0x40000	/* the buffer in edu's address space */
#define GP_EDU_DMA_BITS		28	/* edu's default dma_mask */
#define GP_EDU_TIMEOUT_MS	2000	/* a transfer takes 100 ms of guest time */

static struct {
	struct mutex lock;	/* the engine: one transfer at a time */
	struct pci_dev *pdev;	/* bound device, or NULL */
	void __iomem *regs;
	bool wedged;		/* a transfer never finished */
} gp_edu = { .lock = __MUTEX_INITIALIZER(gp_edu.lock) };

static ushort dev_mode = 0660;
module_param(dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "permission bits of /dev/gpucts (default 0660)");

static int dev_gid = -1;
module_param(dev_gid, int, 0444);
MODULE_PARM_DESC(dev_gid,
		 "group that may open /dev/gpucts besides CAP_DAC_OVERRIDE (default -1: the node's mode alone decides)");

static DEFINE_IDA(gp_ida);
/* registration number -> pin, while the driver may call the callback */
static DEFINE_XARRAY_ALLOC1(gp_regs);
static u32 gp_reg_next;
static atomic_t gp_stray_callbacks = ATOMIC_INIT(0);
/* handles alive in the module (GPUCTS_P2P_IOC_STATS): from PIN to release */
static atomic_t gp_live_handles = ATOMIC_INIT(0);

/*
 * Charge the pin's pages to the caller's locked-memory limit, as ib_umem_get
 * does: mm->pinned_vm against RLIMIT_MEMLOCK unless CAP_IPC_LOCK.
 */
static int gp_charge(struct gp_pin *pin)
{
	struct mm_struct *mm = current->mm;
	u64 npages = (pin->len >> PAGE_SHIFT) + !!(pin->len & ~PAGE_MASK);
	u64 limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned;

	if (!mm)
		return -EINVAL;
	if (npages > S64_MAX / 2)
		return -ENOMEM;
	pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if ((u64)pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	pin->mm = mm;
	atomic64_set(&pin->charged, npages);
	return 0;
}

/* Give the charge back; the first caller does, later ones find nothing. */
static void gp_uncharge(struct gp_pin *pin)
{
	s64 npages = atomic64_xchg(&pin->charged, 0);

	if (npages)
		atomic64_sub(npages, &pin->mm->pinned_vm);
}

static void gp_pin_release(struct kref *ref)
{
	struct gp_pin *pin = container_of(ref, struct gp_pin, ref);

	if (pin->mm) {
		gp_uncharge(pin);
		mmdrop(pin->mm);
	}
	put_pid(pin->owner);
	ida_free(&gp_ida, pin->handle);
	kfree(pin);
	atomic_dec(&gp_live_handles);
}

static void gp_pin_put(struct gp_pin *pin)
{
	kref_put(&pin->ref, gp_pin_release);
}

static bool gp_is_owner(const struct gp_pin *pin)
{
	return task_tgid(current) == pin->owner;
}

static u64 gp_page_bytes(u32 type)
{
	switch (type) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4ULL << 10;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 64ULL << 10;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 128ULL << 10;
	default:
		return 0;
	}
}

/* Become a user of the page table; fails once the pin is revoked/released. */
static int gp_get_user(struct gp_pin *pin)
{
	int ret = 0;

	mutex_lock(&pin->lock);
	if (pin->state == GP_PINNED)
		atomic_inc(&pin->users);
	else
		ret = pin->cb_ran ? -ESTALE : -ENOENT;
	mutex_unlock(&pin->lock);
	return ret;
}

static void gp_put_user(struct gp_pin *pin)
{
	if (atomic_dec_and_test(&pin->users))
		wake_up_all(&pin->users_wq);
}

/* Tear down every CPU mapping of the pin; later accesses fault to SIGBUS. */
static void gp_zap(struct gp_pin *pin)
{
	if (!atomic_read(&pin->vmas))
		return;
	unmap_mapping_range(pin->mapping, (loff_t)pin->handle << GP_MMAP_SHIFT,
			    round_up(pin->len, PAGE_SIZE), 1);
	mutex_lock(&pin->lock);
	pin->zaps++;
	mutex_unlock(&pin->lock);
}

/*
 * The page-table majors this module reads (gpudirect §4.3: check the version
 * before any other field): 1 from 0x00010002 (R515-R575) and, when the header
 * has the flags word (NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE), 2 (R580 and
 * later), whose layout is major 1's followed by flags.  Any other major is
 * refused: its layout is unknown here.
 */
#define GP_PT_VERSION_MAJOR1	0x00010002
#define GP_PT_VERSION_MAJOR2	0x00020000

static bool gp_pt_compatible(const struct nvidia_p2p_page_table *pt)
{
	if (NVIDIA_P2P_VERSION_COMPATIBLE(pt, GP_PT_VERSION_MAJOR1))
		return true;
#ifdef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
	if (NVIDIA_P2P_VERSION_COMPATIBLE(pt, GP_PT_VERSION_MAJOR2))
		return true;
#endif
	return false;
}

/* A compatible table's CPU_CACHEABLE flag; a major-1 table has no flags word. */
static bool gp_pt_cpu_cacheable(const struct nvidia_p2p_page_table *pt)
{
#ifdef NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE
	return NVIDIA_P2P_MAJOR_VERSION(pt->version) == 2 &&
	       (pt->flags & NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE);
#else
	return false;
#endif
}

/*
 * The first pinned word, where the page is RAM the kernel maps (the test
 * provider's pages); false for BAR memory, which is never read here.
 */
static bool gp_probe_word(const struct nvidia_p2p_page_table *pt, u64 *word)
{
	unsigned long pfn;
	void *va;

	if (!pt || !pt->entries || !pt->pages || !pt->pages[0])
		return false;
	pfn = PHYS_PFN(pt->pages[0]->physical_address);
	if (!pfn_valid(pfn) || !page_is_ram(pfn))
		return false;
	va = kmap_local_page(pfn_to_page(pfn));
	*word = READ_ONCE(*(u64 *)(va + offset_in_page(pt->pages[0]->physical_address)));
	kunmap_local(va);
	return true;
}

/* The registration's end: later callbacks for it find nothing. */
static void gp_end_registration(struct gp_pin *pin)
{
	xa_erase(&gp_regs, pin->reg);
}

/* gpudirect §2.3, §3.4: runs when the driver revokes the pages. */
static void gp_free_callback(void *data)
{
	unsigned long reg = (unsigned long)data;
	struct nvidia_p2p_dma_mapping *dma;
	struct nvidia_p2p_page_table *pt;
	struct pci_dev *peer;
	struct gp_pin *pin;
	bool ok, probe_ok;
	u64 word, probe;
	int ret;

	xa_lock(&gp_regs);
	pin = xa_load(&gp_regs, reg);
	if (pin && !kref_get_unless_zero(&pin->ref))
		pin = NULL;
	xa_unlock(&gp_regs);
	if (!pin) {
		/* an ended registration: its pin may be gone, touch nothing */
		atomic_inc(&gp_stray_callbacks);
		pr_warn_ratelimited("gpucts_p2p: free callback for ended registration %lu ignored\n",
				    reg);
		return;
	}

	mutex_lock(&pin->lock);
	pin->callbacks++;
	if (pin->cb_ran) {
		/* a driver may revoke a registration once only */
		mutex_unlock(&pin->lock);
		atomic_inc(&gp_stray_callbacks);
		pr_err("gpucts_p2p: handle %u: free callback ran twice\n",
		       pin->handle);
		gp_pin_put(pin);
		return;
	}
	pin->cb_ran = true;
	if (pin->state == GP_PINNED)
		pin->state = GP_REVOKED;
	pt = pin->pt;
	probe_ok = pin->probe_ok;
	probe = pin->probe;
	mutex_unlock(&pin->lock);

	/* §2.3: the driver unmaps only after we return: the pages are still there */
	ok = probe_ok && gp_probe_word(pt, &word) && word == probe;
	mutex_lock(&pin->lock);
	pin->cb_saw_pages = ok;
	mutex_unlock(&pin->lock);

	gp_zap(pin);
	/* wait for pending users of the pages (the "pending transfers") */
	wait_event(pin->users_wq, atomic_read(&pin->users) == 0);

	mutex_lock(&pin->lock);
	dma = pin->dma;
	peer = pin->peer;
	pt = pin->pt;
	pin->dma = NULL;
	pin->peer = NULL;
	pin->pt = NULL;
	mutex_unlock(&pin->lock);

	if (dma) {
		ret = nvidia_p2p_free_dma_mapping(dma);
		if (ret)
			pr_err("gpucts_p2p: handle %u: free_dma_mapping: %d\n",
			       pin->handle, ret);
	}
	pci_dev_put(peer);
	if (pt) {
		ret = nvidia_p2p_free_page_table(pt);
		if (ret)
			pr_err("gpucts_p2p: handle %u: free_page_table: %d\n",
			       pin->handle, ret);
	}
	gp_uncharge(pin);	/* the pages went back to the driver */
	gp_end_registration(pin);
	complete_all(&pin->cb_done);
	gp_pin_put(pin);	/* the registration reference */
	gp_pin_put(pin);	/* the lookup's */
}

static int gp_dma_unmap(struct gp_pin *pin, struct pci_dev *peer,
			struct nvidia_p2p_page_table *pt,
			struct nvidia_p2p_dma_mapping *dma)
{
#ifdef GPUCTS_TEGRA
	return nvidia_p2p_dma_unmap_pages(dma);
#else
	return nvidia_p2p_dma_unmap_pages(peer, pt, dma);
#endif
}

/*
 * Release a pin that the caller has taken out of the handle table (the
 * table's reference is passed in and dropped here).
 */
static void gp_unpin(struct gp_pin *pin, struct gpucts_p2p_unpin *out)
{
	struct nvidia_p2p_dma_mapping *dma = NULL;
	struct nvidia_p2p_page_table *pt;
	struct pci_dev *peer = NULL;
	bool __maybe_unused persistent = pin->flags & GPUCTS_P2P_PIN_PERSISTENT;
	bool revoked;
	int ret = 0;

	out->put_ret = 0;
	mutex_lock(&pin->lock);
	revoked = pin->cb_ran;
	pin->state = GP_UNPINNING;
	mutex_unlock(&pin->lock);
	if (revoked) {
		out->result = GPUCTS_P2P_UNPIN_REVOKED;
		goto wait_cb;
	}

	gp_zap(pin);
	wait_event(pin->users_wq, atomic_read(&pin->users) == 0);

	/* unmap for the peer first, as a user so the callback waits for us */
	mutex_lock(&pin->lock);
	if (!pin->cb_ran && pin->dma) {
		dma = pin->dma;
		peer = pin->peer;
		pin->dma = NULL;
		pin->peer = NULL;
		atomic_inc(&pin->users);
	}
	pt = pin->pt;
	mutex_unlock(&pin->lock);
	if (dma) {
		ret = gp_dma_unmap(pin, peer, pt, dma);
		if (ret)
			pr_err("gpucts_p2p: handle %u: dma_unmap_pages: %d\n",
			       pin->handle, ret);
		pci_dev_put(peer);
		gp_put_user(pin);
	}

	mutex_lock(&pin->lock);
	revoked = pin->cb_ran;
	pt = pin->pt;
	mutex_unlock(&pin->lock);
	if (!revoked) {
#ifdef GPUCTS_TEGRA
		ret = nvidia_p2p_put_pages(pt);
#else
#ifdef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
		if (persistent)
			ret = nvidia_p2p_put_pages_persistent(pin->va, pt, 0);
		else
#endif
			ret = nvidia_p2p_put_pages(0, 0, pin->va, pt);
#endif
		out->put_ret = ret;
		mutex_lock(&pin->lock);
		revoked = pin->cb_ran;
		if (!revoked)
			pin->pt = NULL;	/* put_pages freed it */
		mutex_unlock(&pin->lock);
		if (ret && !revoked)
			pr_err("gpucts_p2p: handle %u: put_pages: %d\n",
			       pin->handle, ret);
	}
	if (!revoked) {
		out->result = GPUCTS_P2P_UNPIN_PUT;
		gp_end_registration(pin);
		gp_pin_put(pin);	/* the registration reference */
	} else {
		out->result = GPUCTS_P2P_UNPIN_REVOKED_DURING;
	}

wait_cb:
	/* after UNPIN the callback has finished: nothing touches the file */
	if (revoked)
		wait_for_completion(&pin->cb_done);
	/* put_pages returned (or the callback freed the pages) */
	gp_uncharge(pin);
	mutex_lock(&pin->lock);
	pin->state = GP_RELEASED;
	out->callbacks = pin->callbacks;
	mutex_unlock(&pin->lock);
	gp_pin_put(pin);	/* the handle table's reference */
}

/* Look up a handle of this file and check the caller pinned it. */
static struct gp_pin *gp_lookup(struct gp_file *gf, u64 handle)
{
	struct gp_pin *pin;

	if (!handle || handle > GP_MAX_HANDLE)
		return ERR_PTR(-ENOENT);
	xa_lock(&gf->pins);
	pin = xa_load(&gf->pins, handle);
	if (pin)
		kref_get(&pin->ref);
	xa_unlock(&gf->pins);
	if (!pin)
		return ERR_PTR(-ENOENT);
	if (!gp_is_owner(pin)) {
		gp_pin_put(pin);
		return ERR_PTR(-EACCES);
	}
	return pin;
}

static long gp_ioc_version(void __user *argp)
{
	struct gpucts_p2p_version v = {
		.major = GPUCTS_P2P_VERSION_MAJOR,
		.minor = GPUCTS_P2P_VERSION_MINOR,
		.flavour = GP_FLAVOUR,
		.pin_align = GP_ALIGN,
	};

#if defined(NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API) && !defined(GPUCTS_TEGRA)
	v.caps |= GPUCTS_P2P_CAP_PERSISTENT;
#endif
	if (capable(CAP_SYS_ADMIN))
		v.caps |= GPUCTS_P2P_CAP_ADDRESSES;
	mutex_lock(&gp_edu.lock);
	if (gp_edu.pdev && !gp_edu.wedged)
		v.caps |= GPUCTS_P2P_CAP_PEER_DMA;
	mutex_unlock(&gp_edu.lock);
	return copy_to_user(argp, &v, sizeof(v)) ? -EFAULT : 0;
}

/*
 * gpudirect §1.10: get_pages no longer accepts a NULL callback.  Ask with
 * one; a driver that accepts it could never revoke the pin, so the pages go
 * straight back and the caller learns it from -EPROTO.
 */
static long gp_pin_no_callback(const struct gpucts_p2p_pin *arg, u64 va, u64 len)
{
	struct nvidia_p2p_page_table *pt = NULL;
	int ret;

#ifdef GPUCTS_TEGRA
	ret = nvidia_p2p_get_pages(va, len, &pt, NULL, NULL);
#else
	ret = nvidia_p2p_get_pages(arg->p2p_token, arg->va_space_token, va, len,
				   &pt, NULL, NULL);
#endif
	if (ret)
		return ret;
#ifdef GPUCTS_TEGRA
	ret = nvidia_p2p_put_pages(pt);
#else
	ret = nvidia_p2p_put_pages(arg->p2p_token, arg->va_space_token, va, pt);
#endif
	if (ret)
		pr_err("gpucts_p2p: put_pages of a NULL-callback pin: %d\n", ret);
	return -EPROTO;
}

static long gp_ioc_pin(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_pin arg;
	struct gp_pin *pin;
	u64 start, end;
	int ret, id;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~GPUCTS_P2P_PIN_FLAGS)
		return -EINVAL;
	if ((arg.flags & GPUCTS_P2P_PIN_NO_CALLBACK) &&
	    (arg.flags & GPUCTS_P2P_PIN_PERSISTENT))
		return -EINVAL;
	if (!arg.length || arg.va + arg.length < arg.va)
		return -EINVAL;
#ifdef GPUCTS_TEGRA
	if (arg.p2p_token || arg.va_space_token)
		return -EINVAL;		/* the Tegra API has no tokens */
	if (arg.flags & GPUCTS_P2P_PIN_PERSISTENT)
		return -EOPNOTSUPP;
#elif !defined(NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API)
	if (arg.flags & GPUCTS_P2P_PIN_PERSISTENT)
		return -EOPNOTSUPP;
#endif
	start = arg.va;
	end = arg.va + arg.length;
	if (!(arg.flags & GPUCTS_P2P_PIN_EXACT)) {
		/* gpudirect §3.2/§3.5: whole GPU pages */
		if (end > U64_MAX - GP_ALIGN)
			return -EINVAL;
		start = round_down(start, GP_ALIGN);
		end = round_up(end, GP_ALIGN);
	}
	if (arg.flags & GPUCTS_P2P_PIN_NO_CALLBACK)
		return gp_pin_no_callback(&arg, start, end - start);

	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	id = ida_alloc_range(&gp_ida, 1, GP_MAX_HANDLE, GFP_KERNEL);
	if (id < 0) {
		kfree(pin);
		return id;
	}
	atomic_inc(&gp_live_handles);
	kref_init(&pin->ref);		/* the handle table's */
	kref_get(&pin->ref);		/* the registration's */
	pin->handle = id;
	pin->flags = arg.flags;
	pin->owner = get_task_pid(current, PIDTYPE_TGID);
	pin->va = start;
	pin->len = end - start;
	pin->mapping = gf->mapping;
	ret = xa_alloc_cyclic(&gp_regs, &pin->reg, pin, xa_limit_32b,
			      &gp_reg_next, GFP_KERNEL);
	if (ret < 0) {
		ida_free(&gp_ida, id);
		put_pid(pin->owner);
		kfree(pin);
		atomic_dec(&gp_live_handles);
		return ret;
	}
	mutex_init(&pin->dma_lock);
	mutex_init(&pin->lock);
	pin->state = GP_PINNED;
	atomic_set(&pin->users, 0);
	atomic_set(&pin->vmas, 0);
	init_waitqueue_head(&pin->users_wq);
	init_completion(&pin->cb_done);
	atomic64_set(&pin->charged, 0);

	/* before get_pages: the callback may uncharge as soon as it is registered */
	ret = gp_charge(pin);
	if (ret)
		goto err_free;

	/*
	 * The callback may run as soon as the driver has registered the pin,
	 * before get_pages returns; the driver stores pin->pt first.
	 */
#ifdef GPUCTS_TEGRA
	ret = nvidia_p2p_get_pages(pin->va, pin->len, &pin->pt,
				   gp_free_callback, (void *)(unsigned long)pin->reg);
#else
#ifdef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
	if (arg.flags & GPUCTS_P2P_PIN_PERSISTENT)
		ret = nvidia_p2p_get_pages_persistent(pin->va, pin->len,
						      &pin->pt, 0);
	else
#endif
		ret = nvidia_p2p_get_pages(arg.p2p_token, arg.va_space_token,
					   pin->va, pin->len, &pin->pt,
					   gp_free_callback,
					   (void *)(unsigned long)pin->reg);
#endif
	if (ret)
		goto err_free;

	/* gpudirect §4.3: check the version before any other field */
	if (!gp_get_user(pin)) {
		bool ok = gp_pt_compatible(pin->pt);
		bool cacheable = ok && gp_pt_cpu_cacheable(pin->pt);
		u64 word = 0;
		bool probed = ok && gp_probe_word(pin->pt, &word);

		mutex_lock(&pin->lock);
		pin->compatible = ok;
		pin->cpu_cacheable = cacheable;
		pin->probe = word;
		pin->probe_ok = probed;
		mutex_unlock(&pin->lock);
		gp_put_user(pin);
	}

	ret = xa_insert(&gf->pins, id, pin, GFP_KERNEL);
	if (ret) {
		struct gpucts_p2p_unpin out;

		gp_unpin(pin, &out);
		return ret == -EBUSY ? -ENOSPC : ret;
	}

	arg.handle = id;
	arg.pinned_va = pin->va;
	arg.pinned_length = pin->len;
	arg.mmap_offset = (u64)id << GP_MMAP_SHIFT;
	if (copy_to_user(argp, &arg, sizeof(arg))) {
		struct gpucts_p2p_unpin out;

		pin = xa_erase(&gf->pins, id);
		if (pin)
			gp_unpin(pin, &out);
		return -EFAULT;
	}
	return 0;

err_free:
	gp_end_registration(pin);
	if (pin->mm) {
		gp_uncharge(pin);
		mmdrop(pin->mm);
	}
	put_pid(pin->owner);
	ida_free(&gp_ida, id);
	kfree(pin);
	atomic_dec(&gp_live_handles);
	return ret;
}

static long gp_ioc_unpin(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_unpin arg;
	struct gp_pin *pin;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	if (!arg.handle || arg.handle > GP_MAX_HANDLE)
		return -ENOENT;
	/* claim the handle: only one thread gets to release it */
	xa_lock(&gf->pins);
	pin = xa_load(&gf->pins, arg.handle);
	if (!pin) {
		xa_unlock(&gf->pins);
		return -ENOENT;
	}
	if (!gp_is_owner(pin)) {
		xa_unlock(&gf->pins);
		return -EACCES;
	}
	__xa_erase(&gf->pins, arg.handle);
	xa_unlock(&gf->pins);

	gp_unpin(pin, &arg);
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static int gp_copy_addrs(u64 uptr, u32 count, const u64 *addrs_dma,
			 struct nvidia_p2p_page **pages, u32 entries)
{
	u64 __user *dst = u64_to_user_ptr(uptr);
	u32 i, n = min(count, entries);

	for (i = 0; i < n; i++) {
		u64 a = addrs_dma ? addrs_dma[i] : pages[i]->physical_address;

		if (put_user(a, dst + i))
			return -EFAULT;
	}
	return 0;
}

static long gp_ioc_page_table(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_page_table arg;
	struct nvidia_p2p_page_table *pt;
	struct gp_pin *pin;
	long ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	pin = gp_lookup(gf, arg.handle);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	ret = gp_get_user(pin);
	if (ret)
		goto out_put;
	ret = -EPERM;	/* physical addresses are for the administrator only */
	if (arg.addrs_ptr && !capable(CAP_SYS_ADMIN))
		goto out_user;

	pt = pin->pt;
	arg.version = pt->version;
	arg.compatible = pin->compatible;
	arg.page_size_type = 0;
	arg.page_size = 0;
	arg.entries = 0;
	memset(arg.gpu_uuid, 0, sizeof(arg.gpu_uuid));
	if (pin->compatible) {
		arg.page_size_type = pt->page_size;
		arg.page_size = gp_page_bytes(pt->page_size);
		arg.entries = pt->entries;
		if (pt->gpu_uuid)
			memcpy(arg.gpu_uuid, pt->gpu_uuid, sizeof(arg.gpu_uuid));
		if (arg.addrs_ptr) {
			ret = gp_copy_addrs(arg.addrs_ptr, arg.addrs_count, NULL,
					    pt->pages, pt->entries);
			if (ret)
				goto out_user;
		}
	}
	ret = copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
out_user:
	gp_put_user(pin);
out_put:
	gp_pin_put(pin);
	return ret;
}

static long gp_ioc_dma_map(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_dma_map arg;
	struct nvidia_p2p_dma_mapping *dma = NULL;
	struct pci_dev *peer;
	struct gp_pin *pin;
	long ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad || arg.direction > 2 || arg.pci_bus > 255 ||
	    arg.pci_devfn > 255)
		return -EINVAL;
	pin = gp_lookup(gf, arg.handle);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	ret = gp_get_user(pin);
	if (ret)
		goto out_put;
	ret = -EPERM;
	if (arg.addrs_ptr && !capable(CAP_SYS_ADMIN))
		goto out_user;
	ret = -EPROTO;
	if (!pin->compatible)
		goto out_user;
	ret = -ENODEV;
	peer = pci_get_domain_bus_and_slot(arg.pci_domain, arg.pci_bus,
					   arg.pci_devfn);
	if (!peer)
		goto out_user;

	mutex_lock(&pin->lock);
	ret = (pin->dma || pin->dma_busy) ? -EBUSY : 0;
	if (!ret)
		pin->dma_busy = true;
	mutex_unlock(&pin->lock);
	if (ret)
		goto out_peer;

#ifdef GPUCTS_TEGRA
	{
		static const enum dma_data_direction dirs[] = {
			DMA_BIDIRECTIONAL, DMA_TO_DEVICE, DMA_FROM_DEVICE
		};

		ret = nvidia_p2p_dma_map_pages(&peer->dev, pin->pt, &dma,
					       dirs[arg.direction]);
	}
#else
	ret = nvidia_p2p_dma_map_pages(peer, pin->pt, &dma);
#endif
	/*
	 * gpudirect §4.3: no other field of a mapping whose version fails the
	 * check may be read; it is given back before anyone can see it.  We
	 * are still a user, so the callback waits for this.
	 */
	if (!ret && !NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(dma)) {
		ret = gp_dma_unmap(pin, peer, pin->pt, dma);
		if (ret)
			pr_err("gpucts_p2p: handle %u: dma_unmap_pages: %d\n",
			       pin->handle, (int)ret);
		ret = -EPROTO;
	}
	mutex_lock(&pin->lock);
	pin->dma_busy = false;
	if (!ret) {
		pin->dma = dma;
		pin->peer = peer;
	}
	mutex_unlock(&pin->lock);
	if (ret)
		goto out_peer;

	/* still a user: the callback cannot free the mapping under us */
	arg.version = dma->version;
	arg.compatible = 1;
	arg.page_size_type = dma->page_size_type;
	arg.entries = dma->entries;
	if (arg.addrs_ptr) {
		ret = gp_copy_addrs(arg.addrs_ptr, arg.addrs_count,
				    dma->dma_addresses, NULL, dma->entries);
		if (ret)
			goto out_user;	/* stays mapped; DMA_UNMAP it */
	}
	ret = copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
	goto out_user;

out_peer:
	pci_dev_put(peer);
out_user:
	gp_put_user(pin);
out_put:
	gp_pin_put(pin);
	return ret;
}

static long gp_ioc_dma_unmap(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_dma_unmap arg;
	struct nvidia_p2p_dma_mapping *dma;
	struct pci_dev *peer;
	struct gp_pin *pin;
	long ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	pin = gp_lookup(gf, arg.handle);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	ret = gp_get_user(pin);
	if (ret)
		goto out_put;
	/* a peer transfer using the mapping finishes first */
	mutex_lock(&pin->dma_lock);
	mutex_lock(&pin->lock);
	dma = pin->dma;
	peer = pin->peer;
	pin->dma = NULL;
	pin->peer = NULL;
	mutex_unlock(&pin->lock);
	ret = -EINVAL;
	if (dma) {
		ret = gp_dma_unmap(pin, peer, pin->pt, dma);
		pci_dev_put(peer);
	}
	mutex_unlock(&pin->dma_lock);
	gp_put_user(pin);
out_put:
	gp_pin_put(pin);
	return ret;
}

static long gp_ioc_events(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_events arg;
	struct gp_pin *pin;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	pin = gp_lookup(gf, arg.handle);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	mutex_lock(&pin->lock);
	arg.state = pin->cb_ran ? GPUCTS_P2P_STATE_REVOKED :
				  GPUCTS_P2P_STATE_PINNED;
	arg.callbacks = pin->callbacks;
	arg.flags = pin->flags;
	if (!pin->compatible)
		arg.flags |= GPUCTS_P2P_EV_INCOMPATIBLE;
	if (pin->dma)
		arg.flags |= GPUCTS_P2P_EV_DMA_MAPPED;
	if (pin->cb_saw_pages)
		arg.flags |= GPUCTS_P2P_EV_CB_SAW_PAGES;
	if (pin->cpu_cacheable)
		arg.flags |= GPUCTS_P2P_EV_CPU_CACHEABLE;
	arg.zaps = pin->zaps;
	mutex_unlock(&pin->lock);
	gp_pin_put(pin);
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static long gp_ioc_stats(void __user *argp)
{
	struct gpucts_p2p_stats st = {
		.handles = (u32)atomic_read(&gp_live_handles),
		.stray_callbacks = (u32)atomic_read(&gp_stray_callbacks),
	};

	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

/* One transfer of edu's engine; gp_edu.lock held, a device bound. */
static int gp_edu_transfer(u64 bus, u32 len, u32 peer_off, bool to_mem)
{
	unsigned long deadline;
	u64 buf = GP_EDU_BUF + peer_off;

	lockdep_assert_held(&gp_edu.lock);
	if (gp_edu.wedged)
		return -EIO;
	writeq(to_mem ? buf : bus, gp_edu.regs + GP_EDU_DMA_SRC);
	writeq(to_mem ? bus : buf, gp_edu.regs + GP_EDU_DMA_DST);
	writeq(len, gp_edu.regs + GP_EDU_DMA_CNT);
	writeq(GP_EDU_CMD_RUN | (to_mem ? GP_EDU_CMD_TO_RAM : 0),
	       gp_edu.regs + GP_EDU_DMA_CMD);
	deadline = jiffies + msecs_to_jiffies(GP_EDU_TIMEOUT_MS);
	while (readq(gp_edu.regs + GP_EDU_DMA_CMD) & GP_EDU_CMD_RUN) {
		if (time_after(jiffies, deadline)) {
			/* it may still touch the address: never reuse it */
			gp_edu.wedged = true;
			return -ETIMEDOUT;
		}
		usleep_range(2000, 4000);
	}
	return 0;
}

/* Whether [bus, bus + len) is addressable by the bound edu device. */
static bool gp_edu_reaches(u64 bus, u32 len)
{
	u64 mask = dma_get_mask(&gp_edu.pdev->dev);

	return bus <= mask && len - 1 <= mask - bus;
}

static long gp_peer_dma_raw(struct gpucts_p2p_peer_dma *arg)
{
	bool to_mem = arg->flags & GPUCTS_P2P_PEER_DMA_TO_MEM;
	long ret;

	mutex_lock(&gp_edu.lock);
	ret = -ENODEV;
	if (!gp_edu.pdev)
		goto out;
	ret = -ERANGE;
	if (!gp_edu_reaches(arg->offset, arg->length))
		goto out;
	pr_notice("gpucts_p2p: raw peer DMA %s bus address 0x%llx, %u bytes\n",
		  to_mem ? "write to" : "read from", arg->offset, arg->length);
	ret = gp_edu_transfer(arg->offset, arg->length, arg->peer_offset, to_mem);
	arg->bus_addr = arg->offset;
out:
	mutex_unlock(&gp_edu.lock);
	return ret;
}

/* The engine on the handle's mapping, as a user of the pin. */
static long gp_peer_dma_pin(struct gp_pin *pin, struct gpucts_p2p_peer_dma *arg)
{
	bool to_mem = arg->flags & GPUCTS_P2P_PEER_DMA_TO_MEM;
	struct nvidia_p2p_dma_mapping *dma;
	struct pci_dev *peer;
	u64 psize, idx, within;
	long ret;

	mutex_lock(&pin->dma_lock);
	mutex_lock(&gp_edu.lock);
	mutex_lock(&pin->lock);
	dma = pin->dma;
	peer = pin->peer;
	mutex_unlock(&pin->lock);
	ret = -ENODEV;
	if (!gp_edu.pdev || !dma || peer != gp_edu.pdev)
		goto out;
	ret = -EPROTO;
	if (!NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(dma))
		goto out;
	ret = -ERANGE;
	psize = gp_page_bytes(dma->page_size_type);
	if (!psize || arg->offset >= pin->len ||
	    arg->length > pin->len - arg->offset)
		goto out;
	idx = div64_u64(arg->offset, psize);
	within = arg->offset - idx * psize;
	if (idx >= dma->entries || arg->length > psize - within)
		goto out;
	arg->bus_addr = dma->dma_addresses[idx] + within;
	if (!gp_edu_reaches(arg->bus_addr, arg->length))
		goto out;
	ret = gp_edu_transfer(arg->bus_addr, arg->length, arg->peer_offset,
			      to_mem);
out:
	mutex_unlock(&gp_edu.lock);
	mutex_unlock(&pin->dma_lock);
	return ret;
}

static long gp_ioc_peer_dma(struct gp_file *gf, void __user *argp)
{
	struct gpucts_p2p_peer_dma arg;
	struct gp_pin *pin;
	long ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad || (arg.flags & ~GPUCTS_P2P_PEER_DMA_FLAGS) || !arg.length ||
	    arg.peer_offset >= GPUCTS_P2P_PEER_BUF_SIZE ||
	    arg.length >= GPUCTS_P2P_PEER_BUF_SIZE - arg.peer_offset)
		return -EINVAL;
	if (arg.flags & GPUCTS_P2P_PEER_DMA_RAW) {
		if (arg.handle)
			return -EINVAL;
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		ret = gp_peer_dma_raw(&arg);
	} else {
		pin = gp_lookup(gf, arg.handle);
		if (IS_ERR(pin))
			return PTR_ERR(pin);
		/* a user: a revoked pin never reaches the engine, and the
		 * callback waits for the transfer (gpudirect §2.3)
		 */
		ret = gp_get_user(pin);
		if (!ret) {
			ret = gp_peer_dma_pin(pin, &arg);
			gp_put_user(pin);
		}
		gp_pin_put(pin);
	}
	if (ret)
		return ret;
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static long gp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gp_file *gf = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case GPUCTS_P2P_IOC_GET_VERSION:
		return gp_ioc_version(argp);
	case GPUCTS_P2P_IOC_PIN:
		return gp_ioc_pin(gf, argp);
	case GPUCTS_P2P_IOC_UNPIN:
		return gp_ioc_unpin(gf, argp);
	case GPUCTS_P2P_IOC_PAGE_TABLE:
		return gp_ioc_page_table(gf, argp);
	case GPUCTS_P2P_IOC_DMA_MAP:
		return gp_ioc_dma_map(gf, argp);
	case GPUCTS_P2P_IOC_DMA_UNMAP:
		return gp_ioc_dma_unmap(gf, argp);
	case GPUCTS_P2P_IOC_EVENTS:
		return gp_ioc_events(gf, argp);
	case GPUCTS_P2P_IOC_STATS:
		return gp_ioc_stats(argp);
	case GPUCTS_P2P_IOC_PEER_DMA:
		return gp_ioc_peer_dma(gf, argp);
	default:
		return -ENOTTY;
	}
}

/* ---- CPU mappings (as gdrcopy's gdrdrv maps BAR1) ---- */

static void gp_vm_open(struct vm_area_struct *vma)
{
	struct gp_pin *pin = vma->vm_private_data;

	kref_get(&pin->ref);
	atomic_inc(&pin->vmas);
}

static void gp_vm_close(struct vm_area_struct *vma)
{
	struct gp_pin *pin = vma->vm_private_data;

	atomic_dec(&pin->vmas);
	gp_pin_put(pin);
}

static vm_fault_t gp_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gp_pin *pin = vma->vm_private_data;
	struct nvidia_p2p_page_table *pt;
	u64 off, psize, idx, phys;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	off = (u64)(vmf->pgoff - ((unsigned long)pin->handle << GP_MMAP_PGSHIFT))
	      << PAGE_SHIFT;
	/* the pages stay valid while the state is PINNED under the lock: the
	 * callback and UNPIN change it first and zap afterwards
	 */
	mutex_lock(&pin->lock);
	pt = pin->pt;
	if (pin->state != GP_PINNED || !pin->compatible || !pt)
		goto out;
	psize = gp_page_bytes(pt->page_size);
	if (!psize || off >= pin->len)
		goto out;
	idx = div64_u64(off, psize);
	if (idx >= pt->entries)
		goto out;
	phys = pt->pages[idx]->physical_address + (off - idx * psize);
	ret = vmf_insert_pfn(vma, vmf->address, phys >> PAGE_SHIFT);
out:
	mutex_unlock(&pin->lock);
	return ret;
}

static const struct vm_operations_struct gp_vm_ops = {
	.open = gp_vm_open,
	.close = gp_vm_close,
	.fault = gp_vm_fault,
};

static int gp_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct gp_file *gf = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	bool __maybe_unused cacheable;
	struct gp_pin *pin;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff & ((1UL << GP_MMAP_PGSHIFT) - 1))
		return -EINVAL;
	pin = gp_lookup(gf, vma->vm_pgoff >> GP_MMAP_PGSHIFT);
	if (IS_ERR(pin))
		return PTR_ERR(pin);
	mutex_lock(&pin->lock);
	if (pin->state != GP_PINNED)
		ret = pin->cb_ran ? -ESTALE : -ENOENT;
	else if (!pin->compatible)
		ret = -EPROTO;
	else if (len > round_up(pin->len, PAGE_SIZE))
		ret = -EINVAL;
	cacheable = pin->cpu_cacheable;
	mutex_unlock(&pin->lock);
	if (ret) {
		gp_pin_put(pin);
		return ret;
	}
	/* populated lazily by gp_vm_fault, so a revocation between here and
	 * the vma becoming visible cannot leave a stale PTE behind
	 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
		     VM_DONTCOPY);
#else
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
			 VM_DONTCOPY;
#endif
#ifndef GPUCTS_TEGRA
	/*
	 * BAR1 is prefetchable: write-combined, like gdrdrv; a table flagged
	 * CPU_CACHEABLE (coherent memory, R580) keeps the cacheable default.
	 */
	if (!cacheable)
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
#endif	/* Tegra: keep the default attributes (gpudirect §4.4.3) */
	vma->vm_private_data = pin;	/* keeps the lookup's reference */
	vma->vm_ops = &gp_vm_ops;
	atomic_inc(&pin->vmas);
	return 0;
}

static int gp_open(struct inode *inode, struct file *file)
{
	struct gp_file *gf;

	/* with dev_gid set, the group decides even if the node's mode is wider */
	if (dev_gid >= 0 && !in_group_p(make_kgid(&init_user_ns, dev_gid)) &&
	    !capable(CAP_DAC_OVERRIDE))
		return -EACCES;
	gf = kzalloc(sizeof(*gf), GFP_KERNEL);
	if (!gf)
		return -ENOMEM;
	xa_init(&gf->pins);
	gf->mapping = file->f_mapping;
	file->private_data = gf;
	return nonseekable_open(inode, file);
}

/* Last reference gone (process exit, close, last munmap): unpin all. */
static int gp_release(struct inode *inode, struct file *file)
{
	struct gp_file *gf = file->private_data;
	struct gpucts_p2p_unpin out;
	struct gp_pin *pin;
	unsigned long idx;

	xa_for_each(&gf->pins, idx, pin) {
		xa_erase(&gf->pins, idx);
		gp_unpin(pin, &out);
	}
	xa_destroy(&gf->pins);
	kfree(gf);
	return 0;
}

static const struct file_operations gp_fops = {
	.owner = THIS_MODULE,
	.open = gp_open,
	.release = gp_release,
	.unlocked_ioctl = gp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = gp_mmap,
	/* no .llseek: NULL is -ESPIPE on every kernel (no_llseek is gone in 6.12) */
};

static struct miscdevice gp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gpucts",
	.fops = &gp_fops,
	/* .mode: dev_mode, set in gp_init */
};

/* ---- the DMA peer: QEMU's edu device ---- */

static int gp_edu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	void __iomem *regs;
	int ret;

	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	ret = pci_request_regions(pdev, "gpucts_p2p");
	if (ret)
		goto err_disable;
	/* edu clamps addresses to 28 bits: the IOMMU must allocate below */
	ret = dma_set_mask_and_coherent(&pdev->dev,
					DMA_BIT_MASK(GP_EDU_DMA_BITS));
	if (ret)
		goto err_release;
	regs = pci_iomap(pdev, 0, 0);
	if (!regs) {
		ret = -ENOMEM;
		goto err_release;
	}
	if ((ioread32(regs + GP_EDU_ID) & 0xff) != 0xed) {
		ret = -ENODEV;
		goto err_unmap;
	}
	mutex_lock(&gp_edu.lock);
	ret = gp_edu.pdev ? -EBUSY : 0;	/* one peer is enough */
	if (!ret) {
		pci_set_master(pdev);
		gp_edu.pdev = pdev;
		gp_edu.regs = regs;
		gp_edu.wedged = false;
	}
	mutex_unlock(&gp_edu.lock);
	if (ret)
		goto err_unmap;
	dev_info(&pdev->dev, "gpucts_p2p: DMA peer, %d-bit DMA mask\n",
		 GP_EDU_DMA_BITS);
	return 0;

err_unmap:
	pci_iounmap(pdev, regs);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
	return ret;
}

static void gp_edu_remove(struct pci_dev *pdev)
{
	void __iomem *regs = NULL;

	mutex_lock(&gp_edu.lock);
	if (gp_edu.pdev == pdev) {
		regs = gp_edu.regs;
		gp_edu.pdev = NULL;
		gp_edu.regs = NULL;
	}
	mutex_unlock(&gp_edu.lock);
	if (!regs)
		return;		/* probe refused it */
	pci_clear_master(pdev);
	pci_iounmap(pdev, regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
}

static const struct pci_device_id gp_edu_ids[] = {
	{ PCI_DEVICE(GPUCTS_P2P_PEER_VENDOR, GPUCTS_P2P_PEER_DEVICE) },
	{ }
};
MODULE_DEVICE_TABLE(pci, gp_edu_ids);

static struct pci_driver gp_edu_driver = {
	.name = "gpucts_p2p",
	.id_table = gp_edu_ids,
	.probe = gp_edu_probe,
	.remove = gp_edu_remove,
};

static int __init gp_init(void)
{
	int ret;

	pr_info("gpucts_p2p: interface %u.%u, %s flavour\n",
		GPUCTS_P2P_VERSION_MAJOR, GPUCTS_P2P_VERSION_MINOR,
		GP_FLAVOUR == GPUCTS_P2P_FLAVOUR_TEGRA ? "tegra" : "desktop");
	if (dev_mode & ~0777) {
		pr_err("gpucts_p2p: dev_mode %#o: permission bits only\n",
		       dev_mode);
		return -EINVAL;
	}
	if (dev_gid >= 0 && !gid_valid(make_kgid(&init_user_ns, dev_gid))) {
		pr_err("gpucts_p2p: dev_gid %d is not a valid group\n", dev_gid);
		return -EINVAL;
	}
	gp_misc.mode = dev_mode;
	ret = pci_register_driver(&gp_edu_driver);
	if (ret)
		return ret;
	ret = misc_register(&gp_misc);
	if (ret)
		pci_unregister_driver(&gp_edu_driver);
	return ret;
}

static void __exit gp_exit(void)
{
	misc_deregister(&gp_misc);
	pci_unregister_driver(&gp_edu_driver);
	ida_destroy(&gp_ida);
	xa_destroy(&gp_regs);
}

module_init(gp_init);
module_exit(gp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpucts companion: nvidia_p2p_* (GPUDirect RDMA) for a conformance harness");
