// SPDX-License-Identifier: GPL-2.0
/*
 * p2p_scenarios: drives /dev/gpucts (the companion) against
 * /dev/gpucts_testprov (the test provider) and prints KTAP.
 *
 *   p2p_scenarios desktop|tegra
 *
 * Expected values come from the GPUDirect document (64 KB pinning on the
 * desktop, §3.2; 4 KB and a callback on every put_pages on Tegra, §4.4.3),
 * from the errno contract in gpucts_p2p.h, and from the provider's own
 * account (its allocations, UUID, fill pattern and pin counts), never from
 * the companion's output alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "gpucts_p2p.h"
#include "gpucts_testprov.h"

static int tegra;
static uint64_t align_bytes;	/* from the spec, not from the module */
static char reason[512];

#define FAIL(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return -1; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)
/* a call expected to fail with exactly errno e */
#define CHECK_ERR(call, e, what) do { int r_ = (call); \
	if (r_ != -(e)) FAIL("%s: got %d (%s), want -%s", what, r_, \
			      r_ < 0 ? strerror(-r_) : "success", #e); } while (0)
#define CHECK_OK(call, what) do { int r_ = (call); \
	if (r_) FAIL("%s: %s", what, strerror(-r_)); } while (0)

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int open_gp(void)
{
	return open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

static int open_tp(void)
{
	return open(GPUCTS_TESTPROV_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

static int tp_alloc(int tp, uint64_t len, uint64_t *va, uint8_t *uuid)
{
	struct gpucts_testprov_alloc a = { .length = len };
	int r = xioctl(tp, GPUCTS_TESTPROV_IOC_ALLOC, &a);

	if (!r) {
		*va = a.va;
		if (uuid)
			memcpy(uuid, a.gpu_uuid, 16);
	}
	return r;
}

static int tp_free(int tp, uint64_t va)
{
	struct gpucts_testprov_free f = { .va = va };
	int r = xioctl(tp, GPUCTS_TESTPROV_IOC_FREE, &f);

	return r ? r : (int)f.callbacks;
}

static int tp_inject(int tp, uint32_t enomem, uint32_t badver, uint32_t delay)
{
	struct gpucts_testprov_inject i = {
		.enomem = enomem, .bad_version = badver, .put_delay_us = delay,
	};
	return xioctl(tp, GPUCTS_TESTPROV_IOC_INJECT, &i);
}

/* errno of the first STATS ioctl that failed in the running scenario (0: none) */
static int stats_err;

/*
 * The provider's counters. A failed STATS ioctl is recorded in stats_err and
 * fails the scenario (main checks it after each one), whatever the counters
 * returned then (zeros) made the scenario's own checks conclude.
 */
static struct gpucts_testprov_stats tp_stats(int tp)
{
	struct gpucts_testprov_stats s;
	int r;

	memset(&s, 0, sizeof(s));
	r = xioctl(tp, GPUCTS_TESTPROV_IOC_STATS, &s);
	if (r && !stats_err)
		stats_err = -r;
	return s;
}

static int gp_pin(int fd, uint64_t va, uint64_t len, uint32_t flags,
		  struct gpucts_p2p_pin *p)
{
	memset(p, 0, sizeof(*p));
	p->va = va;
	p->length = len;
	p->flags = flags;
	return xioctl(fd, GPUCTS_P2P_IOC_PIN, p);
}

static int gp_unpin(int fd, uint64_t h, struct gpucts_p2p_unpin *u)
{
	struct gpucts_p2p_unpin tmp;

	if (!u)
		u = &tmp;
	memset(u, 0, sizeof(*u));
	u->handle = h;
	return xioctl(fd, GPUCTS_P2P_IOC_UNPIN, u);
}

static int gp_events(int fd, uint64_t h, struct gpucts_p2p_events *e)
{
	memset(e, 0, sizeof(*e));
	e->handle = h;
	return xioctl(fd, GPUCTS_P2P_IOC_EVENTS, e);
}

static int gp_pt(int fd, uint64_t h, struct gpucts_p2p_page_table *t,
		 uint64_t *addrs, uint32_t n)
{
	memset(t, 0, sizeof(*t));
	t->handle = h;
	t->addrs_ptr = (uintptr_t)addrs;
	t->addrs_count = n;
	return xioctl(fd, GPUCTS_P2P_IOC_PAGE_TABLE, t);
}

static void *gp_mmap(int fd, const struct gpucts_p2p_pin *p, size_t len, int *err)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)p->mmap_offset);

	*err = m == MAP_FAILED ? -errno : 0;
	return m == MAP_FAILED ? NULL : m;
}

/* Read one word, reporting SIGBUS instead of dying. */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void on_sigbus(int sig)
{
	(void)sig;
	if (bus_armed)
		siglongjmp(bus_jmp, 1);
	_exit(99);
}

static int read_word(volatile uint64_t *p, uint64_t *val)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int got_bus = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1) == 0) {
		bus_armed = 1;
		*val = *p;
	} else {
		got_bus = 1;
	}
	bus_armed = 0;
	sigaction(SIGBUS, &old, NULL);
	return got_bus ? -1 : 0;
}

/* The provider fills word at GPU VA x with GPUCTS_TESTPROV_PATTERN(x). */
static int check_pattern(const void *map, uint64_t gpu_va, size_t len)
{
	const volatile uint64_t *w = map;
	size_t i;

	for (i = 0; i < len / 8; i += 509) {	/* a prime stride over the range */
		uint64_t v;

		if (read_word((volatile uint64_t *)&w[i], &v))
			FAIL("SIGBUS reading a live mapping at +%zu", i * 8);
		if (v != GPUCTS_TESTPROV_PATTERN(gpu_va + i * 8))
			FAIL("word at GPU VA 0x%llx: 0x%llx, provider wrote 0x%llx",
			     (unsigned long long)(gpu_va + i * 8),
			     (unsigned long long)v,
			     (unsigned long long)GPUCTS_TESTPROV_PATTERN(gpu_va + i * 8));
	}
	return 0;
}

struct ctx {
	int gp, tp;
};

/* ---------------------------------------------------------------- */

static int sc_version(struct ctx *c)
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

static int sc_pin_unpin_aligned(struct ctx *c)
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

static int sc_pin_unaligned_rounded(struct ctx *c)
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

static int sc_pin_zero_length(struct ctx *c)
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

static int sc_provider_rejects_unaligned(struct ctx *c)
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

static int sc_page_table(struct ctx *c)
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

static int sc_mmap_cpu_access(struct ctx *c)
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

static int sc_persistent_survives_free(struct ctx *c)
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

static int sc_revoked_on_free(struct ctx *c)
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

static int sc_two_pins_one_revoked(struct ctx *c)
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

static int sysfs_line(const char *dir, const char *file, char *buf, size_t n);

/* Whether an IOMMU translates for the PCI device (its group's domain is DMA or DMA-FQ). */
static int peer_translated(const char *bdf)
{
	char buf[64];

	return !sysfs_line(bdf, "iommu_group/type", buf, sizeof(buf)) &&
	       !strncmp(buf, "DMA", 3);
}

static int sc_dma_map_unmap(struct ctx *c)
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

static int sc_dma_mapping_freed_by_callback(struct ctx *c)
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

static int sc_bad_args(struct ctx *c)
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

static int sc_other_process_eacces(struct ctx *c)
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

static int drop_cap(int cap)
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

static int sc_addresses_need_cap_sys_admin(struct ctx *c)
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

static int sc_injected_enomem(struct ctx *c)
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

static int sc_incompatible_version(struct ctx *c)
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
	/* the provider bumps the major version (gpudirect §4.3 macro) */
	CHECK((t.version >> 16) == 2, "version 0x%x", t.version);
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

static int sc_revoke_races_unpin(struct ctx *c)
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

static int sc_revoke_with_ioctls_in_flight(struct ctx *c)
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

static int sc_process_killed_with_pins(struct ctx *c)
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

static int sc_fd_closed_with_mapping(struct ctx *c)
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
static int sc_put_pages_callback_semantics(struct ctx *c)
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

static int sysfs_line(const char *dir, const char *file, char *buf, size_t n)
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
static int sc_iommu_free_waits_for_peer_dma(struct ctx *c)
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

static int sc_iommu_iova_not_physical(struct ctx *c)
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

static int sc_iommu_dma_roundtrip(struct ctx *c)
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
static int sc_iommu_stale_iova_faults_after_revoke(struct ctx *c)
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

/* ---------------------------------------------------------------- */
/* The driver's contract, modelled by the provider (gpudirect §1.10, §2.3, §3.2). */

/* §1.10: get_pages no longer accepts a NULL callback (both flavours). */
static int sc_get_pages_null_callback_refused(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint32_t pins = tp_stats(c->tp).pins;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_ERR(gp_pin(c->gp, va, align_bytes, GPUCTS_P2P_PIN_NO_CALLBACK, &p), EINVAL,
		  "get_pages with a NULL callback");
	CHECK(tp_stats(c->tp).pins == pins, "provider holds %u pins, %u before",
	      tp_stats(c->tp).pins, pins);
	CHECK_ERR(gp_pin(c->gp, va, align_bytes,
			 GPUCTS_P2P_PIN_NO_CALLBACK | GPUCTS_P2P_PIN_PERSISTENT, &p), EINVAL,
		  "NO_CALLBACK with PERSISTENT");
	/* an ordinary pin of the same range still works */
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin with the callback");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	CHECK(tp_free(c->tp, va) == 0, "free after unpin fired a callback");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/* A freed VA is no longer mapped: get_pages refuses it, nothing is pinned. */
static int sc_pin_of_freed_va_einval(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint32_t pins = tp_stats(c->tp).pins;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK(tp_free(c->tp, va) == 0, "free of an unpinned allocation fired callbacks");
	CHECK_ERR(gp_pin(c->gp, va, 2 * align_bytes, 0, &p), EINVAL, "pin of the freed VA");
	CHECK_ERR(gp_pin(c->gp, va + align_bytes, align_bytes, 0, &p), EINVAL,
		  "pin inside the freed VA");
	CHECK(tp_stats(c->tp).pins == pins, "provider holds %u pins, %u before",
	      tp_stats(c->tp).pins, pins);
	return 0;
}

/*
 * Two pins over the same GPU pages share them (§3.2: pinning maps BAR pages;
 * the overlap is the same pages in both page tables); releasing the smaller
 * one leaves the larger intact, overlap included.
 */
static int sc_overlapping_pins_partial_unpin(struct ctx *c)
{
	struct gpucts_p2p_page_table ta, tb;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin a, b;
	uint64_t va, pa[3] = { 0 }, pb[1] = { 0 };
	uint32_t pins = tp_stats(c->tp).pins;
	void *m;
	int err;

	CHECK_OK(tp_alloc(c->tp, 3 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, 3 * align_bytes, 0, &a), "pin of 3 pages");
	CHECK_OK(gp_pin(c->gp, va + align_bytes, align_bytes, 0, &b), "pin of the middle page");
	CHECK(tp_stats(c->tp).pins == pins + 2, "provider holds %u pins",
	      tp_stats(c->tp).pins);
	CHECK_OK(gp_pt(c->gp, a.handle, &ta, pa, 3), "PAGE_TABLE a");
	CHECK_OK(gp_pt(c->gp, b.handle, &tb, pb, 1), "PAGE_TABLE b");
	CHECK(ta.entries == 3 && tb.entries == 1, "entries %u and %u", ta.entries, tb.entries);
	CHECK(pb[0] == pa[1], "the overlap is page 0x%llx in one table, 0x%llx in the other",
	      (unsigned long long)pb[0], (unsigned long long)pa[1]);
	m = gp_mmap(c->gp, &a, a.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	CHECK_OK(gp_unpin(c->gp, b.handle, &u), "unpin of the middle page");
	/* desktop put_pages fires no callback; Tegra's fires b's only (§4.4.3) */
	CHECK(u.result == (tegra ? GPUCTS_P2P_UNPIN_REVOKED_DURING : GPUCTS_P2P_UNPIN_PUT) &&
	      u.callbacks == (tegra ? 1u : 0u), "result %u callbacks %u", u.result, u.callbacks);
	CHECK_OK(gp_events(c->gp, a.handle, &e), "EVENTS a");
	CHECK(e.state == GPUCTS_P2P_STATE_PINNED && e.callbacks == 0 && e.zaps == 0,
	      "the larger pin: state %u callbacks %u zaps %u", e.state, e.callbacks, e.zaps);
	CHECK(tp_stats(c->tp).pins == pins + 1, "provider holds %u pins after the partial unpin",
	      tp_stats(c->tp).pins);
	if (check_pattern(m, va, 3 * align_bytes))
		return -1;
	munmap(m, a.pinned_length);
	CHECK_OK(gp_unpin(c->gp, a.handle, NULL), "unpin of 3 pages");
	CHECK(tp_free(c->tp, va) == 0, "free after both unpins fired callbacks");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/*
 * §2.3: the callback also runs when the context owning the memory goes
 * (cuCtxDestroy), not only on cuMemFree.  The provider's context is an open
 * /dev/gpucts_testprov: closing it destroys every allocation of it.
 */
static int sc_revoked_on_context_destroy(struct ctx *c)
{
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p, q;
	uint64_t va, vb, word;
	uint32_t allocs = tp_stats(c->tp).allocs;
	void *m;
	int ctx2, err;

	ctx2 = open_tp();
	CHECK(ctx2 >= 0, "open a second provider context: %s", strerror(errno));
	CHECK_OK(tp_alloc(ctx2, align_bytes, &va, NULL), "alloc in the context");
	CHECK_OK(tp_alloc(ctx2, align_bytes, &vb, NULL), "second alloc in the context");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin a");
	CHECK_OK(gp_pin(c->gp, vb, align_bytes, 0, &q), "pin b");
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	CHECK(!read_word(m, &word) && word == GPUCTS_TESTPROV_PATTERN(va), "first word 0x%llx",
	      (unsigned long long)word);
	close(ctx2);	/* the context goes, with both allocations */
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS a");
	CHECK(e.state == GPUCTS_P2P_STATE_REVOKED && e.callbacks == 1 && e.zaps == 1,
	      "a: state %u callbacks %u zaps %u", e.state, e.callbacks, e.zaps);
	CHECK_OK(gp_events(c->gp, q.handle, &e), "EVENTS b");
	CHECK(e.state == GPUCTS_P2P_STATE_REVOKED && e.callbacks == 1,
	      "b: state %u callbacks %u", e.state, e.callbacks);
	CHECK(read_word(m, &word), "the mapping still reads after the context was destroyed");
	munmap(m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin a");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "a: result %u", u.result);
	CHECK_OK(gp_unpin(c->gp, q.handle, &u), "unpin b");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "b: result %u", u.result);
	CHECK(tp_stats(c->tp).allocs == allocs, "the context's allocations kept: %u, %u before",
	      tp_stats(c->tp).allocs, allocs);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

struct scenario {
	const char *name;
	int (*fn)(struct ctx *c);
};

/*
 * The node admits no one outside its owner and group (gpucts_p2p.h: mode
 * 0660 by default): a process with another uid and gid, no supplementary
 * groups, gets EACCES from open(2), as path_resolution(7) rules.
 */
static int sc_dev_node_unprivileged_eacces(struct ctx *c)
{
	struct stat st;
	pid_t pid;
	int ws;

	(void)c;
	CHECK(stat(GPUCTS_P2P_DEVICE_PATH, &st) == 0, "stat: %s", strerror(errno));
	CHECK(S_ISCHR(st.st_mode), "not a character device: %o", st.st_mode);
	CHECK((st.st_mode & 0007) == 0, "others may access the node: mode %03o",
	      st.st_mode & 0777);
	CHECK(st.st_uid != 65534 && st.st_gid != 65534,
	      "the node belongs to nobody/nogroup (%u:%u)", st.st_uid, st.st_gid);
	pid = fork();
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (geteuid() != 65534 || getegid() != 65534)
			_exit(11);
		fd = open_gp();
		if (fd >= 0)
			_exit(1);
		_exit(errno == EACCES ? 0 : 2);
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws), "child died");
	CHECK(WEXITSTATUS(ws) == 0,
	      "unprivileged open: step %d (1 opened, 2 not EACCES, 10 setresuid, 11 ids)",
	      WEXITSTATUS(ws));
	return 0;
}

/*
 * Pins are charged to RLIMIT_MEMLOCK as RDMA's ib_umem_get charges them
 * (mm->pinned_vm; CAP_IPC_LOCK exempt; ENOMEM beyond, as mlock(2)), and the
 * charge goes back on every path: unpin, revocation (the free callback),
 * release of the file.  A fresh process starts with nothing charged.
 */
static int sc_pin_charged_to_memlock(struct ctx *c)
{
	pid_t pid;
	int ws;

	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 2 * align_bytes, 2 * align_bytes };
		struct gpucts_p2p_pin p, pa, pb;
		struct gpucts_p2p_unpin u;
		uint64_t a, b, big;
		int gp = open_gp(), tp = open_tp();

		if (gp < 0 || tp < 0 || tp_alloc(tp, 2 * align_bytes, &a, NULL) ||
		    tp_alloc(tp, 2 * align_bytes, &b, NULL) ||
		    tp_alloc(tp, 4 * align_bytes, &big, NULL) ||
		    setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(20);
		/* CAP_IPC_LOCK: beyond the limit all the same */
		if (gp_pin(gp, big, 4 * align_bytes, 0, &p) ||
		    gp_unpin(gp, p.handle, NULL))
			_exit(1);
		if (drop_cap(CAP_IPC_LOCK))
			_exit(21);
		/* up to the limit, then one page beyond it */
		if (gp_pin(gp, a, 2 * align_bytes, 0, &pa))
			_exit(2);
		if (gp_pin(gp, b, align_bytes, 0, &pb) != -ENOMEM)
			_exit(3);
		if (tp_stats(tp).pins != 1)
			_exit(4);	/* the provider was asked anyway */
		if (gp_pin(gp, big, 4 * align_bytes, 0, &p) != -ENOMEM)
			_exit(5);
		/* unpin gives the charge back */
		if (gp_unpin(gp, pa.handle, NULL) ||
		    gp_pin(gp, b, 2 * align_bytes, 0, &pb))
			_exit(6);
		/* so does revocation, before the revoked handle is unpinned */
		if (tp_free(tp, b) != 1 || gp_pin(gp, a, 2 * align_bytes, 0, &pa))
			_exit(7);
		if (gp_unpin(gp, pb.handle, &u) || u.result != GPUCTS_P2P_UNPIN_REVOKED)
			_exit(8);
		if (gp_pin(gp, big, align_bytes, 0, &p) != -ENOMEM)
			_exit(9);
		/* and closing the file with the pin held */
		close(gp);
		gp = open_gp();
		if (gp < 0 || gp_pin(gp, a, 2 * align_bytes, 0, &pa) ||
		    gp_unpin(gp, pa.handle, NULL))
			_exit(10);
		if (stats_err)
			_exit(22);
		_exit(0);	/* exit frees the allocations */
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws), "child died");
	CHECK(WEXITSTATUS(ws) == 0,
	      "child step %d failed (1 CAP_IPC_LOCK bypass, 2 pin to the limit, 3/5 ENOMEM beyond, 4 provider asked, 6 unpin, 7 revocation, 8 revoked unpin, 9 limit still held, 10 release, 20-22 setup)",
	      WEXITSTATUS(ws));
	CHECK(tp_stats(c->tp).pins == 0, "the child's pins survived its exit");
	return 0;
}

/* ---- the driver's contract: ownership, tokens, versions (gpudirect §2.3, §2.6, §4.3) ---- */

static int tp_mode(int tp, uint32_t pt_version, uint32_t dma_version,
		   uint32_t get_delay_us, uint32_t stray)
{
	struct gpucts_testprov_mode m = {
		.pt_version = pt_version, .dma_version = dma_version,
		.get_delay_us = get_delay_us, .stray_callbacks = stray,
	};
	return xioctl(tp, GPUCTS_TESTPROV_IOC_MODE, &m);
}

static int gp_pin_tokens(int fd, uint64_t va, uint64_t len, uint64_t p2p,
			 uint32_t vas, struct gpucts_p2p_pin *p)
{
	memset(p, 0, sizeof(*p));
	p->va = va;
	p->length = len;
	p->p2p_token = p2p;
	p->va_space_token = vas;
	return xioctl(fd, GPUCTS_P2P_IOC_PIN, p);
}

static int wait_child(pid_t pid, const char *what)
{
	int st;

	if (pid < 0)
		FAIL("%s: fork: %s", what, strerror(errno));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		FAIL("%s: child died (status 0x%x)", what, st);
	if (WEXITSTATUS(st))
		FAIL("%s: child check %d failed", what, WEXITSTATUS(st));
	return 0;
}

/*
 * §2.6: "When no tokens are used, the NVIDIA driver limits the Kernel API to
 * the process which owns the memory allocation": another process, with its
 * own descriptor, pinning the owner's VA without tokens gets the driver's
 * EINVAL (the range is not in its VA space); the owner pins it.
 */
static int sc_pin_without_tokens_owner_only(struct ctx *c)
{
	struct gpucts_p2p_pin p;
	uint64_t va;
	pid_t pid;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_pin q;
		int g = open_gp();

		if (g < 0)
			_exit(1);
		if (gp_pin(g, va, align_bytes, 0, &q) != -EINVAL)
			_exit(2);
		close(g);
		_exit(0);
	}
	if (wait_child(pid, "pin from another process"))
		return -1;
	CHECK(tp_stats(c->tp).pins == 0, "the other process's pin holds %u pins",
	      tp_stats(c->tp).pins);
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "owner's pin");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "owner's unpin");
	tp_free(c->tp, va);
	return 0;
}

/*
 * §2.6: tokens authenticate: with the allocation's tokens any process may
 * pin ("the NVIDIA kernel driver doesn't perform any additional checks"),
 * with other tokens nobody may.  Tegra's API has no tokens (§4.4.2): the
 * module refuses them and the owner-only rule is the only one.
 */
static int sc_pin_with_tokens_must_match(struct ctx *c)
{
	struct gpucts_testprov_tokens tk = { 0 };
	struct gpucts_p2p_pin p;
	uint64_t va;
	pid_t pid;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	tk.va = va;
	CHECK_OK(xioctl(c->tp, GPUCTS_TESTPROV_IOC_TOKENS, &tk), "TOKENS");
	CHECK(tk.p2p_token && tk.va_space_token, "tokens 0x%llx/%u",
	      (unsigned long long)tk.p2p_token, tk.va_space_token);
	if (tegra) {
		CHECK_ERR(gp_pin_tokens(c->gp, va, align_bytes, tk.p2p_token,
					tk.va_space_token, &p), EINVAL, "tokens on Tegra");
		CHECK(tp_stats(c->tp).pins == 0, "pinned");
		tp_free(c->tp, va);
		return 0;
	}
	CHECK_ERR(gp_pin_tokens(c->gp, va, align_bytes, tk.p2p_token ^ 1,
				tk.va_space_token, &p), EINVAL, "wrong p2p_token");
	CHECK_ERR(gp_pin_tokens(c->gp, va, align_bytes, tk.p2p_token,
				tk.va_space_token + 1, &p), EINVAL, "wrong va_space_token");
	CHECK(tp_stats(c->tp).pins == 0, "a wrong token pinned");
	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_page_table t;
		struct gpucts_p2p_unpin u;
		struct gpucts_p2p_pin q;
		int g = open_gp();

		if (g < 0)
			_exit(1);
		if (gp_pin_tokens(g, va, 2 * align_bytes, tk.p2p_token,
				  tk.va_space_token, &q))
			_exit(2);
		if (gp_pt(g, q.handle, &t, NULL, 0) || t.entries != 2)
			_exit(3);
		if (gp_unpin(g, q.handle, &u) || u.result != GPUCTS_P2P_UNPIN_PUT)
			_exit(4);
		close(g);
		_exit(0);
	}
	if (wait_child(pid, "pin with the tokens from another process"))
		return -1;
	CHECK(tp_stats(c->tp).pins == 0, "provider holds %u pins", tp_stats(c->tp).pins);
	tp_free(c->tp, va);
	return 0;
}

/*
 * §2.3: "The corresponding mapped memory areas will only be unmapped by the
 * NVIDIA driver after returning from the callback": the module's callback
 * reads the first pinned word and finds it as it was at pin time.
 */
static int sc_unmap_only_after_callback_returns(struct ctx *c)
{
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p, q;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pin(c->gp, va + align_bytes, align_bytes, 0, &q), "second pin");
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS before");
	CHECK(!(e.flags & GPUCTS_P2P_EV_CB_SAW_PAGES), "flag before any callback");
	CHECK(tp_free(c->tp, va) == 2, "free did not fire two callbacks");
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.state == GPUCTS_P2P_STATE_REVOKED && e.callbacks == 1,
	      "state %u callbacks %u", e.state, e.callbacks);
	CHECK(e.flags & GPUCTS_P2P_EV_CB_SAW_PAGES,
	      "the callback did not find the pinned word (flags 0x%x)", e.flags);
	CHECK_OK(gp_events(c->gp, q.handle, &e), "EVENTS second");
	CHECK(e.flags & GPUCTS_P2P_EV_CB_SAW_PAGES, "second pin: flags 0x%x", e.flags);
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "result %u", u.result);
	CHECK_OK(gp_unpin(c->gp, q.handle, NULL), "unpin second");
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/*
 * §4.3 and the header's NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE: the same
 * major with a newer minor is compatible (fields were only added, §1.x), an
 * older minor or another major is not, and then no other field is read.
 */
static int sc_page_table_minor_version_injection(struct ctx *c)
{
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p;
	uint64_t va;
	void *m;
	int err, r = 0;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(tp_mode(c->tp, 0x00010003, 0, 0, 0), "MODE newer minor");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	CHECK_OK(gp_pt(c->gp, p.handle, &t, NULL, 0), "PAGE_TABLE");
	if (t.version != 0x00010003 || !t.compatible || t.entries != 1)
		r = snprintf(reason, sizeof(reason), "minor 3: version 0x%x compatible %u entries %u",
			     t.version, t.compatible, t.entries);
	m = gp_mmap(c->gp, &p, align_bytes, &err);
	if (!r && (!m || check_pattern(m, va, align_bytes)))
		r = snprintf(reason, sizeof(reason), "minor 3: mapping: %s",
			     m ? "wrong bytes" : strerror(-err));
	if (m)
		munmap(m, align_bytes);
	gp_unpin(c->gp, p.handle, NULL);
	tp_mode(c->tp, 0x00010001, 0, 0, 0);	/* an older minor */
	if (!r && gp_pin(c->gp, va, align_bytes, 0, &p) == 0) {
		if (gp_pt(c->gp, p.handle, &t, NULL, 0) || t.compatible || t.entries)
			r = snprintf(reason, sizeof(reason), "minor 1 accepted");
		else if (gp_events(c->gp, p.handle, &e) || !(e.flags & GPUCTS_P2P_EV_INCOMPATIBLE))
			r = snprintf(reason, sizeof(reason), "minor 1 not marked incompatible");
		else if (gp_mmap(c->gp, &p, align_bytes, &err) || err != -EPROTO)
			r = snprintf(reason, sizeof(reason), "minor 1: mmap %d", err);
		gp_unpin(c->gp, p.handle, NULL);
	} else if (!r) {
		r = snprintf(reason, sizeof(reason), "pin with minor 1 failed");
	}
	tp_mode(c->tp, 0, 0, 0, 0);
	tp_free(c->tp, va);
	return r ? -1 : 0;
}

static int dma_map_bridge(int fd, uint64_t h, struct gpucts_p2p_dma_map *d)
{
	memset(d, 0, sizeof(*d));
	d->handle = h;		/* peer: the VM's host bridge, 0000:00:00.0 */
	return xioctl(fd, GPUCTS_P2P_IOC_DMA_MAP, d);
}

/*
 * NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE: a newer minor is used; another
 * major or an older minor is refused (EPROTO) and the mapping given back.
 */
static int sc_dma_mapping_version_injection(struct ctx *c)
{
	static const uint32_t refused[] = { 0x00030003, 0x00010003, 0x00020002 };
	struct gpucts_p2p_dma_unmap du;
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p;
	uint64_t va;
	size_t i;
	int r = 0, x;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	tp_mode(c->tp, 0, 0x00020004, 0, 0);
	x = dma_map_bridge(c->gp, p.handle, &d);
	if (x || d.version != 0x00020004 || !d.compatible || d.entries != 1)
		r = snprintf(reason, sizeof(reason), "minor 4: %d version 0x%x compatible %u",
			     x, d.version, d.compatible);
	du.handle = p.handle;
	if (!x)
		xioctl(c->gp, GPUCTS_P2P_IOC_DMA_UNMAP, &du);
	for (i = 0; !r && i < sizeof(refused) / sizeof(refused[0]); i++) {
		tp_mode(c->tp, 0, refused[i], 0, 0);
		x = dma_map_bridge(c->gp, p.handle, &d);
		if (x != -EPROTO)
			r = snprintf(reason, sizeof(reason), "version 0x%x: %d, want -EPROTO",
				     refused[i], x);
		else if (tp_stats(c->tp).dma_mappings)
			r = snprintf(reason, sizeof(reason), "version 0x%x: mapping kept",
				     refused[i]);
		else if (gp_events(c->gp, p.handle, &e) || (e.flags & GPUCTS_P2P_EV_DMA_MAPPED))
			r = snprintf(reason, sizeof(reason), "version 0x%x: marked mapped",
				     refused[i]);
	}
	tp_mode(c->tp, 0, 0, 0, 0);
	gp_unpin(c->gp, p.handle, NULL);
	tp_free(c->tp, va);
	if (r)
		return -1;	/* reason says why */
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/* ---- field bugs, each named after what happened ---- */

struct vafree {
	int tp;
	uint64_t va;
	unsigned int delay_us;
};

static void *vafree_thread(void *arg)
{
	struct vafree *f = arg;

	usleep(f->delay_us);
	tp_free(f->tp, f->va);
	return NULL;
}

/*
 * get_pages racing a free of the VA range (a double free in the open
 * driver): the provider holds the allocation while get_pages sleeps; a free
 * in that window makes get_pages fail (EINVAL), a later one revokes the pin.
 * Either way the allocation goes exactly once (slub_debug, page_poison).
 */
static int sc_get_pages_races_free_of_va(struct ctx *c)
{
	const int rounds = 40;
	int refused = 0, revoked = 0, i, r = 0;
	uint32_t allocs0 = tp_stats(c->tp).allocs;

	CHECK_OK(tp_mode(c->tp, 0, 0, 3000, 0), "MODE get_delay");
	for (i = 0; i < rounds && !r; i++) {
		struct vafree f = { .tp = c->tp, .delay_us = (i * 1531) % 6000 };
		struct gpucts_p2p_events e;
		struct gpucts_p2p_pin p;
		pthread_t t;
		int x;

		if (tp_alloc(c->tp, align_bytes, &f.va, NULL)) {
			r = snprintf(reason, sizeof(reason), "alloc");
			break;
		}
		pthread_create(&t, NULL, vafree_thread, &f);
		x = gp_pin(c->gp, f.va, align_bytes, 0, &p);
		pthread_join(t, NULL);
		if (x == -EINVAL) {
			refused++;
		} else if (x) {
			r = snprintf(reason, sizeof(reason), "round %d: pin %s", i, strerror(-x));
		} else {
			if (gp_events(c->gp, p.handle, &e) || e.state != GPUCTS_P2P_STATE_REVOKED ||
			    e.callbacks != 1)
				r = snprintf(reason, sizeof(reason),
					     "round %d: a pin of a freed range not revoked", i);
			revoked++;
			gp_unpin(c->gp, p.handle, NULL);
		}
	}
	tp_mode(c->tp, 0, 0, 0, 0);
	if (r)
		return -1;	/* reason says why */
	CHECK(refused > 0, "the free never came during get_pages (%d revoked)", revoked);
	CHECK(tp_stats(c->tp).pins == 0 && tp_stats(c->tp).allocs == allocs0,
	      "provider holds %u pins, %u allocations (%u before)", tp_stats(c->tp).pins,
	      tp_stats(c->tp).allocs, allocs0);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

static int gp_stats(int fd, struct gpucts_p2p_stats *s)
{
	memset(s, 0, sizeof(*s));
	return xioctl(fd, GPUCTS_P2P_IOC_STATS, s);
}

/*
 * nvidia-peermem's "detected invalid context" (drivers before R560 could
 * call the free callback of a registration that had ended): the provider
 * calls an unpinned pin's callback again at the next get_pages; the module
 * recognises the ended registration, touches nothing, counts it.
 */
static int sc_stray_callback_invalid_context_ignored(struct ctx *c)
{
	struct gpucts_p2p_stats s0, s1;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p, q;
	uint64_t va;

	CHECK_OK(tp_alloc(c->tp, 2 * align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_stats(c->gp, &s0), "STATS");
	CHECK_OK(tp_mode(c->tp, 0, 0, 0, 1), "MODE stray");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	/* the provider calls the ended registration's callback first */
	CHECK_OK(gp_pin(c->gp, va + align_bytes, align_bytes, 0, &q), "next pin");
	tp_mode(c->tp, 0, 0, 0, 0);
	CHECK_OK(gp_stats(c->gp, &s1), "STATS after");
	CHECK(s1.stray_callbacks == s0.stray_callbacks + 1, "stray callbacks %u, %u before",
	      s1.stray_callbacks, s0.stray_callbacks);
	CHECK_OK(gp_events(c->gp, q.handle, &e), "EVENTS");
	CHECK(e.state == GPUCTS_P2P_STATE_PINNED && e.callbacks == 0,
	      "the live pin was touched: state %u callbacks %u", e.state, e.callbacks);
	CHECK_OK(gp_unpin(c->gp, q.handle, NULL), "unpin next");
	tp_free(c->tp, va);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

struct teardown {
	int fd;
	void *map;
	size_t len;
};

static void *teardown_thread(void *arg)
{
	struct teardown *t = arg;

	munmap(t->map, t->len);
	close(t->fd);
	return NULL;
}

/*
 * Lock inversion between invalidation (the free callback, under the
 * driver's locks, §2.3 last paragraph) and teardown (close and munmap, which
 * call put_pages): both paths race, rounds in a child the parent watches
 * with a timeout (the Debian kernel has no lockdep).
 */
static int sc_invalidation_races_teardown(struct ctx *c)
{
	const int rounds = 300;
	pid_t pid;
	int st, waited;

	pid = fork();
	if (pid == 0) {
		int i;

		for (i = 0; i < rounds; i++) {
			struct vafree f = { .tp = c->tp, .delay_us = i % 7 };
			struct teardown t = { .len = align_bytes };
			struct gpucts_p2p_pin p;
			pthread_t a, b;
			int err;

			if (tp_alloc(c->tp, align_bytes, &f.va, NULL))
				_exit(1);
			t.fd = open_gp();
			if (t.fd < 0 || gp_pin(t.fd, f.va, align_bytes, 0, &p))
				_exit(2);
			t.map = gp_mmap(t.fd, &p, align_bytes, &err);
			if (!t.map)
				_exit(3);
			pthread_create(&a, NULL, vafree_thread, &f);
			pthread_create(&b, NULL, teardown_thread, &t);
			pthread_join(a, NULL);
			pthread_join(b, NULL);
		}
		_exit(0);
	}
	CHECK(pid > 0, "fork");
	for (waited = 0; waited < 600; waited++) {	/* 60 s */
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (waited == 600) {
		kill(pid, SIGKILL);
		FAIL("rounds still running after 60 s: a deadlock between the callback and teardown");
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	CHECK(tp_stats(c->tp).pins == 0, "provider holds %u pins", tp_stats(c->tp).pins);
	CHECK(tp_stats(c->tp).violations == 0, "violations");
	return 0;
}

/*
 * Close without unmap: a process closes its descriptor holding a pin with a
 * DMA mapping and a CPU mapping, never calling DMA_UNMAP or UNPIN; the
 * release at the last munmap unmaps for the peer before put_pages (the
 * provider counts put_pages with a mapping still mapped as a violation).
 */
static int sc_close_without_unmap(struct ctx *c)
{
	struct gpucts_p2p_dma_map d;
	struct gpucts_p2p_pin p;
	uint64_t va, w;
	int g, err;
	void *m;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	g = open_gp();
	CHECK(g >= 0, "open");
	CHECK_OK(gp_pin(g, va, align_bytes, 0, &p), "pin");
	CHECK_OK(dma_map_bridge(g, p.handle, &d), "DMA_MAP");
	m = gp_mmap(g, &p, align_bytes, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	close(g);
	CHECK(!read_word(m, &w) && w == GPUCTS_TESTPROV_PATTERN(va), "mapping after close");
	CHECK(tp_stats(c->tp).pins == 1 && tp_stats(c->tp).dma_mappings == 1,
	      "the close released the pin while mapped");
	munmap(m, align_bytes);
	CHECK(tp_stats(c->tp).pins == 0 && tp_stats(c->tp).dma_mappings == 0,
	      "after the last munmap: %u pins, %u DMA mappings", tp_stats(c->tp).pins,
	      tp_stats(c->tp).dma_mappings);
	CHECK(tp_stats(c->tp).violations == 0, "violations: put_pages before dma_unmap_pages?");
	tp_free(c->tp, va);
	return 0;
}

/*
 * The Grace-Hopper failure, length 0x10008 on 64 KiB pages: the module pins
 * whole GPU pages (§3.2: 0x20000 on the desktop's 64 KB pages; §4.4.3:
 * 0x11000 on Tegra's 4 KB), a multiple of the host page size too; the exact
 * length goes to the driver only with PIN_EXACT, which refuses it.
 */
static int sc_unaligned_length_0x10008_on_64k_pages(struct ctx *c)
{
	const uint64_t len = 0x10008, want = tegra ? 0x11000 : 0x20000;
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_pin p;
	long host = sysconf(_SC_PAGESIZE);
	uint64_t va, w;
	int err;
	void *m;

	CHECK_OK(tp_alloc(c->tp, 2 * 65536, &va, NULL), "alloc");
	CHECK_ERR(gp_pin(c->gp, va, len, GPUCTS_P2P_PIN_EXACT, &p), EINVAL,
		  "PIN_EXACT of 0x10008");
	CHECK_OK(gp_pin(c->gp, va, len, 0, &p), "pin 0x10008");
	CHECK(p.pinned_va == va && p.pinned_length == want, "pinned 0x%llx+0x%llx, want 0x%llx",
	      (unsigned long long)p.pinned_va, (unsigned long long)p.pinned_length,
	      (unsigned long long)want);
	CHECK(host > 0 && p.pinned_length % (uint64_t)host == 0, "not whole host pages (%ld)", host);
	CHECK_OK(gp_pt(c->gp, p.handle, &t, NULL, 0), "PAGE_TABLE");
	CHECK(t.entries * t.page_size == want && t.page_size == align_bytes,
	      "%u entries of %llu", t.entries, (unsigned long long)t.page_size);
	m = gp_mmap(c->gp, &p, p.pinned_length, &err);
	CHECK(m, "mmap: %s", strerror(-err));
	/* the last word of the asked range, in the second GPU page */
	if (read_word((uint64_t *)((char *)m + 0x10000), &w) ||
	    w != GPUCTS_TESTPROV_PATTERN(va + 0x10000)) {
		munmap(m, p.pinned_length);
		FAIL("word at +0x10000 not the provider's");
	}
	munmap(m, p.pinned_length);
	CHECK_OK(gp_unpin(c->gp, p.handle, NULL), "unpin");
	tp_free(c->tp, va);
	return 0;
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b = 'x';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * gdrcopy's "fd passing" class: a descriptor sent to another process over
 * a UNIX socket carries the handles, not the right to use them (§3.3); the
 * pinner's pin is untouched by the other process and still revoked by the
 * free afterwards.
 */
static int sc_fd_passing_handles_stay_with_pinner(struct ctx *c)
{
	struct gpucts_p2p_events e;
	struct gpucts_p2p_unpin u;
	struct gpucts_p2p_pin p;
	uint64_t va;
	int sv[2];
	pid_t pid;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	CHECK_OK(gp_pin(c->gp, va, align_bytes, 0, &p), "pin");
	CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	pid = fork();
	if (pid == 0) {
		struct gpucts_p2p_events ce;
		int fd, err = 0;

		close(sv[0]);
		close(c->gp);	/* only the passed descriptor */
		fd = recv_fd(sv[1]);
		if (fd < 0)
			_exit(1);
		if (gp_events(fd, p.handle, &ce) != -EACCES)
			_exit(2);
		if (gp_unpin(fd, p.handle, NULL) != -EACCES)
			_exit(3);
		if (gp_mmap(fd, &p, 4096, &err) || err != -EACCES)
			_exit(4);
		close(fd);
		_exit(0);
	}
	close(sv[1]);
	if (pid > 0 && send_fd(sv[0], c->gp)) {
		close(sv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		FAIL("sendmsg SCM_RIGHTS");
	}
	close(sv[0]);
	if (wait_child(pid, "receiver of the descriptor"))
		return -1;
	CHECK_OK(gp_events(c->gp, p.handle, &e), "EVENTS");
	CHECK(e.state == GPUCTS_P2P_STATE_PINNED && e.callbacks == 0, "touched");
	CHECK(tp_free(c->tp, va) == 1, "free after fd passing fired no callback");
	CHECK_OK(gp_unpin(c->gp, p.handle, &u), "unpin");
	CHECK(u.result == GPUCTS_P2P_UNPIN_REVOKED, "result %u", u.result);
	return 0;
}

struct thr {
	int gp;
	uint64_t va, handle, mmap_offset;
	int ret;
};

static void *thr_pin(void *arg)
{
	struct thr *t = arg;
	struct gpucts_p2p_pin p;

	t->ret = gp_pin(t->gp, t->va, align_bytes, 0, &p);
	t->handle = p.handle;
	t->mmap_offset = p.mmap_offset;
	return NULL;
}

static void *thr_unpin(void *arg)
{
	struct thr *t = arg;

	t->ret = gp_unpin(t->gp, t->handle, NULL);
	return NULL;
}

/*
 * gdrcopy's "child thread" class: the process, not the thread, owns a pin
 * (§3.3 "the same process context"): a thread pins, the main thread reads
 * through a mapping, another thread unpins.
 */
static int sc_child_thread_pins_and_unpins(struct ctx *c)
{
	struct thr t = { .gp = c->gp };
	struct gpucts_p2p_pin p;
	pthread_t th;
	uint64_t w;
	int err;
	void *m;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &t.va, NULL), "alloc");
	pthread_create(&th, NULL, thr_pin, &t);
	pthread_join(th, NULL);
	CHECK_OK(t.ret, "pin in a thread");
	memset(&p, 0, sizeof(p));
	p.mmap_offset = t.mmap_offset;
	m = gp_mmap(c->gp, &p, align_bytes, &err);
	CHECK(m, "mmap of the thread's pin: %s", strerror(-err));
	err = read_word(m, &w) || w != GPUCTS_TESTPROV_PATTERN(t.va);
	munmap(m, align_bytes);
	CHECK(!err, "the main thread reads the thread's pin");
	pthread_create(&th, NULL, thr_unpin, &t);
	pthread_join(th, NULL);
	CHECK_OK(t.ret, "unpin in another thread");
	CHECK(tp_stats(c->tp).pins == 0, "pins left");
	tp_free(c->tp, t.va);
	return 0;
}

static const struct scenario scenarios[] = {
	{ "get_version", sc_version },
	{ "pin_unpin_aligned", sc_pin_unpin_aligned },
	{ "pin_unaligned_rounded", sc_pin_unaligned_rounded },
	{ "pin_zero_length_einval", sc_pin_zero_length },
	{ "provider_rejects_unaligned", sc_provider_rejects_unaligned },
	{ "page_table_version_size_entries_uuid", sc_page_table },
	{ "mmap_cpu_access", sc_mmap_cpu_access },
	{ "persistent_pin_survives_free", sc_persistent_survives_free },
	{ "revoked_on_free_sigbus_then_unpin", sc_revoked_on_free },
	{ "two_pins_only_freed_one_revoked", sc_two_pins_one_revoked },
	{ "dma_map_unmap", sc_dma_map_unmap },
	{ "dma_mapping_freed_by_callback", sc_dma_mapping_freed_by_callback },
	{ "bad_ioctl_args_exact_errnos", sc_bad_args },
	{ "other_process_handle_eacces", sc_other_process_eacces },
	{ "addresses_need_cap_sys_admin", sc_addresses_need_cap_sys_admin },
	{ "injected_enomem", sc_injected_enomem },
	{ "incompatible_page_table_version", sc_incompatible_version },
	{ "put_pages_callback_semantics", sc_put_pages_callback_semantics },
	{ "revoke_races_unpin", sc_revoke_races_unpin },
	{ "revoke_with_ioctls_in_flight", sc_revoke_with_ioctls_in_flight },
	{ "process_killed_with_pins", sc_process_killed_with_pins },
	{ "fd_closed_with_mapping_open", sc_fd_closed_with_mapping },
	{ "get_pages_null_callback_refused", sc_get_pages_null_callback_refused },
	{ "pin_of_freed_va_einval", sc_pin_of_freed_va_einval },
	{ "overlapping_pins_partial_unpin", sc_overlapping_pins_partial_unpin },
	{ "revoked_on_context_destroy", sc_revoked_on_context_destroy },
	{ "iommu_iova_not_physical", sc_iommu_iova_not_physical },
	{ "iommu_dma_roundtrip", sc_iommu_dma_roundtrip },
	{ "iommu_stale_iova_faults_after_revoke", sc_iommu_stale_iova_faults_after_revoke },
	{ "iommu_free_waits_for_peer_dma", sc_iommu_free_waits_for_peer_dma },
	{ "dev_node_unprivileged_eacces", sc_dev_node_unprivileged_eacces },
	{ "pin_charged_to_memlock", sc_pin_charged_to_memlock },
	{ "pin_without_tokens_owner_only", sc_pin_without_tokens_owner_only },
	{ "pin_with_tokens_must_match", sc_pin_with_tokens_must_match },
	{ "unmap_only_after_callback_returns", sc_unmap_only_after_callback_returns },
	{ "page_table_minor_version_injection", sc_page_table_minor_version_injection },
	{ "dma_mapping_version_injection", sc_dma_mapping_version_injection },
	{ "get_pages_races_free_of_va", sc_get_pages_races_free_of_va },
	{ "stray_callback_invalid_context_ignored", sc_stray_callback_invalid_context_ignored },
	{ "invalidation_races_teardown", sc_invalidation_races_teardown },
	{ "close_without_unmap", sc_close_without_unmap },
	{ "unaligned_length_0x10008_on_64k_pages", sc_unaligned_length_0x10008_on_64k_pages },
	{ "fd_passing_handles_stay_with_pinner", sc_fd_passing_handles_stay_with_pinner },
	{ "child_thread_pins_and_unpins", sc_child_thread_pins_and_unpins },
};

/* What a scenario's process hands back: its verdict and reason */
struct verdict {
	int r, stats_err;
	char reason[sizeof(reason)];
};

/*
 * Each scenario runs in its own process with its own opens of both devices,
 * so what a failing scenario leaves behind (pins, mappings, allocations,
 * threads) goes away with the process when it exits and cannot fail the
 * scenarios after it, and a crash is that scenario's failure alone.
 */
static void run_scenario(size_t i, struct verdict *v)
{
	struct ctx c;
	int status;
	pid_t pid;

	memset(v, 0, sizeof(*v));
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		v->r = -1;
		snprintf(v->reason, sizeof(v->reason), "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		reason[0] = 0;
		stats_err = 0;
		c.gp = open_gp();
		c.tp = open_tp();
		if (c.gp < 0 || c.tp < 0) {
			v->r = -1;
			snprintf(v->reason, sizeof(v->reason), "cannot open the devices: %s",
				 strerror(errno));
		} else {
			v->r = scenarios[i].fn(&c);
			v->stats_err = stats_err;
			memcpy(v->reason, reason, sizeof(v->reason));
		}
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			v->r = -1;
			snprintf(v->reason, sizeof(v->reason), "waitpid: %s", strerror(errno));
			return;
		}
	}
	if (WIFSIGNALED(status)) {
		v->r = -1;
		snprintf(v->reason, sizeof(v->reason), "the scenario's process died of signal %d",
			 WTERMSIG(status));
	} else if (WEXITSTATUS(status)) {
		v->r = -1;
		snprintf(v->reason, sizeof(v->reason), "the scenario's process exited %d",
			 WEXITSTATUS(status));
	}
}

int main(int argc, char **argv)
{
	const size_t n = sizeof(scenarios) / sizeof(scenarios[0]);
	struct verdict *v;
	size_t i;
	int failed = 0;

	if (argc != 2 || (strcmp(argv[1], "desktop") && strcmp(argv[1], "tegra"))) {
		fprintf(stderr, "usage: %s desktop|tegra\n", argv[0]);
		return 2;
	}
	tegra = !strcmp(argv[1], "tegra");
	align_bytes = tegra ? 4096 : 65536;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..%zu\n", n);
	/* shared with each scenario's process, which writes its verdict here */
	v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (v == MAP_FAILED) {
		for (i = 0; i < n; i++)
			printf("not ok %zu %s # mmap: %s\n", i + 1, scenarios[i].name,
			       strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		run_scenario(i, v);
		if (v->stats_err) {
			/* counters it could not read prove nothing, pass or fail */
			snprintf(v->reason, sizeof(v->reason), "testprov STATS ioctl failed: %s",
				 strerror(v->stats_err));
			v->r = -1;
		}
		if (v->r > 0) {
			/* KTAP skip: the VM lacks what the scenario needs */
			printf("ok %zu %s # SKIP %s\n", i + 1, scenarios[i].name, v->reason);
		} else if (v->r) {
			printf("not ok %zu %s # %s\n", i + 1, scenarios[i].name, v->reason);
			failed++;
		} else {
			printf("ok %zu %s\n", i + 1, scenarios[i].name);
		}
	}
	munmap(v, sizeof(*v));
	return failed ? 1 : 0;
}
