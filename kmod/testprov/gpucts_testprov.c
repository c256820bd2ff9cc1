// SPDX-License-Identifier: GPL-2.0
/*
 * gpucts_testprov: a stand-in for nvidia.ko's nvidia_p2p_* API (gpudirect
 * §4.3; §4.4.2 with GPUCTS_TEGRA) backed by host pages.
 *
 * Beyond serving pins it checks how its caller uses the API and counts every
 * misuse as a violation: put_pages from inside the callback (§4.3), a
 * callback that returns without nvidia_p2p_free_page_table (§2.3, §3.4),
 * free_page_table/free_dma_mapping outside a callback, DMA mappings left
 * behind.  At unload it prints the pins never released, which the VM runner
 * checks.
 *
 * DMA mappings go through the kernel DMA API for the peer device
 * (dma_map_page per GPU page), so with a translating IOMMU the addresses in
 * nvidia_p2p_dma_mapping are IOVAs of that device, not physical addresses
 * (gpudirect §4.3, dma_map_pages), and unmapping them takes the device's
 * access away.
 *
 * Ownership (gpudirect §2.6): without tokens only the process that allocated
 * the memory (its mm) may pin it, another gets -EINVAL (the range is not in
 * its VA space); with tokens they must be the allocation's, and then the
 * caller is not checked further.
 *
 * The driver unmaps only after the callback returns (gpudirect §2.3): a
 * revoked pin's pages and DMA mappings stay as they are while the callback
 * runs; the pages go back (and are poisoned with page_poison) only after
 * tp_finish_revoke.
 *
 * Revocation model: a revoked pin stays registered (state TP_REVOKING) until
 * its callback has returned, so a put_pages racing the free finds it and
 * waits for the callback instead of touching the freed page table, and no
 * callback can start after put_pages has returned.  Callbacks run with no
 * provider lock held, so they may block (§2.3).
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/dma-mapping.h>

#include "nv-p2p.h"
#include "gpucts_testprov.h"

#ifdef GPUCTS_TEGRA
#define TP_PAGE_SHIFT		12	/* 4 KB, gpudirect §4.4.3 */
#define TP_PAGE_SIZE_TYPE	NVIDIA_P2P_PAGE_SIZE_4KB
#define TP_FLAVOUR		"tegra"
#else
#define TP_PAGE_SHIFT		16	/* 64 KB, gpudirect §3.2 */
#define TP_PAGE_SIZE_TYPE	NVIDIA_P2P_PAGE_SIZE_64KB
#define TP_FLAVOUR		"desktop"
#endif
#define TP_PAGE_SIZE		(1ULL << TP_PAGE_SHIFT)
#define TP_PAGE_ORDER		(TP_PAGE_SHIFT - PAGE_SHIFT)
#define TP_VA_BASE		0x7f1000000000ULL
#define TP_VA_GAP		(2ULL << 20)

/* an open control file: the "CUDA context" its allocations belong to */
struct tp_file {
	u64 p2p_token;			/* random, never 0 */
	u32 va_space_token;
};

struct tp_alloc {
	struct list_head node;
	void *owner;			/* struct file that allocated it */
	struct mm_struct *mm;		/* process that allocated it (mmgrab'd) */
	u64 p2p_token;
	u32 va_space_token;
	u64 va, len;
	unsigned int npages;
	struct page **pages;		/* each TP_PAGE_SIZE, physically contiguous */
	unsigned int refs;		/* 1 while allocated + 1 per pin; tp_lock */
	bool freed;
};

enum tp_pin_state { TP_ACTIVE, TP_REVOKING };

struct tp_pin {
	struct list_head node;		/* tp_pins */
	struct list_head revoke_node;	/* local list of a free in progress */
	struct kref ref;
	struct completion done;		/* callback returned */
	struct tp_alloc *alloc;
	unsigned int first;		/* index of the first pinned page in alloc */
	u64 va, len;
	struct nvidia_p2p_page_table *pt;	/* NULL once freed */
	/*
	 * What free_page_table left of pt: the structure, poisoned, kept
	 * until the pin leaves tp_pins, so that no new page table can get
	 * its address (pt_key) while a put_pages racing the callback may
	 * still look it up.
	 */
	struct nvidia_p2p_page_table *pt_husk;
	unsigned long pt_key;		/* pt as given out; compared, never read */
	void (*cb)(void *data);
	void *data;
	bool persistent;
	enum tp_pin_state state;
	struct task_struct *cb_task;	/* running the callback */
	struct list_head dmas;
};

struct tp_dma {
	struct list_head node;		/* pin->dmas */
	struct nvidia_p2p_dma_mapping m;
	struct tp_pin *pin;
	const void *peer;		/* as the caller passed it */
	struct device *dev;		/* the peer's device, referenced */
	enum dma_data_direction dir;
	unsigned int mapped;		/* entries mapped with dma_map_page */
};

static DEFINE_MUTEX(tp_lock);
static LIST_HEAD(tp_allocs);
static LIST_HEAD(tp_pins);
static u64 tp_next_va = TP_VA_BASE;
static u8 tp_uuid[16];
static u32 tp_inj_enomem, tp_inj_bad_version, tp_put_delay_us;	/* tp_lock */
static struct gpucts_testprov_mode tp_mode;			/* tp_lock */
static u32 tp_pt_flags;	/* the page tables' flags word (PT_FLAGS), tp_lock */
static atomic_t tp_next_va_space = ATOMIC_INIT(0);

/* a callback owed to a registration that has ended (MODE.stray_callbacks) */
struct tp_stray {
	struct list_head node;
	void (*cb)(void *data);
	void *data;
};
static LIST_HEAD(tp_strays);					/* tp_lock */
static atomic64_t tp_callbacks = ATOMIC64_INIT(0);
static atomic64_t tp_violations = ATOMIC64_INIT(0);

static void tp_violation(const char *what)
{
	atomic64_inc(&tp_violations);
	pr_err("gpucts_testprov: API violation: %s (pid %d)\n", what,
	       task_pid_nr(current));
}

static void tp_alloc_put_locked(struct tp_alloc *a)
{
	unsigned int i;

	if (--a->refs)
		return;
	list_del(&a->node);
	if (a->mm)
		mmdrop(a->mm);
	for (i = 0; i < a->npages; i++)
		if (a->pages[i])
			__free_pages(a->pages[i], TP_PAGE_ORDER);
	kvfree(a->pages);
	kfree(a);
}

static void tp_pin_release(struct kref *ref)
{
	kfree(container_of(ref, struct tp_pin, ref));
}

static void tp_free_pt(struct nvidia_p2p_page_table *pt)
{
	if (!pt)
		return;
	if (pt->pages)
		kvfree(pt->pages[0]);
	kvfree(pt->pages);
	kfree(pt);
}

static void tp_dma_unmap_entries(struct tp_dma *d)
{
	unsigned int i;

	for (i = 0; i < d->mapped; i++)
		dma_unmap_page(d->dev, d->m.dma_addresses[i], TP_PAGE_SIZE, d->dir);
	d->mapped = 0;
}

/* Unmaps for the peer before forgetting: the device loses access here. */
static void tp_free_dma(struct tp_dma *d)
{
	list_del(&d->node);
	tp_dma_unmap_entries(d);
	put_device(d->dev);
	kvfree(d->m.dma_addresses);
	kfree(d);
}

static struct tp_pin *tp_find_pin_locked(const void *pt)
{
	struct tp_pin *p;

	list_for_each_entry(p, &tp_pins, node)
		if (p->pt_key == (unsigned long)pt)
			return p;
	return NULL;
}

static struct tp_dma *tp_find_dma_locked(const struct nvidia_p2p_dma_mapping *m)
{
	struct tp_pin *p;
	struct tp_dma *d;

	list_for_each_entry(p, &tp_pins, node)
		list_for_each_entry(d, &p->dmas, node)
			if (&d->m == m)
				return d;
	return NULL;
}

/* MODE.stray_callbacks: remember the ended registration's callback; tp_lock */
static void tp_owe_stray_locked(struct tp_pin *pin)
{
	struct tp_stray *st;

	lockdep_assert_held(&tp_lock);
	if (!tp_mode.stray_callbacks || !pin->cb)
		return;
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return;
	tp_mode.stray_callbacks--;
	st->cb = pin->cb;
	st->data = pin->data;
	list_add_tail(&st->node, &tp_strays);
}

/* Call the callbacks owed to ended registrations, no lock held. */
static void tp_fire_strays(void)
{
	struct tp_stray *st, *tmp;
	LIST_HEAD(fire);

	mutex_lock(&tp_lock);
	list_splice_init(&tp_strays, &fire);
	mutex_unlock(&tp_lock);
	list_for_each_entry_safe(st, tmp, &fire, node) {
		pr_info("gpucts_testprov: callback of an ended registration (injected)\n");
		st->cb(st->data);
		list_del(&st->node);
		kfree(st);
	}
}

/* Called once the callback of a revoked pin returned: check what it did. */
static void tp_finish_revoke(struct tp_pin *pin)
{
	struct tp_dma *d, *tmp;

	mutex_lock(&tp_lock);
	if (pin->pt) {
		tp_violation("callback returned without nvidia_p2p_free_page_table");
		tp_free_pt(pin->pt);
		pin->pt = NULL;
	}
	list_for_each_entry_safe(d, tmp, &pin->dmas, node) {
		tp_violation("callback returned without nvidia_p2p_free_dma_mapping");
		tp_free_dma(d);
	}
	list_del(&pin->node);
	kfree(pin->pt_husk);
	pin->pt_husk = NULL;
	tp_alloc_put_locked(pin->alloc);
	pin->cb_task = NULL;
	tp_owe_stray_locked(pin);
	mutex_unlock(&tp_lock);
	complete_all(&pin->done);
	kref_put(&pin->ref, tp_pin_release);
}

static void tp_run_callback(struct tp_pin *pin)
{
	atomic64_inc(&tp_callbacks);
	pin->cb(pin->data);
	tp_finish_revoke(pin);
}

/*
 * gpudirect §2.6: with tokens they must be the allocation's; without, the
 * caller must be the process that allocated it.
 */
static bool tp_may_pin(const struct tp_alloc *a, u64 p2p_token, u32 va_space_token)
{
	if (p2p_token || va_space_token)
		return p2p_token == a->p2p_token && va_space_token == a->va_space_token;
	return current->mm == a->mm;
}

static int tp_get_pages(u64 va, u64 len, struct nvidia_p2p_page_table **out,
			void (*cb)(void *data), void *data, bool persistent,
			u64 p2p_token, u32 va_space_token)
{
	struct nvidia_p2p_page_table *pt;
	struct nvidia_p2p_page *pages;
	struct tp_alloc *a;
	struct tp_pin *pin;
	unsigned int n, first, i;
	bool bad_version = false;
	u32 version, delay, flags;
	int ret;

	tp_fire_strays();
	if (!out || (!persistent && !cb))	/* no NULL callback, §1.10 */
		return -EINVAL;
	if (!len || len > GPUCTS_TESTPROV_MAX_ALLOC ||
	    ((va | len) & (TP_PAGE_SIZE - 1)) || va + len < va)
		return -EINVAL;

	mutex_lock(&tp_lock);
	if (tp_inj_enomem) {
		tp_inj_enomem--;
		mutex_unlock(&tp_lock);
		return -ENOMEM;
	}
	if (tp_inj_bad_version) {
		tp_inj_bad_version--;
		bad_version = true;
	}
	version = tp_mode.pt_version ? tp_mode.pt_version :
				       NVIDIA_P2P_PAGE_TABLE_VERSION;
	delay = tp_mode.get_delay_us;
	flags = tp_pt_flags;
	mutex_unlock(&tp_lock);

	n = len >> TP_PAGE_SHIFT;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	pt = kzalloc(sizeof(*pt), GFP_KERNEL);
	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL);
	if (pt)
		pt->pages = kvcalloc(n, sizeof(*pt->pages), GFP_KERNEL);
	if (!pin || !pt || !pages || !pt->pages) {
		ret = -ENOMEM;
		goto err_free;
	}

	mutex_lock(&tp_lock);
	ret = -EINVAL;	/* the range is not mapped (what a stale VA gives) */
	list_for_each_entry(a, &tp_allocs, node) {
		if (!a->freed && va >= a->va && va + len <= a->va + a->len) {
			ret = 0;
			break;
		}
	}
	if (!ret && !tp_may_pin(a, p2p_token, va_space_token))
		ret = -EINVAL;	/* not in the caller's VA space, §2.6 */
	if (ret) {
		mutex_unlock(&tp_lock);
		goto err_free;
	}
	if (delay) {
		/*
		 * A free may come now: the allocation is held, not pinned.  If
		 * it was freed meanwhile this get_pages fails and drops its own
		 * reference once, leaving the pages to the free (the double
		 * free of the VA range fixed in the open driver).
		 */
		a->refs++;
		mutex_unlock(&tp_lock);
		usleep_range(delay, delay + 10);
		mutex_lock(&tp_lock);
		if (a->freed) {
			tp_alloc_put_locked(a);	/* ours, once */
			mutex_unlock(&tp_lock);
			ret = -EINVAL;
			goto err_free;
		}
		a->refs--;
	}
	first = (va - a->va) >> TP_PAGE_SHIFT;
	for (i = 0; i < n; i++) {
		pages[i].physical_address = page_to_phys(a->pages[first + i]);
		pt->pages[i] = &pages[i];
	}
	pt->version = bad_version ? GPUCTS_TESTPROV_BAD_PT_VERSION : version;
	pt->page_size = TP_PAGE_SIZE_TYPE;
	pt->entries = n;
	pt->gpu_uuid = tp_uuid;
	pt->flags = flags;

	kref_init(&pin->ref);
	init_completion(&pin->done);
	INIT_LIST_HEAD(&pin->dmas);
	pin->alloc = a;
	pin->first = first;
	a->refs++;
	pin->va = va;
	pin->len = len;
	pin->pt = pt;
	pin->pt_key = (unsigned long)pt;
	pin->cb = cb;
	pin->data = data;
	pin->persistent = persistent;
	pin->state = TP_ACTIVE;
	/* the caller's pointer is set before anyone can revoke the pin */
	*out = pt;
	list_add_tail(&pin->node, &tp_pins);
	mutex_unlock(&tp_lock);
	return 0;

err_free:
	if (pt)
		kvfree(pt->pages);
	kfree(pt);
	kvfree(pages);
	kfree(pin);
	return ret;
}

static int tp_put_pages(u64 va, struct nvidia_p2p_page_table *pt, bool persistent,
			bool check_va)
{
	struct tp_dma __maybe_unused *d, *tmp;
	struct tp_pin *pin;
	u32 delay;

	mutex_lock(&tp_lock);
	delay = tp_put_delay_us;
	mutex_unlock(&tp_lock);
	if (delay)
		usleep_range(delay, delay + 10);

	mutex_lock(&tp_lock);
	pin = tp_find_pin_locked(pt);
	if (!pin || pin->persistent != persistent || (check_va && pin->va != va)) {
		mutex_unlock(&tp_lock);
		return -EINVAL;
	}
	if (pin->state == TP_REVOKING) {
		if (pin->cb_task == current) {
			tp_violation("put_pages called from the free callback");
			mutex_unlock(&tp_lock);
			return -EDEADLK;
		}
		/* racing a free: the callback owns the page table; wait for it */
		kref_get(&pin->ref);
		mutex_unlock(&tp_lock);
		wait_for_completion(&pin->done);
		kref_put(&pin->ref, tp_pin_release);
		return 0;
	}
#ifdef GPUCTS_TEGRA
	/* gpudirect §4.4.3: the callback fires on every put_pages */
	pin->state = TP_REVOKING;
	pin->cb_task = current;
	mutex_unlock(&tp_lock);
	tp_run_callback(pin);
	return 0;
#else
	list_for_each_entry_safe(d, tmp, &pin->dmas, node) {
		tp_violation("put_pages with a DMA mapping still mapped");
		tp_free_dma(d);
	}
	list_del(&pin->node);
	tp_alloc_put_locked(pin->alloc);
	tp_owe_stray_locked(pin);
	mutex_unlock(&tp_lock);
	tp_free_pt(pin->pt);
	kref_put(&pin->ref, tp_pin_release);
	return 0;
#endif
}

static int tp_dma_map(const void *peer, struct device *dev,
		      enum dma_data_direction dir,
		      struct nvidia_p2p_page_table *pt,
		      struct nvidia_p2p_dma_mapping **out)
{
	struct tp_pin *pin;
	struct tp_dma *d;
	unsigned int i;

	if (!peer || !dev || !pt || !out)
		return -EINVAL;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	mutex_lock(&tp_lock);
	pin = tp_find_pin_locked(pt);
	if (!pin || !pin->pt) {
		mutex_unlock(&tp_lock);
		kfree(d);
		return -EINVAL;
	}
	d->m.dma_addresses = kvcalloc(pt->entries, sizeof(u64), GFP_KERNEL);
	if (!d->m.dma_addresses) {
		mutex_unlock(&tp_lock);
		kfree(d);
		return -ENOMEM;
	}
	d->dev = get_device(dev);
	d->dir = dir;
	/*
	 * The peer's view of each page: an IOVA behind a translating IOMMU,
	 * the physical address without one (gpudirect §2.4, §4.3).
	 */
	for (i = 0; i < pt->entries; i++) {
		dma_addr_t a = dma_map_page(dev, pin->alloc->pages[pin->first + i],
					    0, TP_PAGE_SIZE, dir);

		if (dma_mapping_error(dev, a)) {
			tp_dma_unmap_entries(d);
			put_device(d->dev);
			mutex_unlock(&tp_lock);
			kvfree(d->m.dma_addresses);
			kfree(d);
			return -ENOMEM;
		}
		d->m.dma_addresses[i] = a;
		d->mapped = i + 1;
	}
	d->m.version = tp_mode.dma_version ? tp_mode.dma_version :
					     NVIDIA_P2P_DMA_MAPPING_VERSION;
	d->m.page_size_type = TP_PAGE_SIZE_TYPE;
	d->m.entries = pt->entries;
	d->pin = pin;
	d->peer = peer;
	list_add_tail(&d->node, &pin->dmas);
	*out = &d->m;
	mutex_unlock(&tp_lock);
	return 0;
}

static int tp_dma_unmap(const void *peer, struct nvidia_p2p_page_table *pt,
			struct nvidia_p2p_dma_mapping *m, bool check)
{
	struct tp_dma *d;

	mutex_lock(&tp_lock);
	d = tp_find_dma_locked(m);
	if (!d || (check && (d->peer != peer || d->pin->pt_key != (unsigned long)pt))) {
		mutex_unlock(&tp_lock);
		return -EINVAL;
	}
	if (d->pin->cb_task == current)
		tp_violation("dma_unmap_pages called from the free callback");
	tp_free_dma(d);
	mutex_unlock(&tp_lock);
	return 0;
}

#ifndef GPUCTS_TEGRA
int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space_token,
			 uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	return tp_get_pages(virtual_address, length, page_table, free_callback,
			    data, false, p2p_token, va_space_token);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space_token,
			 uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return tp_put_pages(virtual_address, page_table, false, true);
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table,
				    uint32_t flags)
{
	if (flags)
		return -EINVAL;
	return tp_get_pages(virtual_address, length, page_table, NULL, NULL, true,
			    0, 0);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    uint32_t flags)
{
	if (flags)
		return -EINVAL;
	return tp_put_pages(virtual_address, page_table, true, true);
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	if (!peer)
		return -EINVAL;
	/* the desktop signature has no direction: the peer may read and write */
	return tp_dma_map(peer, &peer->dev, DMA_BIDIRECTIONAL, page_table,
			  dma_mapping);
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return tp_dma_unmap(peer, page_table, dma_mapping, true);
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);
#else
int nvidia_p2p_get_pages(u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	/* no tokens on Tegra: the owning process only */
	return tp_get_pages(virtual_address, length, page_table, free_callback,
			    data, false, 0, 0);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(struct nvidia_p2p_page_table *page_table)
{
	return tp_put_pages(0, page_table, false, false);
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_dma_map_pages(struct device *dev,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping,
			     enum dma_data_direction direction)
{
	if (!valid_dma_direction(direction))
		return -EINVAL;
	return tp_dma_map(dev, dev, direction, page_table, dma_mapping);
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return tp_dma_unmap(NULL, NULL, dma_mapping, false);
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);
#endif

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct tp_pin *pin;

	mutex_lock(&tp_lock);
	pin = tp_find_pin_locked(page_table);
	if (!pin || !pin->pt) {
		tp_violation("free_page_table of an unknown page table");
		mutex_unlock(&tp_lock);
		return -EINVAL;
	}
	if (pin->state != TP_REVOKING) {
		/* the pages are still pinned: only put_pages may release them */
		tp_violation("free_page_table outside the free callback");
		mutex_unlock(&tp_lock);
		return -EINVAL;
	}
	pin->pt = NULL;
	/* the entries go now; a caller reading them after this finds none */
	if (page_table->pages)
		kvfree(page_table->pages[0]);
	kvfree(page_table->pages);
	page_table->pages = NULL;
	page_table->entries = 0;
	page_table->version = 0;
	pin->pt_husk = page_table;
	mutex_unlock(&tp_lock);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tp_dma *d;

	mutex_lock(&tp_lock);
	d = tp_find_dma_locked(dma_mapping);
	if (!d) {
		tp_violation("free_dma_mapping of an unknown mapping");
		mutex_unlock(&tp_lock);
		return -EINVAL;
	}
	if (d->pin->state != TP_REVOKING)
		tp_violation("free_dma_mapping outside the free callback");
	tp_free_dma(d);
	mutex_unlock(&tp_lock);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_dma_mapping);

/* ---- control device ---- */

static void tp_fill(struct tp_alloc *a)
{
	unsigned int i, j;
	const unsigned int words = TP_PAGE_SIZE / sizeof(u64);

	for (i = 0; i < a->npages; i++) {
		u64 *w = page_address(a->pages[i]);
		u64 base = a->va + ((u64)i << TP_PAGE_SHIFT);

		for (j = 0; j < words; j++)
			w[j] = GPUCTS_TESTPROV_PATTERN(base + j * sizeof(u64));
	}
}

static long tp_ioc_alloc(struct file *file, void __user *argp)
{
	struct gpucts_testprov_alloc arg;
	struct tp_alloc *a;
	unsigned int i;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (!arg.length || arg.length > GPUCTS_TESTPROV_MAX_ALLOC)
		return -EINVAL;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->len = round_up(arg.length, TP_PAGE_SIZE);
	a->npages = a->len >> TP_PAGE_SHIFT;
	a->pages = kvcalloc(a->npages, sizeof(*a->pages), GFP_KERNEL);
	if (!a->pages)
		goto err;
	for (i = 0; i < a->npages; i++) {
		a->pages[i] = alloc_pages(GFP_KERNEL, TP_PAGE_ORDER);
		if (!a->pages[i])
			goto err;
	}
	a->owner = file;
	a->refs = 1;
	a->p2p_token = ((struct tp_file *)file->private_data)->p2p_token;
	a->va_space_token = ((struct tp_file *)file->private_data)->va_space_token;
	if (current->mm) {
		mmgrab(current->mm);
		a->mm = current->mm;
	}

	mutex_lock(&tp_lock);
	a->va = tp_next_va;
	tp_next_va += round_up(a->len, TP_VA_GAP) + TP_VA_GAP;
	tp_fill(a);
	list_add_tail(&a->node, &tp_allocs);
	mutex_unlock(&tp_lock);

	arg.va = a->va;
	memcpy(arg.gpu_uuid, tp_uuid, sizeof(arg.gpu_uuid));
	if (copy_to_user(argp, &arg, sizeof(arg)))
		return -EFAULT;	/* the allocation stays with the file */
	return 0;
err:
	for (i = 0; a->pages && i < a->npages; i++)
		if (a->pages[i])
			__free_pages(a->pages[i], TP_PAGE_ORDER);
	kvfree(a->pages);
	kfree(a);
	return -ENOMEM;
}

/* Like cuMemFree: revoke every non-persistent pin on the allocation. */
static int tp_free_alloc(struct tp_alloc *a)
{
	struct tp_pin *pin, *tmp;
	LIST_HEAD(revoke);
	int n = 0;

	lockdep_assert_held(&tp_lock);
	a->freed = true;
	list_for_each_entry(pin, &tp_pins, node) {
		if (pin->alloc != a || pin->persistent || pin->state != TP_ACTIVE)
			continue;
		pin->state = TP_REVOKING;
		pin->cb_task = current;
		list_add_tail(&pin->revoke_node, &revoke);
	}
	mutex_unlock(&tp_lock);
	list_for_each_entry_safe(pin, tmp, &revoke, revoke_node) {
		tp_run_callback(pin);
		n++;
	}
	mutex_lock(&tp_lock);
	/* persistent pins keep the pages until put_pages_persistent */
	tp_alloc_put_locked(a);
	return n;
}

static long tp_ioc_free(struct file *file, void __user *argp)
{
	struct gpucts_testprov_free arg;
	struct tp_alloc *a;
	int n = -EINVAL;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	mutex_lock(&tp_lock);
	list_for_each_entry(a, &tp_allocs, node) {
		if (a->owner == file && !a->freed && a->va == arg.va) {
			n = tp_free_alloc(a);
			break;
		}
	}
	mutex_unlock(&tp_lock);
	if (n < 0)
		return n;
	arg.callbacks = n;
	if (copy_to_user(argp, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

static long tp_ioc_tokens(struct file *file, void __user *argp)
{
	struct gpucts_testprov_tokens arg;
	struct tp_alloc *a;
	int ret = -EINVAL;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	mutex_lock(&tp_lock);
	list_for_each_entry(a, &tp_allocs, node) {
		if (a->owner == file && !a->freed && a->va == arg.va) {
			arg.p2p_token = a->p2p_token;
			arg.va_space_token = a->va_space_token;
			ret = 0;
			break;
		}
	}
	mutex_unlock(&tp_lock);
	if (ret)
		return ret;
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

static long tp_ioc_mode(void __user *argp)
{
	struct gpucts_testprov_mode arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.get_delay_us > 100000)
		return -EINVAL;
	mutex_lock(&tp_lock);
	tp_mode = arg;
	mutex_unlock(&tp_lock);
	return 0;
}

static long tp_ioc_pt_flags(void __user *argp)
{
	struct gpucts_testprov_pt_flags arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad)
		return -EINVAL;
	mutex_lock(&tp_lock);
	tp_pt_flags = arg.flags;
	mutex_unlock(&tp_lock);
	return 0;
}

static long tp_ioc_inject(void __user *argp)
{
	struct gpucts_testprov_inject arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.pad || arg.put_delay_us > 100000)
		return -EINVAL;
	mutex_lock(&tp_lock);
	tp_inj_enomem = arg.enomem;
	tp_inj_bad_version = arg.bad_version;
	tp_put_delay_us = arg.put_delay_us;
	mutex_unlock(&tp_lock);
	return 0;
}

static void tp_count_locked(struct gpucts_testprov_stats *s)
{
	struct tp_alloc *a;
	struct tp_pin *p;
	struct tp_dma *d;

	memset(s, 0, sizeof(*s));
	list_for_each_entry(p, &tp_pins, node) {
		if (p->state == TP_ACTIVE) {
			s->pins++;
			if (p->persistent)
				s->persistent_pins++;
		}
		list_for_each_entry(d, &p->dmas, node)
			s->dma_mappings++;
	}
	list_for_each_entry(a, &tp_allocs, node)
		s->allocs++;
	s->callbacks = atomic64_read(&tp_callbacks);
	s->violations = atomic64_read(&tp_violations);
}

static long tp_ioc_stats(void __user *argp)
{
	struct gpucts_testprov_stats s;

	mutex_lock(&tp_lock);
	tp_count_locked(&s);
	mutex_unlock(&tp_lock);
	return copy_to_user(argp, &s, sizeof(s)) ? -EFAULT : 0;
}

static long tp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case GPUCTS_TESTPROV_IOC_ALLOC:
		return tp_ioc_alloc(file, argp);
	case GPUCTS_TESTPROV_IOC_FREE:
		return tp_ioc_free(file, argp);
	case GPUCTS_TESTPROV_IOC_INJECT:
		return tp_ioc_inject(argp);
	case GPUCTS_TESTPROV_IOC_STATS:
		return tp_ioc_stats(argp);
	case GPUCTS_TESTPROV_IOC_MODE:
		return tp_ioc_mode(argp);
	case GPUCTS_TESTPROV_IOC_TOKENS:
		return tp_ioc_tokens(file, argp);
	case GPUCTS_TESTPROV_IOC_PT_FLAGS:
		return tp_ioc_pt_flags(argp);
	default:
		return -ENOTTY;
	}
}

static int tp_open(struct inode *inode, struct file *file)
{
	struct tp_file *tf = kzalloc(sizeof(*tf), GFP_KERNEL);

	if (!tf)
		return -ENOMEM;
	/* §2.6: the p2p token is random so it cannot be guessed */
	do {
		get_random_bytes(&tf->p2p_token, sizeof(tf->p2p_token));
	} while (!tf->p2p_token);
	tf->va_space_token = atomic_inc_return(&tp_next_va_space);
	file->private_data = tf;
	return 0;
}

/* The owning process went away: its GPU memory is freed (gpudirect §2.3). */
static int tp_release(struct inode *inode, struct file *file)
{
	struct tp_alloc *a;
	bool again = true;

	mutex_lock(&tp_lock);
	while (again) {
		again = false;
		list_for_each_entry(a, &tp_allocs, node) {
			if (a->owner == file && !a->freed) {
				/* drops tp_lock: restart the walk */
				tp_free_alloc(a);
				again = true;
				break;
			}
		}
	}
	mutex_unlock(&tp_lock);
	kfree(file->private_data);
	return 0;
}

static const struct file_operations tp_fops = {
	.owner = THIS_MODULE,
	.open = tp_open,
	.unlocked_ioctl = tp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = tp_release,
};

static struct miscdevice tp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gpucts_testprov",
	.fops = &tp_fops,
	.mode = 0600,
};

static int __init tp_init(void)
{
	get_random_bytes(tp_uuid, sizeof(tp_uuid));
	pr_info("gpucts_testprov: %s flavour, GPU page size %llu\n", TP_FLAVOUR,
		TP_PAGE_SIZE);
	return misc_register(&tp_misc);
}

static void __exit tp_exit(void)
{
	struct gpucts_testprov_stats s;
	struct tp_pin *p, *ptmp;
	struct tp_dma *d, *dtmp;
	struct tp_alloc *a, *atmp;

	misc_deregister(&tp_misc);
	/* the companion is gone (it links against us): whatever is left leaked */
	mutex_lock(&tp_lock);
	tp_count_locked(&s);
	pr_info("gpucts_testprov: leaked pins: %u\n", s.pins);
	pr_info("gpucts_testprov: leaked dma mappings: %u\n", s.dma_mappings);
	pr_info("gpucts_testprov: API violations: %llu, callbacks fired: %llu\n",
		s.violations, s.callbacks);
	list_for_each_entry_safe(p, ptmp, &tp_pins, node) {
		list_for_each_entry_safe(d, dtmp, &p->dmas, node)
			tp_free_dma(d);
		list_del(&p->node);
		tp_free_pt(p->pt);
		kfree(p->pt_husk);
		tp_alloc_put_locked(p->alloc);
		kfree(p);
	}
	list_for_each_entry_safe(a, atmp, &tp_allocs, node) {
		a->refs = 1;
		tp_alloc_put_locked(a);
	}
	/* owed callbacks of a module that is gone: never called */
	while (!list_empty(&tp_strays)) {
		struct tp_stray *st = list_first_entry(&tp_strays, struct tp_stray, node);

		list_del(&st->node);
		kfree(st);
	}
	mutex_unlock(&tp_lock);
}

module_init(tp_init);
module_exit(tp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpucts test provider of the nvidia_p2p_* API on host pages");
