// SPDX-License-Identifier: GPL-2.0
/*
 * p2p_scenarios: pinning, page tables, mappings, revocation, DMA mapping,
 * argument checks, other processes and capabilities, injected failures,
 * revocation races and process or descriptor teardown.
 */
#include "p2p_scenarios.h"

/* ---------------------------------------------------------------- */

int sc_version(struct ctx *c)
{
	struct gpucts_p2p_version v;

	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_GET_VERSION, &v), "GET_VERSION");
	CHECK(v.major == GPUCTS_P2P_VERSION_MAJOR, "major %u", v.major);
	CHECK(v.flavour == (tegra ? GPUCTS_P2P_FLAVOUR_TEGRA : GPUCTS_P2P_FLAVOUR_DESKTOP),
	      "flavour %u", v.flavour);
	CHECK(v.pin_align == align_bytes, "pin_align %llu, spec says %llu",
	      (unsigned long long)v.pin_align, (unsigned long long)align_bytes);
	CHECK(!!(v.caps & GPUCTS_P2P_CAP_PERSISTENT) == !tegra,
	      "persistent cap %u on %s", v.caps, tegra ? "tegra" : "desktop");
	CHECK(v.caps & GPUCTS_P2P_CAP_ADDRESSES, "root lacks CAP_ADDRESSES");
	return 0;
}

int sc_pin_unpin_aligned(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	struct gpucts_p2p_unpin u;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va + align_bytes, 2 * align_bytes, 0, &p), "pin");
	CHECK(p.handle, "handle 0");
	CHECK(p.pinned_va == va + align_bytes && p.pinned_length == 2 * align_bytes,
	      "aligned range changed: 0x%llx+%llu", (unsigned long long)p.pinned_va,
	      (unsigned long long)p.pinned_length);
	CHECK(tp_stats(c->tp).pins == 1, "provider holds %u pins", tp_stats(c->tp).pins);
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
	if (tegra) {
		/* §4.4.3: put_pages always fires the callback */
		CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED_DURING && u.callbacks == 1,
		      "tegra unpin result %u callbacks %u", u.result, u.callbacks);
	} else {
		CHECK(u.result == GPUCTS_P2P_UNPIN_PUT && u.callbacks == 0,
		      "unpin result %u callbacks %u", u.result, u.callbacks);
	}
	CHECK(u.put_ret == 0, "put_pages returned %d", u.put_ret);
	CHECK(tp_stats(c->tp).pins == 0, "provider still holds %u pins",
	      tp_stats(c->tp).pins);
	CHECK_ERR(gp_unpin(c->gp, p.handle, NULL), ENOENT, "second unpin");
	CHECK(tp_free(c->tp, va) == 0, "free fired callbacks after unpin");
	return 0;
}

int sc_pin_unaligned_rounded(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, NULL), "alloc");
	/* inside one GPU page: the whole page */
	CHECK_OK(gp_pin(c->gp, va + 100, 200, 0, &p), "pin inside a page");
	CHECK(p.pinned_va == va && p.pinned_length == align_bytes,
	      "got 0x%llx+%llu, want 0x%llx+%llu", (unsigned long long)p.pinned_va,
	      (unsigned long long)p.pinned_length, (unsigned long long)va,
	      (unsigned long long)align_bytes);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	/* 16 bytes straddling a boundary: two pages */
	CHECK_OK(gp_pin(c->gp, va + align_bytes - 8, 16, 0, &p), "pin straddling");
	CHECK(p.pinned_va == va && p.pinned_length == 2 * align_bytes,
	      "straddling: got 0x%llx+%llu", (unsigned long long)p.pinned_va,
	      (unsigned long long)p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_free(c->tp, va) == 0, "free fired callbacks");
	return 0;
}

int sc_pin_zero_length(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_ERR(gp_pin(c->gp, va, 0, 0, &p), EINVAL, "zero length");
	CHECK_ERR(gp_pin(c->gp, va, 0, GPUCTS_P2P_PIN_EXACT, &p), EINVAL,
		  "zero length exact");
	CHECK(tp_stats(c->tp).pins == 0, "a pin was made");
	tp_free(c->tp, va);
	return 0;
}

int sc_provider_rejects_unaligned(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, NULL), "alloc");
	CHECK_ERR(gp_pin(c->gp, va + 512, align_bytes, GPUCTS_P2P_PIN_EXACT, &p),
		  EINVAL, "unaligned start");
	CHECK_ERR(gp_pin(c->gp, va, align_bytes + 512, GPUCTS_P2P_PIN_EXACT, &p),
		  EINVAL, "unaligned length");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, GPUCTS_P2P_PIN_EXACT, &p),
		 "aligned exact");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	tp_free(c->tp, va);
	return 0;
}

int sc_page_table(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_pin p;
	uint64_t va, addrs[8] = { 0 };
	uint8_t uuid[16];
	unsigned int i, j;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, uuid), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 3 * align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pt(c->gp, p.handle, &t, addrs, 8), "PAGE_TABLE");
	CHECK(t.compatible == 1, "version 0x%x not compatible", t.version);
	/* enum nvidia_p2p_page_size_type: 4KB = 0, 64KB = 1 */
	CHECK(t.page_size_type == (tegra ? 0u : 1u), "page_size_type %u", t.page_size_type);
	CHECK(t.page_size == align_bytes, "page_size %llu", (unsigned long long)t.page_size);
	CHECK(t.entries == 3, "entries %u, want 3", t.entries);
	CHECK(!memcmp(t.gpu_uuid, uuid, 16), "GPU UUID differs from the provider's");
	for (i = 0; i < 3; i++) {
		CHECK(addrs[i] && !(addrs[i] % align_bytes),
		      "physical address %u: 0x%llx", i, (unsigned long long)addrs[i]);
		for (j = 0; j < i; j++)
			CHECK(addrs[i] != addrs[j], "pages %u and %u share 0x%llx", i, j,
			      (unsigned long long)addrs[i]);
	}
	CHECK(addrs[3] == 0, "wrote past entries");
	/* a short array gets what fits, entries still tells the total */
	memset(addrs, 0, sizeof(addrs));
	CHECK_OK(gp_pt(c->gp, p.handle, &t, addrs, 1), "PAGE_TABLE short");
	CHECK(t.entries == 3 && addrs[0] && !addrs[1], "short copy wrong");
	CHECK_ERR(gp_pt(c->gp, p.handle, &t, (uint64_t *)8, 8), EFAULT, "bad addrs_ptr");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	tp_free(c->tp, va);
	return 0;
}

int sc_mmap_cpu_access(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va, v;
	int err;
	volatile uint64_t *m;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va + align_bytes, 2 * align_bytes, 0, &p), "pin");
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	if (check_pattern((void *)m, p.pinned_va, p.pinned_length))
		return -1;
	m[3] = 0x1122334455667788ULL;
	CHECK(!read_word(&m[3], &v) && v == 0x1122334455667788ULL, "write not visible");
	/* too long, private, not a handle's offset */
	CHECK(mmap(NULL, p.pinned_length + 4096, PROT_READ, MAP_SHARED, c->gp,
		   (off_t)p.mmap_offset) == MAP_FAILED && errno == EINVAL, "oversized mmap");
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, c->gp,
		   (off_t)p.mmap_offset) == MAP_FAILED && errno == EINVAL, "private mmap");
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, c->gp,
		   (off_t)p.mmap_offset + 4096) == MAP_FAILED && errno == EINVAL,
	      "mmap inside the offset range");
	munmap((void *)m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	tp_free(c->tp, va);
	return 0;
}

int sc_persistent_survives_free(struct ctx *c)
{
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	uint64_t va;
	void *m;
	int err, allocs;

	if (tegra) {
		CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
		CHECK_ERR(gp_pin(c->gp, va, align_bytes, GPUCTS_P2P_PIN_PERSISTENT, &p),
			  EOPNOTSUPP, "persistent pin on tegra");
		tp_free(c->tp, va);
		return 0;
	}
	allocs = tp_stats(c->tp).allocs;
	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, GPUCTS_P2P_PIN_PERSISTENT, &p),
		 "persistent pin");
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	CHECK(tp_free(c->tp, va) == 0, "free fired a callback on a persistent pin");
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.state == GPUCTS_P2P_STATE_PINNED && e.callbacks == 0,
	      "state %u callbacks %u", e.state, e.callbacks);
	if (check_pattern(m, va, p.pinned_length))
		return -1;
	CHECK(tp_stats(c->tp).persistent_pins == 1, "provider lost the persistent pin");
	munmap(m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
	CHECK(u.result == GPUCTS_P2P_UNPIN_PUT && u.put_ret == 0, "result %u put_ret %d",
	      u.result, u.put_ret);
	CHECK((int)tp_stats(c->tp).allocs == allocs, "pages of the freed allocation kept");
	return 0;
}

int sc_revoked_on_free(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	uint64_t va, v;
	volatile uint64_t *m;
	int err, cbs;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), "pin");
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	CHECK(!read_word(&m[0], &v) && v == GPUCTS_TESTPROV_PATTERN(va), "first read");
	cbs = tp_free(c->tp, va);
	CHECK(cbs == 1, "free fired %d callbacks, want 1", cbs);
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.state == GPUCTS_P2P_STATE_REVOKED && e.callbacks == 1 && e.zaps == 1,
	      "state %u callbacks %u zaps %u", e.state, e.callbacks, e.zaps);
	CHECK(read_word(&m[0], &v) == -1, "no SIGBUS after revocation (read 0x%llx)",
	      (unsigned long long)v);
	CHECK(read_word(&m[p.pinned_length / 8 - 1], &v) == -1, "no SIGBUS at the end");
	CHECK_ERR(gp_pt(c->gp, p.handle, &t, NULL, 0), ESTALE, "PAGE_TABLE revoked");
	CHECK(!gp_mmap(c->gp, &p, 4096, &err) && err == -ESTALE, "mmap revoked: %d", err);
	munmap((void *)m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin revoked");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED && u.callbacks == 1 && u.put_ret == 0,
	      "result %u callbacks %u put_ret %d", u.result, u.callbacks, u.put_ret);
	CHECK_ERR(gp_unpin(c->gp, p.handle, NULL), ENOENT, "second unpin");
	CHECK(tp_stats(c->tp).violations == 0, "provider saw %llu API violations",
	      (unsigned long long)tp_stats(c->tp).violations);
	return 0;
}

int sc_two_pins_one_revoked(struct ctx *c)
{
	struct gpucts_p2p_pin a, b;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	uint64_t va, vb;
	void *mb;
	int err;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc a");
	CHECK_OK(tp_alloc(c->tp, align_bytes, &vb, NULL), "alloc b");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &a), "pin a");
	CHECK_OK(gp_pin(c->gp, vb, align_bytes, 0, &b), "pin b");
	mb = gp_mmap(c->gp, &b, align_bytes, &err);
	CHECK(mb, "mmap b: %s", strerror(-err));
	CHECK(tp_free(c->tp, va) == 1, "free a: callbacks");
	CHECK_OK(gp_events(c->gp, a.handle, &e), "EVENTS a");
	CHECK(e.state == GPUCTS_P2P_STATE_REVOKED, "a not revoked");
	CHECK_OK(gp_events(c->gp, b.handle, &e), "EVENTS b");
	CHECK(e.state == GPUCTS_P2P_STATE_PINNED && e.callbacks == 0 && e.zaps == 0,
	      "b touched: state %u callbacks %u zaps %u", e.state, e.callbacks, e.zaps);
	if (check_pattern(mb, vb, align_bytes))
		return -1;
	munmap(mb, align_bytes);
	CHECK_OK(gp_unpin(c->gp, a.handle, &u), "unpin a");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "a result %u", u.result);
	CHECK_OK(gp_unpin(c->gp, b.handle, &u), "unpin b");
	CHECK(u.result == (tegra ? GPUCTS_P2P_UNPIN_REVOKED_DURING : GPUCTS_P2P_UNPIN_PUT),
	      "b result %u", u.result);
	tp_free(c->tp, vb);
	return 0;
}

/* Whether an IOMMU translates for the PCI device (its group's domain is DMA or DMA-FQ). */
static int peer_translated(const char *bdf)
{
	char buf[64];

	return !sysfs_line(bdf, "iommu_group/type", buf, sizeof(buf)) &&
	       !strncmp(buf, "DMA", 3);
}

int sc_dma_map_unmap(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_dma_unmap du;
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p;
	uint64_t va, phys[4] = { 0 }, dma[4] = { 0 };

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pt(c->gp, p.handle, &t, phys, 4), "PAGE_TABLE");
	/* peer: the VM's host bridge, 0000:00:00.0 */
	memset(&d, 0, sizeof(d));
	d.handle = p.handle;
	d.addrs_ptr = (uintptr_t)dma;
	d.addrs_count = 4;
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), "DMA_MAP");
	CHECK(d.compatible == 1 && d.entries == 2, "compatible %u entries %u",
	      d.compatible, d.entries);
	CHECK(d.page_size_type == t.page_size_type, "page size type %u vs %u",
	      d.page_size_type, t.page_size_type);
	/* the provider maps through the DMA API: bus == physical unless an IOMMU
	 * translates for the peer (§2.4, §4.3)
	 */
	if (peer_translated("0000:00:00.0"))
		CHECK(dma[0] != phys[0] && dma[1] != phys[1],
		      "IOMMU-translated peer got physical addresses 0x%llx",
		      (unsigned long long)dma[0]);
	else
		CHECK(dma[0] == phys[0] && dma[1] == phys[1], "dma 0x%llx vs phys 0x%llx",
		      (unsigned long long)dma[0], (unsigned long long)phys[0]);
	CHECK(tp_stats(c->tp).dma_mappings == 1, "provider holds %u mappings",
	      tp_stats(c->tp).dma_mappings);
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.flags & GPUCTS_P2P_EV_DMA_MAPPED, "not marked mapped");
	d.addrs_ptr = 0;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), EBUSY, "second DMA_MAP");
	du.handle = p.handle;
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du), "DMA_UNMAP");
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du), EINVAL, "DMA_UNMAP twice");
	CHECK(tp_stats(c->tp).dma_mappings == 0, "mapping left in provider");
	d.pci_bus = 0x9e;	/* no such device in the VM */
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), ENODEV, "absent peer");
	d.pci_bus = 0;
	d.direction = 3;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), EINVAL, "bad direction");
	d.direction = tegra ? 1 : 0;
	/* mapped again then left for UNPIN to unmap */
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), "DMA_MAP again");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin with mapping");
	CHECK(tp_stats(c->tp).dma_mappings == 0, "unpin left the mapping");
	CHECK(tp_stats(c->tp).violations == 0, "violations %llu",
	      (unsigned long long)tp_stats(c->tp).violations);
	tp_free(c->tp, va);
	return 0;
}

int sc_dma_mapping_freed_by_callback(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_dma_unmap du;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	memset(&d, 0, sizeof(d));
	d.handle = p.handle;
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), "DMA_MAP");
	CHECK(tp_free(c->tp, va) == 1, "free: callbacks");
	/* §3.4: the callback freed the mapping with free_dma_mapping */
	CHECK(tp_stats(c->tp).dma_mappings == 0, "mapping survived the callback");
	du.handle = p.handle;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du), ESTALE, "DMA_UNMAP revoked");
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "result %u", u.result);
	CHECK(tp_stats(c->tp).violations == 0, "violations %llu",
	      (unsigned long long)tp_stats(c->tp).violations);
	return 0;
}

int sc_bad_args(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	uint64_t va;
	int other;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_ERR(gp_unpin(c->gp, 0, NULL), ENOENT, "unpin handle 0");
	CHECK_ERR(gp_unpin(c->gp, 777777, NULL), ENOENT, "unpin unknown handle");
	CHECK_ERR(gp_unpin(c->gp, ~0ULL, NULL), ENOENT, "unpin handle ~0");
	CHECK_ERR(gp_pt(c->gp, 4242, &t, NULL, 0), ENOENT, "PAGE_TABLE unknown handle");
	CHECK_ERR(gp_pin(c->gp, va, ~0ULL - 4, 0, &p), EINVAL, "va + length overflows");
	CHECK_ERR(gp_pin(c->gp, ~0ULL - 4096, 4000, 0, &p), EINVAL, "rounding overflows");
	CHECK_ERR(gp_pin(c->gp, va, 1ULL << 40, 0, &p), EINVAL, "huge length (provider)");
	CHECK_ERR(gp_pin(c->gp, va, 8, 0x80, &p), EINVAL, "unknown flag");
	CHECK_ERR(gp_pin(c->gp, 0x1000, 8, 0, &p), EINVAL, "unmapped VA (provider)");
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_PIN, NULL), EFAULT, "NULL argument");
	CHECK_ERR(xioctl(c->gp, _IOWR('G', 0x7f, struct gpucts_p2p_pin), &p), ENOTTY,
		  "unknown command");
	CHECK_ERR(xioctl(c->gp, _IOWR('G', 0x01, struct gpucts_p2p_unpin), &p), ENOTTY,
		  "PIN number with a wrong size");
	CHECK_OK(gp_pin(c->gp, va, 8, 0, &p), "pin");
	memset(&u, 0, sizeof(u));
	u.handle = p.handle;
	u.pad = 1;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_UNPIN, &u), EINVAL, "unpin pad");
	memset(&t, 0, sizeof(t));
	t.handle = p.handle;
	t.pad = 1;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_PAGE_TABLE, &t), EINVAL, "page table pad");
	if (tegra) {
		struct gpucts_p2p_pin q = { .va = va, .length = 8, .p2p_token = 1 };

		CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_PIN, &q), EINVAL, "tegra token");
	}
	/* another open file does not know this handle */
	other = open_gp();
	CHECK(other >= 0, "open: %s", strerror(errno));
	CHECK_ERR(gp_unpin(other, p.handle, NULL), ENOENT, "handle of another fd");
	CHECK(!gp_mmap(other, &p, 4096, &u.put_ret) && u.put_ret == -ENOENT,
	      "mmap of another fd's handle: %d", u.put_ret);
	close(other);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_stats(c->tp).pins == 0, "pins left");
	tp_free(c->tp, va);
	return 0;
}

int sc_other_process_eacces(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;
	pid_t pid;
	int st;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_page_table t;
		struct gpucts_p2p_events e;
		int err = 0;

		/* the descriptor is shared; the handle is not ours (§3.3) */
		if (gp_unpin(c->gp, p.handle, NULL) != -EACCES)
			_exit(1);
		if (gp_pt(c->gp, p.handle, &t, NULL, 0) != -EACCES)
			_exit(2);
		if (gp_events(c->gp, p.handle, &e) != -EACCES)
			_exit(3);
		if (gp_mmap(c->gp, &p, 4096, &err) || err != -EACCES)
			_exit(4);
		_exit(0);
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "child died");
	CHECK(WEXITSTATUS(st) == 0, "child check %d did not get EACCES", WEXITSTATUS(st));
	CHECK(tp_stats(c->tp).pins == 1, "child released the pin");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "owner unpin");
	tp_free(c->tp, va);
	return 0;
}

int drop_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[cap / 32].effective &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

static int drop_cap_sys_admin(void)
{
	return drop_cap(CAP_SYS_ADMIN);
}

int sc_addresses_need_cap_sys_admin(struct ctx *c)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_page_table t;
		struct gpucts_p2p_version v;
		struct gpucts_p2p_pin p;
		uint64_t va, addr = 0;
		int gp = open_gp(), tp = open_tp();

		if (gp < 0 || tp < 0 || tp_alloc(tp, align_bytes, &va, NULL) ||
		    gp_pin(gp, va, align_bytes, 0, &p))
			_exit(10);
		if (drop_cap_sys_admin())
			_exit(11);
		if (xioctl(gp, GPUCTS_P2P_IOC_GET_VERSION, &v) ||
		    (v.caps & GPUCTS_P2P_CAP_ADDRESSES))
			_exit(1);
		if (gp_pt(gp, p.handle, &t, &addr, 1) != -EPERM || addr)
			_exit(2);
		if (gp_pt(gp, p.handle, &t, NULL, 0) || t.entries != 1)
			_exit(3);
		_exit(0);	/* exit releases pin and allocation */
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "child died");
	CHECK(WEXITSTATUS(st) == 0, "child step %d failed", WEXITSTATUS(st));
	CHECK(tp_stats(c->tp).pins == 0, "child's pin survived its exit");
	return 0;
}

int sc_injected_enomem(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(tp_inject(c->tp, 1, 0, 0), "inject");
	CHECK_ERR(gp_pin(c->gp, va, align_bytes, 0, &p), ENOMEM, "pin under ENOMEM");
	CHECK(tp_stats(c->tp).pins == 0, "pin made");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin after injection");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	tp_free(c->tp, va);
	return 0;
}

int sc_incompatible_version(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p;
	uint64_t va, addr = 0;
	int err;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(tp_inject(c->tp, 0, 1, 0), "inject");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pt(c->gp, p.handle, &t, &addr, 1), "PAGE_TABLE");
	CHECK(t.compatible == 0, "version 0x%x accepted", t.version);
	/* a major no release has: neither 1 (R515-R575) nor 2 (R580) */
	CHECK(t.version == GPUCTS_TESTPROV_BAD_PT_VERSION, "version 0x%x", t.version);
	CHECK(t.entries == 0 && t.page_size == 0 && addr == 0,
	      "fields of an incompatible table were read");
	CHECK(!gp_mmap(c->gp, &p, 4096, &err) && err == -EPROTO, "mmap: %d", err);
	memset(&d, 0, sizeof(d));
	d.handle = p.handle;
	CHECK_ERR(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d), EPROTO, "DMA_MAP");
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.flags & GPUCTS_P2P_EV_INCOMPATIBLE, "not flagged");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_stats(c->tp).pins == 0, "pin left");
	tp_free(c->tp, va);
	return 0;
}

/* --- revocation racing unpin --- */

struct race {
	struct ctx *c;
	pthread_barrier_t start, done;
	uint64_t va, handle;
	int free_cbs;
	volatile int stop;
};

static void *race_freer(void *arg)
{
	struct race *r = arg;

	unsigned int round = 0;

	for (;;) {
		volatile unsigned int spin;

		pthread_barrier_wait(&r->start);
		if (r->stop)
			return NULL;
		/* a varying head start for the unpin, so that the free lands
		 * before, inside and after put_pages across the rounds */
		for (spin = 0; spin < (round++ % 32) * 400; spin++)
			;
		r->free_cbs = tp_free(r->c->tp, r->va);
		pthread_barrier_wait(&r->done);
	}
}

/* rounds of revoke_races_unpin in which the revocation must win (per 1000) */
#define RACE_MIN_PERMILLE 10

int sc_revoke_races_unpin(struct ctx *c)
{
	/* P2P_RACE_ITERS (environment) overrides the default for soak runs */
	const char *env = getenv("P2P_RACE_ITERS");
	const int iters = env && atoi(env) > 0 ? atoi(env) : tegra ? 1000 : 3000;
	int n_put = 0, n_during = 0, n_before = 0, i;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	struct race r = { .c = c };
	pthread_t th;
	int bad = 0;

	pthread_barrier_init(&r.start, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	CHECK(!pthread_create(&th, NULL, race_freer, &r), "thread");
	for (i = 0; i < iters && !bad; i++) {
		/* every other round, put_pages dawdles so the free lands inside it */
		tp_inject(c->tp, 0, 0, (i & 1) ? 20 : 0);
		if (tp_alloc(c->tp, align_bytes, &r.va, NULL) ||
		    gp_pin(c->gp, r.va, align_bytes, 0, &p)) {
			snprintf(reason, sizeof(reason), "iteration %d: alloc/pin", i);
			bad = 1;
			break;
		}
		pthread_barrier_wait(&r.start);
		if (gp_unpin(c->gp, p.handle, &u)) {
			snprintf(reason, sizeof(reason), "iteration %d: unpin", i);
			bad = 1;
		}
		pthread_barrier_wait(&r.done);
		if (bad)
			break;
		switch (u.result) {
		case GPUCTS_P2P_UNPIN_PUT:
			n_put++;
			/* put_pages won: the free must not have called back */
			if (r.free_cbs != 0) {
				snprintf(reason, sizeof(reason),
					 "iteration %d: PUT but free fired %d", i, r.free_cbs);
				bad = 1;
			}
			break;
		case GPUCTS_P2P_UNPIN_REVOKED_DURING:
			n_during++;
			break;
		case GPUCTS_P2P_UNPIN_REVOKED:
			n_before++;
			break;
		default:
			snprintf(reason, sizeof(reason), "iteration %d: result %u", i, u.result);
			bad = 1;
		}
		if (!bad && !tegra && u.result != GPUCTS_P2P_UNPIN_PUT && r.free_cbs != 1) {
			snprintf(reason, sizeof(reason),
				 "iteration %d: revoked (%u) but free fired %d", i,
				 u.result, r.free_cbs);
			bad = 1;
		}
		if (!bad && u.callbacks > 1) {
			snprintf(reason, sizeof(reason), "iteration %d: %u callbacks", i,
				 u.callbacks);
			bad = 1;
		}
	}
	r.stop = 1;
	pthread_barrier_wait(&r.start);
	pthread_join(th, NULL);
	tp_inject(c->tp, 0, 0, 0);
	printf("# revoke_races_unpin: %d rounds: put %d, revoked during unpin %d, "
	       "revoked before unpin %d\n", i, n_put, n_during, n_before);
	if (bad)
		return -1;
	/*
	 * the race happened: the free revoked the pin during or before the
	 * unpin in at least RACE_MIN_PERMILLE of the rounds (at least once)
	 */
	CHECK((n_during + n_before) * 1000 >= RACE_MIN_PERMILLE * iters &&
	      n_during + n_before >= 1,
	      "the free revoked the pin in only %d of %d rounds (want %d permille)",
	      n_during + n_before, iters, RACE_MIN_PERMILLE);
	CHECK(tp_stats(c->tp).pins == 0, "%u pins leaked", tp_stats(c->tp).pins);
	CHECK(tp_stats(c->tp).allocs == 0, "%u allocations kept", tp_stats(c->tp).allocs);
	CHECK(tp_stats(c->tp).violations == 0, "violations %llu",
	      (unsigned long long)tp_stats(c->tp).violations);
	return 0;
}

/* --- revocation while ioctls use the pages (the callback's "users") --- */

struct busy {
	struct ctx *c;
	uint64_t handle;
	volatile int stop;
	int bad;
	int stale;
	long calls;
	char what[160];
};

static void *busy_user(void *arg)
{
	struct busy *b = arg;
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_dma_unmap du;
	uint64_t addrs[4];
	int r;

	while (!b->stop && !b->bad) {
		if (++b->calls > 200000) {
			snprintf(b->what, sizeof(b->what), "no ESTALE after %ld calls",
				 b->calls);
			b->bad = 1;
			break;
		}
		r = gp_pt(b->c->gp, b->handle, &t, addrs, 4);
		if (r == -ESTALE) {
			b->stale = 1;
			break;
		}
		if (r) {
			snprintf(b->what, sizeof(b->what), "PAGE_TABLE: %d", r);
			b->bad = 1;
			break;
		}
		memset(&d, 0, sizeof(d));
		d.handle = b->handle;
		d.addrs_ptr = (uintptr_t)addrs;
		d.addrs_count = 4;
		r = xioctl(b->c->gp, GPUCTS_P2P_IOC_DMA_MAP, &d);
		if (r == -ESTALE) {
			b->stale = 1;
			break;
		}
		if (r) {
			snprintf(b->what, sizeof(b->what), "DMA_MAP: %d", r);
			b->bad = 1;
			break;
		}
		du.handle = b->handle;
		r = xioctl(b->c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du);
		if (r == -ESTALE) {
			b->stale = 1;	/* the callback freed the mapping */
			break;
		}
		if (r) {
			snprintf(b->what, sizeof(b->what), "DMA_UNMAP: %d", r);
			b->bad = 1;
		}
	}
	return NULL;
}

int sc_revoke_with_ioctls_in_flight(struct ctx *c)
{
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	struct gpucts_testprov_stats s;
	long calls = 0;
	uint64_t va;
	int i, cbs;

	for (i = 0; i < 200; i++) {
		struct busy b = { .c = c };
		pthread_t th;

		CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
		CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), "pin");
		b.handle = p.handle;
		CHECK(!pthread_create(&th, NULL, busy_user, &b), "thread");
		usleep(50 + (i % 10) * 40);
		cbs = tp_free(c->tp, va);
		/* every call after the revocation must answer ESTALE: the user
		 * stops on it (bounded by its own call limit) */
		pthread_join(th, NULL);
		calls += b.calls;
		CHECK(!b.bad, "round %d: %s", i, b.what);
		CHECK(cbs == 1, "round %d: free fired %d callbacks", i, cbs);
		CHECK(b.stale, "round %d: user never saw ESTALE after revocation", i);
		CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
		CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "round %d: result %u", i, u.result);
	}
	s = tp_stats(c->tp);
	printf("# revoke_with_ioctls_in_flight: 200 rounds, %ld ioctl loops\n", calls);
	CHECK(s.pins == 0 && s.dma_mappings == 0 && s.allocs == 0,
	      "left: %u pins, %u dma, %u allocs", s.pins, s.dma_mappings, s.allocs);
	CHECK(s.violations == 0, "violations %llu", (unsigned long long)s.violations);
	return 0;
}

/* Child pins (one persistent on desktop), maps, then is killed. */
static int killed_child(struct ctx *c, int gp_first)
{
	int pfd[2], st;
	pid_t pid;
	char ch;

	CHECK(!pipe(pfd), "pipe");
	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_pin p;
		uint64_t va;
		int gp, tp, err;

		close(pfd[0]);
		/* descriptors close in order at exit: this picks which driver
		 * sees the process go first (gpudirect §2.3) */
		if (gp_first) {
			gp = open_gp();
			tp = open_tp();
		} else {
			tp = open_tp();
			gp = open_gp();
		}
		if (gp < 0 || tp < 0 || tp_alloc(tp, 4 * align_bytes, &va, NULL))
			_exit(1);
		if (gp_pin(gp, va, align_bytes, 0, &p) ||
		    !gp_mmap(gp, &p, align_bytes, &err))
			_exit(2);
		if (gp_pin(gp, va + align_bytes, align_bytes, 0, &p))
			_exit(3);
		if (!tegra && gp_pin(gp, va + 2 * align_bytes, align_bytes,
				     GPUCTS_P2P_PIN_PERSISTENT, &p))
			_exit(4);
		if (write(pfd[1], "r", 1) != 1)
			_exit(5);
		pause();
		_exit(6);
	}
	CHECK(pid > 0, "fork");
	close(pfd[1]);
	if (read(pfd[0], &ch, 1) != 1) {
		close(pfd[0]);
		waitpid(pid, &st, 0);
		FAIL("child failed to pin (exit %d)", WEXITSTATUS(st));
	}
	close(pfd[0]);
	CHECK(tp_stats(c->tp).pins >= 2, "child's pins not seen");
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "child not killed");
	return 0;
}

int sc_process_killed_with_pins(struct ctx *c)
{
	struct gpucts_testprov_stats s;

	if (killed_child(c, 1) || killed_child(c, 0))
		return -1;
	s = tp_stats(c->tp);
	CHECK(s.pins == 0 && s.dma_mappings == 0, "leaked: %u pins, %u dma", s.pins,
	      s.dma_mappings);
	CHECK(s.allocs == 0, "%u allocations kept", s.allocs);
	CHECK(s.violations == 0, "violations %llu", (unsigned long long)s.violations);
	return 0;
}

int sc_fd_closed_with_mapping(struct ctx *c)
{
	struct gpucts_p2p_pin p, q;
	uint64_t va, v;
	int fd, err;
	void *m, *n;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	fd = open_gp();
	CHECK(fd >= 0, "open");
	CHECK_OK(gp_pin(fd, va, align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pin(fd, va + align_bytes, align_bytes, 0, &q), "pin 2");
	m = gp_mmap(fd, &p, align_bytes, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	n = gp_mmap(fd, &q, align_bytes, &err);
	CHECK(n, "mmap 2: %s", strerror(-err));
	close(fd);
	/* the mappings hold the file: pins and pages stay */
	CHECK(tp_stats(c->tp).pins == 2, "pins %u after close", tp_stats(c->tp).pins);
	if (check_pattern(m, va, align_bytes))
		return -1;
	munmap(m, align_bytes);
	CHECK(tp_stats(c->tp).pins == 2, "released before the last munmap");
	/* revoke the second while only its mapping keeps the file */
	CHECK(tp_free(c->tp, va) == 2, "free: callbacks");
	CHECK(read_word(n, &v) == -1, "no SIGBUS on a revoked mapping of a closed fd");
	munmap(n, align_bytes);
	CHECK(tp_stats(c->tp).pins == 0, "pins %u after last munmap", tp_stats(c->tp).pins);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/* §4.3 vs §4.4.3: who fires the callback on put_pages */
int sc_put_pages_callback_semantics(struct ctx *c)
{
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p[4];
	uint64_t va, before, fired;
	int i;

	CHECK_OK(tp_alloc(c->tp, 4 * align_bytes, &va, NULL), "alloc");
	for (i = 0; i < 4; i++)
		CHECK_OK(gp_pin(c->gp, va + i * align_bytes, align_bytes, 0, &p[i]), "pin");
	before = tp_stats(c->tp).callbacks;
	for (i = 0; i < 4; i++) {
		CHECK_OK(gp_unpin(c->gp, p[i].handle, &u), "unpin");
		CHECK(u.result == (tegra ? GPUCTS_P2P_UNPIN_REVOKED_DURING :
				   GPUCTS_P2P_UNPIN_PUT) && u.callbacks == (tegra ? 1u : 0u),
		      "unpin %d: result %u callbacks %u", i, u.result, u.callbacks);
	}
	fired = tp_stats(c->tp).callbacks - before;
	CHECK(fired == (tegra ? 4u : 0u), "provider fired %llu callbacks for 4 put_pages",
	      (unsigned long long)fired);
	CHECK(tp_free(c->tp, va) == 0, "free after unpin fired callbacks");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}
