// SPDX-License-Identifier: MIT
/*
 * gdrdrv_drive: drives gdrcopy's kernel module (gdrdrv, built unmodified from
 * ../shared/corpora/gpudirect-consumers/gdrcopy) through gdrcopy's own
 * library, libgdrapi, over GPU memory from the stand-in (gpumem.h), and
 * prints KTAP: one result per case, each named `<mode>.<case>`.
 *
 *   gdrdrv_drive callback|persistent
 *
 * The mode says how gdrdrv was loaded (use_persistent_mapping=0 or 1): with
 * callback pins, freeing the memory fires gdrdrv's free callback (gpudirect
 * §2.3), which must free the page table there and nowhere else and drop the
 * CPU mappings; persistent pins survive the free until gdrdrv puts them.
 * Every case also holds gdrdrv to the stand-in's counts (no contract
 * violation, every pin and allocation gone at its end) and to its own count of
 * the page tables it holds (back where it was; gdrdrv is loaded with
 * dbg_enabled=1 for that file, which also makes its unload WARN, not BUG,
 * when the count is off).  A kernel splat is
 * the VM runner's to see (it reads the guest's log around each mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdrapi.h"
#include "gpumem.h"

#define LEN (4 * (uint64_t)GPUMEM_PAGE_SIZE)
#define RACE_ROUNDS 64

static char reason[512];
static int callback_mode;

#define FAIL(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return -1; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

/* gdrdrv registers a character device without a device node; make one as
 * gdrcopy's insmod.sh does. */
static int make_node(void)
{
	FILE *f = fopen("/proc/devices", "r");
	char line[128], name[64];
	int major = -1, m;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %63s", &m, name) == 2 && !strcmp(name, "gdrdrv"))
			major = m;
	fclose(f);
	if (major < 0)
		return -ENODEV;
	unlink("/dev/gdrdrv");
	return mknod("/dev/gdrdrv", S_IFCHR | 0666, makedev(major, 0)) ? -errno : 0;
}

static sigjmp_buf bus_jmp;
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* Read one word, reporting SIGBUS (1) instead of dying. */
static int read_word(volatile uint64_t *p, uint64_t *val)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int bus = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		bus = 1;
	else
		*val = *p;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

/* The words of [va, va + len) as mapped at map hold the stand-in's pattern. */
static int check_pattern(const void *map, uint64_t va, size_t len)
{
	const volatile uint64_t *w = map;
	uint64_t v;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		if (read_word((volatile uint64_t *)&w[i], &v))
			FAIL("SIGBUS reading word %zu of a live mapping", i);
		if (v != gpumem_pattern(va + 8 * i))
			FAIL("word %zu (GPU VA 0x%llx) reads 0x%llx, the stand-in holds 0x%llx",
			     i, (unsigned long long)(va + 8 * i), (unsigned long long)v,
			     (unsigned long long)gpumem_pattern(va + 8 * i));
	}
	return 0;
}

struct pinned {
	gdr_mh_t mh;
	void *map;
};

static int pin_and_map(gdr_t g, uint64_t va, struct pinned *p)
{
	gdr_info_t info;
	int r;

	r = gdr_pin_buffer(g, va, LEN, 0, 0, &p->mh);
	CHECK(!r, "gdr_pin_buffer: %d", r);
	r = gdr_get_info(g, p->mh, &info);
	CHECK(!r, "gdr_get_info: %d", r);
	CHECK(info.va == va && info.mapped_size == LEN && info.page_size == GPUMEM_PAGE_SIZE,
	      "gdr_get_info: va 0x%llx size %llu page %u, pinned 0x%llx size %llu in %u-byte GPU pages",
	      (unsigned long long)info.va, (unsigned long long)info.mapped_size, info.page_size,
	      (unsigned long long)va, (unsigned long long)LEN, GPUMEM_PAGE_SIZE);
	r = gdr_map(g, p->mh, &p->map, LEN);
	CHECK(!r, "gdr_map: %d", r);
	return 0;
}

/* gdrdrv's own count of the page tables it holds from the driver (its procfs
 * file, there when it is loaded with dbg_enabled=1; its unload BUG()s, or with
 * dbg_enabled WARNs, unless the count is back at 0). INT64_MIN: not there. */
static long long nv_refcount(void)
{
	FILE *f = fopen("/proc/driver/gdrdrv/nv_get_pages_refcount", "r");
	long long v = INT64_MIN;

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = INT64_MIN;
		fclose(f);
	}
	return v;
}

static long long refcount_before;

/* Nothing left over and no violation since `before`, and gdrdrv's own count
 * of page tables back where it was. */
static int clean_since(int ctx, const struct gpumem_stats *before)
{
	struct gpumem_stats s;
	long long rc = nv_refcount();

	CHECK(!gpumem_stats(ctx, &s), "stand-in STATS");
	CHECK(rc == refcount_before,
	      "gdrdrv's nv_get_pages_refcount is %lld after the case (%lld before), with %u pins left in the stand-in: gdrdrv counted page tables returned %s",
	      rc, refcount_before, s.pins, rc < refcount_before ? "twice (its unload will BUG)" : "never");
	return gpumem_clean_since(ctx, before, "gdrdrv", reason, sizeof(reason));
}

/* Pin, map, read every word, unmap, unpin. */
static int pin_map_read(int ctx, gdr_t g)
{
	struct pinned p;
	uint64_t va;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	if (pin_and_map(g, va, &p))
		return -1;
	if (check_pattern(p.map, va, LEN))
		return -1;
	CHECK(!gdr_unmap(g, p.mh, p.map, LEN), "gdr_unmap");
	CHECK(!gdr_unpin_buffer(g, p.mh), "gdr_unpin_buffer");
	CHECK(!gpumem_free(ctx, va, NULL), "free");
	return 0;
}

/* Bytes written through one mapping are read back through a second pin of
 * the same memory: both map the same pinned pages. */
static int write_read_back(int ctx, gdr_t g)
{
	static uint64_t out[LEN / 8], in[LEN / 8];
	struct pinned a, b;
	uint64_t va;
	size_t i;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	if (pin_and_map(g, va, &a) || pin_and_map(g, va, &b))
		return -1;
	for (i = 0; i < LEN / 8; i++)
		out[i] = ~gpumem_pattern(va + 8 * i) ^ i;
	CHECK(!gdr_copy_to_mapping(a.mh, a.map, out, LEN), "gdr_copy_to_mapping");
	CHECK(!gdr_copy_from_mapping(b.mh, in, b.map, LEN), "gdr_copy_from_mapping");
	for (i = 0; i < LEN / 8; i++)
		CHECK(in[i] == out[i], "word %zu: wrote 0x%llx through one pin, read 0x%llx through the other",
		      i, (unsigned long long)out[i], (unsigned long long)in[i]);
	CHECK(!gdr_unmap(g, a.mh, a.map, LEN) && !gdr_unmap(g, b.mh, b.map, LEN), "gdr_unmap");
	CHECK(!gdr_unpin_buffer(g, a.mh) && !gdr_unpin_buffer(g, b.mh), "gdr_unpin_buffer");
	CHECK(!gpumem_free(ctx, va, NULL), "free");
	return 0;
}

/* cuMemFree with the buffer pinned and mapped. Callback pins: the callback
 * fires once, gdrdrv's flag says so, the CPU mapping no longer reaches the
 * pages (SIGBUS), the page table is freed in the callback, and unpinning
 * afterwards succeeds without touching the stand-in. Persistent pins: no
 * callback, the pages stay mapped and readable until gdrdrv unpins. */
static int free_with_live_pin(int ctx, gdr_t g)
{
	struct gpumem_stats mid;
	struct pinned p;
	uint32_t callbacks = 0;
	uint64_t va, v;
	int r = gpumem_alloc(ctx, LEN, &va), flag = -1;

	CHECK(!r, "alloc: %s", strerror(-r));
	if (pin_and_map(g, va, &p))
		return -1;
	r = gpumem_free(ctx, va, &callbacks);
	CHECK(!r, "free: %s", strerror(-r));
	CHECK(!gdr_get_callback_flag(g, p.mh, &flag), "gdr_get_callback_flag");
	CHECK(!gpumem_stats(ctx, &mid), "STATS");
	if (callback_mode) {
		CHECK(callbacks == 1, "the free fired %u callbacks, want 1", callbacks);
		CHECK(flag == 1, "gdrdrv's callback flag is %d after the callback", flag);
		CHECK(read_word(p.map, &v), "the CPU mapping still reads 0x%llx after the callback",
		      (unsigned long long)v);
	} else {
		CHECK(callbacks == 0, "the free fired %u callbacks on a persistent pin", callbacks);
		CHECK(flag == 0, "gdrdrv's callback flag is %d without a callback", flag);
		CHECK(mid.persistent_pins >= 1, "the persistent pin is gone after the free");
		if (check_pattern(p.map, va, LEN))
			return -1;
	}
	CHECK(!gdr_unmap(g, p.mh, p.map, LEN), "gdr_unmap");
	r = gdr_unpin_buffer(g, p.mh);
	CHECK(!r, "gdr_unpin_buffer after the free: %d", r);
	return 0;
}

/* A process that exits with a pinned, mapped buffer: the kernel closes
 * gdrdrv's file and the stand-in's context in some order; every pin must be
 * released either way, without a violation. */
static int exit_with_live_pin(int ctx, gdr_t g)
{
	int st, i;
	pid_t pid;

	(void)g;
	(void)ctx;
	for (i = 0; i < 2; i++) {
		pid = fork();
		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			/* i == 0: the stand-in's fd opened first (closed first at exit) */
			int c = i == 0 ? gpumem_open() : -1;
			gdr_t h = gdr_open();
			struct pinned p;
			uint64_t va;

			if (i == 1)
				c = gpumem_open();
			if (c < 0 || !h || gpumem_alloc(c, LEN, &va) || pin_and_map(h, va, &p))
				_exit(2);
			_exit(check_pattern(p.map, va, LEN) ? 3 : 0);
		}
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: %s %d", i,
		      WIFEXITED(st) ? "exit" : "signal",
		      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	return 0;
}

/* Unpinning while the memory is freed (gdrcopy PR #332's window: the free
 * callback waits on the registration while the unpin frees it). The stand-in
 * delays put_pages to widen the window. */
static int unpin_races_free(int ctx, gdr_t g)
{
	int round;

	CHECK(!gpumem_put_delay(ctx, 200), "INJECT put_delay_us");
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct gpumem_async_free f;
		struct pinned p;
		uint64_t va;
		int r = gpumem_alloc(ctx, LEN, &va), freed;

		CHECK(!r, "alloc: %s", strerror(-r));
		if (pin_and_map(g, va, &p))
			return -1;
		CHECK(!gdr_unmap(g, p.mh, p.map, LEN), "gdr_unmap");
		CHECK(!gpumem_free_start(&f, ctx, va), "starting the free");
		if (round & 1)
			usleep(50);
		r = gdr_unpin_buffer(g, p.mh);
		freed = gpumem_free_join(&f);
		CHECK(!freed, "round %d: free: %s", round, strerror(-freed));
		CHECK(!r, "round %d: gdr_unpin_buffer: %d", round, r);
	}
	CHECK(!gpumem_put_delay(ctx, 0), "INJECT put_delay_us 0");
	return 0;
}

static const struct {
	const char *name;
	int (*run)(int ctx, gdr_t g);
	int callback_only;
} cases[] = {
	{ "pin_map_read", pin_map_read, 0 },
	{ "write_read_back", write_read_back, 0 },
	{ "free_with_live_pin", free_with_live_pin, 0 },
	{ "exit_with_live_pin", exit_with_live_pin, 0 },
	{ "unpin_races_free", unpin_races_free, 1 },
};

int main(int argc, char **argv)
{
	size_t n = sizeof(cases) / sizeof(cases[0]), i;
	const char *mode = argc > 1 ? argv[1] : "";
	int failed = 0, ctx, r;
	gdr_t g;

	if (strcmp(mode, "callback") && strcmp(mode, "persistent")) {
		fprintf(stderr, "usage: %s callback|persistent\n", argv[0]);
		return 2;
	}
	callback_mode = !strcmp(mode, "callback");
	printf("KTAP version 1\n1..%zu\n", n);
	r = make_node();
	ctx = gpumem_open();
	g = r ? NULL : gdr_open();
	for (i = 0; i < n; i++) {
		struct gpumem_stats before;

		reason[0] = 0;
		if (!callback_mode && cases[i].callback_only) {
			printf("ok %zu %s.%s # SKIP persistent pins have no free callback\n", i + 1,
			       mode, cases[i].name);
			continue;
		}
		if (r)
			snprintf(reason, sizeof(reason), "no /dev/gdrdrv: %s", strerror(-r));
		else if (ctx < 0)
			snprintf(reason, sizeof(reason), "no stand-in: %s", strerror(-ctx));
		else if (!g)
			snprintf(reason, sizeof(reason), "gdr_open failed");
		else if (gpumem_stats(ctx, &before))
			snprintf(reason, sizeof(reason), "stand-in STATS failed");
		else if ((refcount_before = nv_refcount()) == INT64_MIN)
			snprintf(reason, sizeof(reason),
				 "no /proc/driver/gdrdrv/nv_get_pages_refcount (load gdrdrv with dbg_enabled=1)");
		else if (cases[i].run(ctx, g) == 0)
			clean_since(ctx, &before);
		fflush(stdout);
		if (reason[0]) {
			failed++;
			printf("# %s.%s: %s\nnot ok %zu %s.%s\n", mode, cases[i].name, reason, i + 1,
			       mode, cases[i].name);
		} else {
			printf("ok %zu %s.%s\n", i + 1, mode, cases[i].name);
		}
		fflush(stdout);
	}
	if (g)
		gdr_close(g);
	if (ctx >= 0)
		gpumem_close(ctx);
	return failed ? 1 : 0;
}
