// SPDX-License-Identifier: GPL-2.0
/*
 * p2p_scenarios: the driver's contract as the provider models it (callbacks,
 * freed and overlapping ranges, the device node, memlock, tokens, versions)
 * and the field bugs.
 */
#include "p2p_scenarios.h"

/* ---------------------------------------------------------------- */
/* The driver's contract, modelled by the provider (gpudirect §1.10, §2.3, §3.2). */

/* §1.10: get_pages no longer accepts a NULL callback (both flavours). */
int sc_get_pages_null_callback_refused(struct ctx *c)
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
int sc_pin_of_freed_va_einval(struct ctx *c)
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
int sc_overlapping_pins_partial_unpin(struct ctx *c)
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
int sc_revoked_on_context_destroy(struct ctx *c)
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

/*
 * The node admits no one outside its owner and group (gpucts_p2p.h: mode
 * 0660 by default): a process with another uid and gid, no supplementary
 * groups, gets EACCES from open(2), as path_resolution(7) rules.
 */
int sc_dev_node_unprivileged_eacces(struct ctx *c)
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
int sc_pin_charged_to_memlock(struct ctx *c)
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
int sc_pin_without_tokens_owner_only(struct ctx *c)
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
int sc_pin_with_tokens_must_match(struct ctx *c)
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
int sc_unmap_only_after_callback_returns(struct ctx *c)
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
 * §4.3 and the header's NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE, for both
 * page-table majors the module reads: major 1 from minor 2 (R515-R575) and
 * major 2 (R580, the provider's default) are compatible, a newer minor too
 * (fields were only added, §1.x); an older minor or another major is not,
 * and then no other field is read.  Only a major-2 table's flags word counts:
 * CPU_CACHEABLE (0x1) shows as EV_CPU_CACHEABLE (a cacheable CPU mapping
 * instead of a write-combined one), the same bit in a major-1 table does not.
 */
struct pt_version_case {
	uint32_t version;	/* MODE pt_version (0: the provider's default) */
	uint32_t flags;		/* PT_FLAGS */
	int compatible, cacheable;
};

static int tp_pt_flags(int tp, uint32_t flags)
{
	struct gpucts_testprov_pt_flags f = { .flags = flags };

	return xioctl(tp, GPUCTS_TESTPROV_IOC_PT_FLAGS, &f);
}

static int pt_version_case(struct ctx *c, uint64_t va, const struct pt_version_case *k)
{
	uint32_t want = k->version ? k->version : 0x00020000;
	struct gpucts_p2p_page_table t;
	struct gpucts_p2p_events e;
	struct gpucts_p2p_pin p;
	void *m;
	int err, r = 0;

	if (tp_mode(c->tp, k->version, 0, 0, 0) || tp_pt_flags(c->tp, k->flags))
		return snprintf(reason, sizeof(reason), "MODE/PT_FLAGS: %s", strerror(errno));
	if (gp_pin(c->gp, va, align_bytes, 0, &p))
		return snprintf(reason, sizeof(reason), "0x%x: pin failed", want);
	if (gp_pt(c->gp, p.handle, &t, NULL, 0) || gp_events(c->gp, p.handle, &e))
		r = snprintf(reason, sizeof(reason), "0x%x: PAGE_TABLE/EVENTS failed", want);
	else if (t.version != want || t.compatible != (uint32_t)k->compatible ||
		 t.entries != (k->compatible ? 1U : 0U))
		r = snprintf(reason, sizeof(reason), "0x%x flags %u: version 0x%x compatible %u entries %u",
			     want, k->flags, t.version, t.compatible, t.entries);
	else if (!(e.flags & GPUCTS_P2P_EV_INCOMPATIBLE) != !!k->compatible ||
		 !(e.flags & GPUCTS_P2P_EV_CPU_CACHEABLE) != !k->cacheable)
		r = snprintf(reason, sizeof(reason), "0x%x flags %u: EVENTS flags 0x%x",
			     want, k->flags, e.flags);
	if (!r) {
		m = gp_mmap(c->gp, &p, align_bytes, &err);
		if (k->compatible && (!m || check_pattern(m, va, align_bytes)))
			r = snprintf(reason, sizeof(reason), "0x%x flags %u: mapping: %s",
				     want, k->flags, m ? "wrong bytes" : strerror(-err));
		else if (!k->compatible && (m || err != -EPROTO))
			r = snprintf(reason, sizeof(reason), "0x%x: mmap %d", want, err);
		if (m)
			munmap(m, align_bytes);
	}
	gp_unpin(c->gp, p.handle, NULL);
	return r;
}

int sc_page_table_minor_version_injection(struct ctx *c)
{
	static const struct pt_version_case cases[] = {
		{ 0, 0, 1, 0 },			/* 0x00020000, R580 */
		{ 0, 0x1, 1, 1 },		/* CPU_CACHEABLE */
		{ 0x00020001, 0x1, 1, 1 },	/* a newer minor of major 2 */
		{ 0x00010002, 0, 1, 0 },	/* R515-R575 */
		{ 0x00010002, 0x1, 1, 0 },	/* major 1 has no flags word */
		{ 0x00010003, 0, 1, 0 },	/* a newer minor of major 1 */
		{ 0x00010001, 0, 0, 0 },	/* an older minor */
		{ 0x00030000, 0, 0, 0 },	/* a major no release has */
	};
	uint64_t va;
	size_t i;
	int r = 0;

	CHECK_OK(tp_alloc(c->tp, align_bytes, &va, NULL), "alloc");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && !r; i++)
		r = pt_version_case(c, va, &cases[i]);
	tp_mode(c->tp, 0, 0, 0, 0);
	tp_pt_flags(c->tp, 0);
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
int sc_dma_mapping_version_injection(struct ctx *c)
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
int sc_get_pages_races_free_of_va(struct ctx *c)
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
int sc_stray_callback_invalid_context_ignored(struct ctx *c)
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
int sc_invalidation_races_teardown(struct ctx *c)
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
int sc_close_without_unmap(struct ctx *c)
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
int sc_unaligned_length_0x10008_on_64k_pages(struct ctx *c)
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
int sc_fd_passing_handles_stay_with_pinner(struct ctx *c)
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
int sc_child_thread_pins_and_unpins(struct ctx *c)
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
