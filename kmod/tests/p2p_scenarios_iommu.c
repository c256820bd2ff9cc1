// SPDX-License-Identifier: GPL-2.0
/*
 * p2p_scenarios: the IOMMU scenarios, with QEMU's edu device as the peer.
 */
#include "p2p_scenarios.h"

/* ---------------------------------------------------------------- */
/*
 * The IOMMU scenarios: QEMU's edu device is the peer (the companion binds
 * it), behind QEMU's intel-iommu (x86) or SMMUv3 (arm64).  edu's DMA mask is 28 bits and its buffer
 * 4096 bytes (QEMU docs/specs/edu.txt); a DMAR fault is reported by the
 * guest's intel-iommu driver as
 *   "DMAR: [DMA Write NO_PASID] Request device [bb:dd.f] fault addr 0x..."
 * with the faulting page's address.
 */
#define EDU_DMA_MASK	((1ULL << 28) - 1)
#define IOMMU_XFER	1024	/* bytes per transfer: TCG is slow, keep it small */

/* 1 from a scenario: skipped, reason says what the VM lacks */
#define SKIP(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return 1; } while (0)

struct peer {
	char bdf[32];
	unsigned int domain, bus, devfn;
};

int sysfs_line(const char *dir, const char *file, char *buf, size_t n)
{
	char path[512];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fgets(buf, (int)n, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/*
 * The edu device, bound by the companion and translated by an IOMMU: 0, or
 * 1 (skip: the VM lacks edu or an IOMMU), or -1 (fail).
 */
static int iommu_peer(struct ctx *c, struct peer *pr)
{
	struct gpucts_p2p_version v;
	struct dirent *de;
	char buf[64];
	unsigned int dev, fn;
	int found = 0;
	DIR *d;

	d = opendir("/sys/bus/pci/devices");
	CHECK(d, "opendir /sys/bus/pci/devices: %s", strerror(errno));
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (sysfs_line(de->d_name, "vendor", buf, sizeof(buf)) ||
		    strtoul(buf, NULL, 16) != GPUCTS_P2P_PEER_VENDOR)
			continue;
		if (sysfs_line(de->d_name, "device", buf, sizeof(buf)) ||
		    strtoul(buf, NULL, 16) != GPUCTS_P2P_PEER_DEVICE)
			continue;
		snprintf(pr->bdf, sizeof(pr->bdf), "%.31s", de->d_name);
		found = 1;
	}
	closedir(d);
	if (!found)
		SKIP("capability edu: no QEMU edu device (PCI 1234:11e8) in the VM");
	CHECK(sscanf(pr->bdf, "%x:%x:%x.%x", &pr->domain, &pr->bus, &dev, &fn) == 4,
	      "PCI address %s", pr->bdf);
	pr->devfn = dev << 3 | fn;
	if (sysfs_line(pr->bdf, "iommu_group/type", buf, sizeof(buf)))
		SKIP("capability iommu (intel-iommu or SMMUv3): %s is in no IOMMU group", pr->bdf);
	/* DMA or DMA-FQ translate; identity (pass-through) does not */
	if (strncmp(buf, "DMA", 3))
		SKIP("capability iommu (intel-iommu or SMMUv3): the IOMMU domain of %s is %s", pr->bdf, buf);
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_GET_VERSION, &v), "GET_VERSION");
	CHECK(v.minor >= 2 && (v.caps & GPUCTS_P2P_CAP_PEER_DMA),
	      "edu at %s but the companion reports no DMA peer (minor %u caps %#x)",
	      pr->bdf, v.minor, v.caps);
	return 0;
}

static int dma_map_peer(int fd, uint64_t h, const struct peer *pr, uint64_t *addrs,
			uint32_t n, struct gpucts_p2p_dma_map *d)
{
	memset(d, 0, sizeof(*d));
	d->handle = h;
	d->pci_domain = pr->domain;
	d->pci_bus = pr->bus;
	d->pci_devfn = pr->devfn;
	d->direction = 0;	/* Tegra: bidirectional */
	d->addrs_ptr = (uintptr_t)addrs;
	d->addrs_count = n;
	return xioctl(fd, GPUCTS_P2P_IOC_DMA_MAP, d);
}

static int peer_dma(int fd, uint64_t h, uint64_t offset, uint32_t len,
		    uint32_t peer_offset, uint32_t flags, uint64_t *bus)
{
	struct gpucts_p2p_peer_dma p = {
		.handle = h, .offset = offset, .length = len,
		.peer_offset = peer_offset, .flags = flags,
	};
	int r = xioctl(fd, GPUCTS_P2P_IOC_PEER_DMA, &p);

	if (!r && bus)
		*bus = p.bus_addr;
	return r;
}

/*
 * The IOMMU's report of a fault by the peer, in either driver's words.
 * intel-iommu logs one record:
 *   "DMAR: [DMA Write NO_PASID] Request device [bb:dd.f] fault addr 0x..."
 * arm-smmu-v3 logs "event 0x10 received:" and then the event's four 64-bit
 * words, one record each (drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c).  In
 * a translation fault (F_TRANSLATION, 0x10) word 0 holds the StreamID in its
 * upper half (a PCI requester ID on QEMU's virt), word 1 bit 35 is RnW (1: a
 * read) and word 2 the input address.
 */
#define SMMU_F_TRANSLATION	0x10
#define SMMU_EVT_RNW		(1ULL << 35)

struct smmu_event {
	int words;		/* -1: not inside an event */
	uint64_t w[4];
};

/* 1 when rec completes an SMMU translation fault of kind by the peer at addr's page */
static int smmu_fault_record(struct smmu_event *ev, const char *rec,
			     const struct peer *pr, const char *kind, uint64_t addr)
{
	const char *msg = strchr(rec, ';');
	unsigned long long word;
	unsigned int id;
	int is_read;

	msg = msg ? msg + 1 : rec;
	if (!strstr(msg, "arm-smmu-v3"))
		return 0;
	if (sscanf(strstr(msg, ": ") ? strstr(msg, ": ") + 2 : msg,
		   "event 0x%x received", &id) == 1) {
		ev->words = id == SMMU_F_TRANSLATION ? 0 : -1;
		return 0;
	}
	if (ev->words < 0 || !strstr(msg, ": "))
		return 0;
	msg = strstr(msg, ": ") + 2;
	if (!strncmp(msg, "\\x09", 4))
		msg += 4;	/* /dev/kmsg escapes the driver's leading tab */
	if (sscanf(msg, " 0x%llx", &word) != 1)
		return 0;
	ev->w[ev->words++] = word;
	if (ev->words < 4)
		return 0;
	ev->words = -1;
	is_read = !!(ev->w[1] & SMMU_EVT_RNW);
	if ((ev->w[0] >> 32) != (uint64_t)(pr->bus << 8 | pr->devfn))
		return 0;
	if ((strstr(kind, "Write") && is_read) || (strstr(kind, "Read") && !is_read))
		return 0;
	return (ev->w[2] & ~0xfffULL) == (addr & ~0xfffULL);
}

/* Whether /dev/kmsg (opened at the end) gets an IOMMU fault of this kind for
 * the page of addr from the peer, within a few seconds.
 */
static int wait_dmar_fault_for(int kmsg, const struct peer *pr, const char *kind,
			       uint64_t addr, char *seen, size_t seen_len, int max_tries)
{
	char want_dev[32], want_addr[40], rec[1024];
	struct smmu_event ev = { .words = -1 };
	int tries;

	snprintf(want_dev, sizeof(want_dev), "Request device [%02x:%02x.%u]", pr->bus,
		 pr->devfn >> 3, pr->devfn & 7);
	snprintf(want_addr, sizeof(want_addr), "fault addr 0x%llx",
		 (unsigned long long)(addr & ~0xfffULL));
	for (tries = 0; tries < max_tries; tries++) {
		ssize_t n = read(kmsg, rec, sizeof(rec) - 1);

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: read on */
		if (n <= 0) {
			usleep(10000);
			continue;
		}
		rec[n] = 0;
		if (strstr(rec, "DMAR: [") && strstr(rec, kind) &&
		    strstr(rec, want_dev) && strstr(rec, want_addr)) {
			const char *msg = strchr(rec, ';');

			snprintf(seen, seen_len, "%.200s", msg ? msg + 1 : rec);
			seen[strcspn(seen, "\n")] = 0;
			return 1;
		}
		if (smmu_fault_record(&ev, rec, pr, kind, addr)) {
			snprintf(seen, seen_len,
				 "SMMUv3 F_TRANSLATION (%s) StreamID 0x%llx input address 0x%llx",
				 ev.w[1] & SMMU_EVT_RNW ? "read" : "write",
				 (unsigned long long)(ev.w[0] >> 32),
				 (unsigned long long)ev.w[2]);
			return 1;
		}
	}
	return 0;
}

static int wait_dmar_fault(int kmsg, const struct peer *pr, const char *kind,
			   uint64_t addr, char *seen, size_t seen_len)
{
	return wait_dmar_fault_for(kmsg, pr, kind, addr, seen, seen_len, 300);
}

struct inflight {
	int gp;
	uint64_t handle;
	volatile int started, done, ret;
};

static void *inflight_read(void *arg)
{
	struct inflight *f = arg;

	f->started = 1;
	f->ret = peer_dma(f->gp, f->handle, 0, IOMMU_XFER, 0, 0, NULL);
	f->done = 1;
	return NULL;
}

/*
 * §3.4 / §2.3: the callback waits for the peer's transfer in flight, and the
 * pages are unmapped only after it returns: a free during edu's DMA read
 * leaves the transfer whole (no DMAR fault, edu's buffer holds the source's
 * bytes, copied out to a second allocation to be read).
 */
int sc_iommu_free_waits_for_peer_dma(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_pin pa, pb;
	struct inflight f;
	struct peer pr;
	pthread_t t;
	char seen[256];
	uint64_t va, vb, dma[1] = { 0 }, k;
	volatile uint64_t *w;
	void *m;
	int r, err, kmsg, tries, overlapped = 0;

	r = iommu_peer(c, &pr);
	if (r)
		return r;
	CHECK_OK(tp_alloc(c->tp, align_bytes, &vb, NULL), "alloc b");
	CHECK_OK(gp_pin(c->gp, vb, align_bytes, 0, &pb), "pin b");
	m = gp_mmap(c->gp, &pb, pb.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	w = m;
	CHECK_OK(dma_map_peer(c->gp, pb.handle, &pr, NULL, 0, &d), "DMA_MAP b for edu");
	for (tries = 0; tries < 5 && !overlapped; tries++) {
		CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc a");
		CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &pa), "pin a");
		CHECK_OK(dma_map_peer(c->gp, pa.handle, &pr, dma, 1, &d), "DMA_MAP a for edu");
		kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		CHECK(kmsg >= 0, "open /dev/kmsg: %s", strerror(errno));
		lseek(kmsg, 0, SEEK_END);
		memset(&f, 0, sizeof(f));
		f.gp = c->gp;
		f.handle = pa.handle;
		CHECK(!pthread_create(&t, NULL, inflight_read, &f), "pthread_create");
		while (!f.started)
			usleep(1000);
		usleep(20000);	/* edu's transfer takes 100 ms of guest time */
		overlapped = !f.done;
		CHECK(tp_free(c->tp, va) == 1, "free fired no callback");
		pthread_join(t, NULL);
		if (f.ret == -ESTALE) {
			overlapped = 0;	/* revoked before the transfer began: again */
		} else {
			CHECK(f.ret == 0, "PEER_DMA during the free: %s", strerror(-f.ret));
			CHECK(!wait_dmar_fault_for(kmsg, &pr, "DMA", dma[0], seen, sizeof(seen), 50),
			      "the transfer in flight faulted: %s", seen);
		}
		close(kmsg);
		CHECK_OK(gp_unpin(c->gp, pa.handle, NULL), "unpin a");
	}
	CHECK(overlapped, "the free never overlapped the transfer in 5 tries");
	/* edu's buffer -> b, whose own bytes differ from a's */
	CHECK_OK(peer_dma(c->gp, pb.handle, 0, IOMMU_XFER, 0, GPUCTS_P2P_PEER_DMA_TO_MEM, NULL),
		 "PEER_DMA edu -> b");
	for (k = 0; k < IOMMU_XFER / 8; k++)
		CHECK(w[k] == GPUCTS_TESTPROV_PATTERN(va + 8 * k),
		      "word %llu: 0x%llx, the freed source held 0x%llx", (unsigned long long)k,
		      (unsigned long long)w[k],
		      (unsigned long long)GPUCTS_TESTPROV_PATTERN(va + 8 * k));
	munmap(m, pb.pinned_length);
	CHECK_OK(gp_unpin(c->gp, pb.handle, NULL), "unpin b");
	tp_free(c->tp, vb);
	CHECK(tp_stats(c->tp).dma_mappings == 0, "mappings left in the provider");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

int sc_iommu_iova_not_physical(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_pin p;
	struct peer pr;
	uint64_t va, phys[2] = { 0 }, dma[2] = { 0 };
	int r, i;

	r = iommu_peer(c, &pr);
	if (r)
		return r;
	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pt(c->gp, p.handle, &t, phys, 2), "PAGE_TABLE");
	CHECK_OK(dma_map_peer(c->gp, p.handle, &pr, dma, 2, &d), "DMA_MAP for edu");
	CHECK(d.compatible == 1 && d.entries == 2, "compatible %u entries %u",
	      d.compatible, d.entries);
	for (i = 0; i < 2; i++) {
		/* §4.3: dma_map_pages gives the peer's I/O addresses */
		CHECK(dma[i] != phys[i], "entry %d: bus address 0x%llx is the physical address",
		      i, (unsigned long long)dma[i]);
		CHECK(dma[i] + align_bytes - 1 <= EDU_DMA_MASK,
		      "entry %d: IOVA 0x%llx beyond edu's 28-bit DMA mask", i,
		      (unsigned long long)dma[i]);
		CHECK(!(dma[i] & 0xfff), "entry %d: IOVA 0x%llx not page aligned", i,
		      (unsigned long long)dma[i]);
	}
	CHECK(dma[0] != dma[1], "both entries at IOVA 0x%llx", (unsigned long long)dma[0]);
	CHECK(tp_stats(c->tp).dma_mappings == 1, "provider holds %u mappings",
	      tp_stats(c->tp).dma_mappings);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_stats(c->tp).dma_mappings == 0, "unpin left the mapping");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	tp_free(c->tp, va);
	return 0;
}

int sc_iommu_dma_roundtrip(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_dma_unmap du;
	struct gpucts_p2p_pin p;
	struct peer pr;
	const uint64_t src = 512, dst = align_bytes + 256;
	uint64_t va, dma[2] = { 0 }, bus, k;
	volatile uint64_t *w;
	void *m;
	int r, err;

	r = iommu_peer(c, &pr);
	if (r)
		return r;
	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), "pin");
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	w = m;
	CHECK_OK(dma_map_peer(c->gp, p.handle, &pr, dma, 2, &d), "DMA_MAP for edu");
	/* memory -> edu's buffer (a DMA read through the IOMMU) ... */
	CHECK_OK(peer_dma(c->gp, p.handle, src, IOMMU_XFER, 8, 0, &bus), "PEER_DMA to edu");
	CHECK(bus == dma[0] + src, "engine given 0x%llx, mapping says 0x%llx",
	      (unsigned long long)bus, (unsigned long long)(dma[0] + src));
	/* ... and back into the other GPU page (a DMA write) */
	CHECK_OK(peer_dma(c->gp, p.handle, dst, IOMMU_XFER, 8, GPUCTS_P2P_PEER_DMA_TO_MEM, &bus),
		 "PEER_DMA from edu");
	CHECK(bus == dma[1] + 256, "engine given 0x%llx, mapping says 0x%llx",
	      (unsigned long long)bus, (unsigned long long)(dma[1] + 256));
	/* the provider's fill pattern of the source bytes, now at the destination */
	for (k = 0; k < IOMMU_XFER / 8; k++) {
		uint64_t got = w[dst / 8 + k], want = GPUCTS_TESTPROV_PATTERN(va + src + 8 * k);

		CHECK(got == want, "word %llu after the round trip: 0x%llx, source held 0x%llx",
		      (unsigned long long)k, (unsigned long long)got, (unsigned long long)want);
	}
	/* nothing beside the destination changed, the source neither */
	CHECK(w[dst / 8 - 1] == GPUCTS_TESTPROV_PATTERN(va + dst - 8), "word before the copy");
	CHECK(w[(dst + IOMMU_XFER) / 8] == GPUCTS_TESTPROV_PATTERN(va + dst + IOMMU_XFER),
	      "word after the copy");
	if (check_pattern(m, va, align_bytes))
		return -1;
	/* the engine's limits, refused before it runs */
	CHECK_ERR(peer_dma(c->gp, p.handle, align_bytes - 8, 16, 0, 0, NULL), ERANGE,
		  "transfer across two page-table entries");
	CHECK_ERR(peer_dma(c->gp, p.handle, 2 * align_bytes, 8, 0, 0, NULL), ERANGE,
		  "transfer past the pinned range");
	CHECK_ERR(peer_dma(c->gp, p.handle, 0, 96, 4000, 0, NULL), EINVAL,
		  "transfer reaching the end of edu's buffer");
	CHECK_ERR(peer_dma(c->gp, p.handle, 0, 8, 0, GPUCTS_P2P_PEER_DMA_RAW, NULL), EINVAL,
		  "RAW with a handle");
	du.handle = p.handle;
	CHECK_OK(xioctl(c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du), "DMA_UNMAP");
	CHECK_ERR(peer_dma(c->gp, p.handle, 0, 8, 0, 0, NULL), ENODEV, "PEER_DMA unmapped");
	munmap(m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_stats(c->tp).dma_mappings == 0, "mapping left in the provider");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	tp_free(c->tp, va);
	return 0;
}

/*
 * After revocation the module refuses the handle, and a peer that kept a
 * revoked IOVA is stopped by the IOMMU: the fault is logged and the pages,
 * still held by a second pin, keep their bytes.  Desktop: the second pin is
 * persistent and the free revokes the first (§1.10, §2.3); Tegra (no
 * persistent API): both are ordinary and the first is revoked by its
 * put_pages, which fires the callback there (§4.4.3).
 */
int sc_iommu_stale_iova_faults_after_revoke(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin keep, rev;
	struct peer pr;
	char seen[256];
	uint64_t va, dma[2] = { 0 }, k;
	volatile uint64_t *w;
	void *m;
	int r, err, kmsg;

	r = iommu_peer(c, &pr);
	if (r)
		return r;
	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, tegra ? 0 : GPUCTS_P2P_PIN_PERSISTENT,
			&keep), "pin that keeps the pages");
	m = gp_mmap(c->gp, &keep, keep.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	w = m;
	CHECK_OK(gp_pin(c->gp, va, 2 * align_bytes, 0, &rev), "pin to revoke");
	CHECK_OK(dma_map_peer(c->gp, rev.handle, &pr, dma, 2, &d), "DMA_MAP for edu");
	/* edu's buffer now holds page 0's bytes, not page 1's */
	CHECK_OK(peer_dma(c->gp, rev.handle, 0, IOMMU_XFER, 0, 0, NULL), "PEER_DMA to edu");

	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(kmsg >= 0, "open /dev/kmsg: %s", strerror(errno));
	lseek(kmsg, 0, SEEK_END);
	if (!tegra) {
		CHECK(tp_free(c->tp, va) == 1, "free fired no callback for the ordinary pin");
		CHECK_OK(gp_events(c->gp, rev.handle, &e), "EVENTS");
		CHECK(e.state == GPUCTS_P2P_STATE_REVOKED && e.callbacks == 1,
		      "state %u callbacks %u", e.state, e.callbacks);
		/* the module issues no DMA for a revoked handle */
		CHECK_ERR(peer_dma(c->gp, rev.handle, 0, 8, 0, GPUCTS_P2P_PEER_DMA_TO_MEM, NULL),
			  ESTALE, "PEER_DMA on the revoked handle");
	} else {
		CHECK_OK(gp_unpin(c->gp, rev.handle, &u), "unpin");
		CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED_DURING && u.callbacks == 1,
		      "result %u callbacks %u", u.result, u.callbacks);
		CHECK_ERR(peer_dma(c->gp, rev.handle, 0, 8, 0, GPUCTS_P2P_PEER_DMA_TO_MEM, NULL),
			  ENOENT, "PEER_DMA on the released handle");
	}
	CHECK(tp_stats(c->tp).dma_mappings == 0, "the IOVAs are still mapped");
	/*
	 * A peer still holding the IOVAs: read 8 bytes of page 0, then write page
	 * 0's bytes to page 1.  The read comes first and is short because
	 * arm-smmu-v3 logs a fault per access (edu's engine moves 4 bytes at a
	 * time) and rate-limits its log to 10 events in 5 s: a 1024-byte write
	 * first would leave the read's event unlogged.
	 */
	CHECK_OK(peer_dma(c->gp, 0, dma[0], 8, 2048, GPUCTS_P2P_PEER_DMA_RAW, NULL),
		 "raw PEER_DMA read from the revoked IOVA");
	r = wait_dmar_fault(kmsg, &pr, "DMA Read", dma[0], seen, sizeof(seen));
	if (r)
		printf("# iommu: %s\n", seen);
	CHECK(r, "no IOMMU fault logged for the read from revoked IOVA 0x%llx",
	      (unsigned long long)dma[0]);
	CHECK_OK(peer_dma(c->gp, 0, dma[1], IOMMU_XFER, 0,
			  GPUCTS_P2P_PEER_DMA_RAW | GPUCTS_P2P_PEER_DMA_TO_MEM, NULL),
		 "raw PEER_DMA write to the revoked IOVA");
	r = wait_dmar_fault(kmsg, &pr, "DMA Write", dma[1], seen, sizeof(seen));
	close(kmsg);
	if (r)
		printf("# iommu: %s\n", seen);
	CHECK(r, "no IOMMU fault logged for the write to revoked IOVA 0x%llx",
	      (unsigned long long)dma[1]);
	/* no page took the write: page 1 holds its own fill pattern, every word */
	for (k = 0; k < IOMMU_XFER / 8; k++) {
		uint64_t got = w[align_bytes / 8 + k];

		CHECK(got == GPUCTS_TESTPROV_PATTERN(va + align_bytes + 8 * k),
		      "word %llu of page 1 changed to 0x%llx after the faulted write",
		      (unsigned long long)k, (unsigned long long)got);
	}
	if (check_pattern(m, va, 2 * align_bytes))
		return -1;
	munmap(m, keep.pinned_length);
	CHECK_OK(gp_unpin(c->gp, keep.handle, &u), "unpin the keeping pin");
	CHECK(u.result == (tegra ? GPUCTS_P2P_UNPIN_REVOKED_DURING : GPUCTS_P2P_UNPIN_PUT),
	      "result %u", u.result);
	if (tegra)
		tp_free(c->tp, va);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}
