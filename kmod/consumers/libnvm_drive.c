// SPDX-License-Identifier: MIT
/*
 * libnvm_drive: drives the ssd-gpu-dma kernel module (libnvm.ko, built
 * unmodified from ../shared/corpora/gpudirect-consumers/ssd-gpu-dma with
 * CUDA support) through its own ioctls (src/ioctl.h there) over GPU memory
 * from the stand-in (gpumem.h), for the NVMe controller it bound in the VM
 * (QEMU's nvme behind intel-iommu), and prints KTAP, one result per case.
 *
 *   libnvm_drive /dev/libnvm0 safe|races
 *
 * `races` runs the case that races the module's callback against its own
 * unmap, apart: where the module loses that race the kernel may die, so the
 * VM runner gives it a boot of its own.
 *
 * NVM_MAP_DEVICE_MEMORY pins the memory (nvidia_p2p_get_pages, with a free
 * callback) and maps it for the controller (nvidia_p2p_dma_map_pages); its
 * bus addresses come back to the caller. Every case also holds the module to
 * the stand-in's counts: no contract violation, and every pin, DMA mapping and
 * allocation gone at its end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ioctl.h"
#include "gpumem.h"

#define PAGES 4
#define LEN ((uint64_t)PAGES * GPUMEM_PAGE_SIZE)
#define RACE_ROUNDS 64

static char reason[512];
static const char *ctrl_path;

#define FAIL(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return -1; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static int map_device(int ctrl, uint64_t va, uint64_t *ioaddrs)
{
	struct nvm_ioctl_map m = { .vaddr_start = va, .n_pages = PAGES, .ioaddrs = ioaddrs };

	return ioctl(ctrl, NVM_MAP_DEVICE_MEMORY, &m) ? -errno : 0;
}

static int unmap(int ctrl, uint64_t va)
{
	uint64_t addr = va;

	return ioctl(ctrl, NVM_UNMAP_MEMORY, &addr) ? -errno : 0;
}

static int clean_since(int ctx, const struct gpumem_stats *before)
{
	return gpumem_clean_since(ctx, before, "the module", reason, sizeof(reason));
}

/* One bus address per 64 KiB GPU page: non-zero, aligned to a CPU page, distinct. */
static int check_ioaddrs(const uint64_t *a)
{
	int i, j;

	for (i = 0; i < PAGES; i++) {
		CHECK(a[i] && !(a[i] & 4095), "bus address %d is 0x%llx", i,
		      (unsigned long long)a[i]);
		for (j = 0; j < i; j++)
			CHECK(a[i] != a[j], "bus addresses %d and %d are both 0x%llx", j, i,
			      (unsigned long long)a[i]);
	}
	return 0;
}

/* Map for the controller, the bus addresses back, then unmap. */
static int map_unmap(int ctx, int ctrl)
{
	uint64_t va, io[PAGES] = { 0 };
	struct gpumem_stats mid;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	r = map_device(ctrl, va, io);
	CHECK(!r, "NVM_MAP_DEVICE_MEMORY: %s", strerror(-r));
	if (check_ioaddrs(io))
		return -1;
	CHECK(!gpumem_stats(ctx, &mid), "STATS");
	CHECK(mid.pins >= 1 && mid.dma_mappings >= 1, "mapped, yet the stand-in holds %u pins and %u DMA mappings",
	      mid.pins, mid.dma_mappings);
	r = unmap(ctrl, va);
	CHECK(!r, "NVM_UNMAP_MEMORY: %s", strerror(-r));
	CHECK(!gpumem_free(ctx, va, NULL), "free");
	return 0;
}

/* cuMemFree with the memory mapped: the callback fires once and must give the
 * DMA mapping and the page table back (free_dma_mapping, free_page_table);
 * unmapping afterwards finds nothing. */
static int free_with_live_map(int ctx, int ctrl)
{
	uint64_t va, io[PAGES] = { 0 };
	uint32_t callbacks = 0;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	r = map_device(ctrl, va, io);
	CHECK(!r, "NVM_MAP_DEVICE_MEMORY: %s", strerror(-r));
	r = gpumem_free(ctx, va, &callbacks);
	CHECK(!r, "free: %s", strerror(-r));
	CHECK(callbacks == 1, "the free fired %u callbacks, want 1", callbacks);
	r = unmap(ctrl, va);
	CHECK(r == -EINVAL, "NVM_UNMAP_MEMORY after the callback: %s, want EINVAL (the map is gone)",
	      r ? strerror(-r) : "success");
	return 0;
}

/* A process exits with its memory mapped: the stand-in's context closes
 * (the CUDA context going away), the callback fires, nothing stays. */
static int exit_with_live_map(int ctx, int ctrl)
{
	pid_t pid;
	int st;

	(void)ctx;
	(void)ctrl;
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int c = gpumem_open(), d = open(ctrl_path, O_RDWR);
		uint64_t va, io[PAGES];

		if (c < 0 || d < 0 || gpumem_alloc(c, LEN, &va) || map_device(d, va, io))
			_exit(2);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s %d",
	      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}

/* NVM_UNMAP_MEMORY racing the free (the module's callback unlinks the map
 * too); the stand-in delays put_pages to widen the window. Either may win:
 * the unmap succeeds, or finds the map gone (EINVAL). */
static int unmap_races_free(int ctx, int ctrl)
{
	int round, won = 0;

	CHECK(!gpumem_put_delay(ctx, 200), "INJECT put_delay_us");
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct gpumem_async_free f;
		uint64_t va, io[PAGES];
		int r = gpumem_alloc(ctx, LEN, &va), freed;

		CHECK(!r, "alloc: %s", strerror(-r));
		r = map_device(ctrl, va, io);
		CHECK(!r, "round %d: NVM_MAP_DEVICE_MEMORY: %s", round, strerror(-r));
		CHECK(!gpumem_free_start(&f, ctx, va), "starting the free");
		if (round & 1)
			usleep(50);
		r = unmap(ctrl, va);
		freed = gpumem_free_join(&f);
		CHECK(!freed, "round %d: free: %s", round, strerror(-freed));
		CHECK(!r || r == -EINVAL, "round %d: NVM_UNMAP_MEMORY: %s", round, strerror(-r));
		won += !r;
	}
	CHECK(!gpumem_put_delay(ctx, 0), "INJECT put_delay_us 0");
	printf("# unmap_races_free: the unmap came first in %d of %d rounds\n", won, RACE_ROUNDS);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(int ctx, int ctrl);
	int race;
} all_cases[] = {
	{ "map_unmap", map_unmap, 0 },
	{ "free_with_live_map", free_with_live_map, 0 },
	{ "exit_with_live_map", exit_with_live_map, 0 },
	{ "unmap_races_free", unmap_races_free, 1 },
};

int main(int argc, char **argv)
{
	size_t total = sizeof(all_cases) / sizeof(all_cases[0]), n = 0, i, k = 0;
	int failed = 0, ctx, ctrl, races;

	if (argc != 3 || (strcmp(argv[2], "safe") && strcmp(argv[2], "races"))) {
		fprintf(stderr, "usage: %s /dev/libnvmN safe|races\n", argv[0]);
		return 2;
	}
	ctrl_path = argv[1];
	races = !strcmp(argv[2], "races");
	for (i = 0; i < total; i++)
		n += all_cases[i].race == races;
	printf("KTAP version 1\n1..%zu\n", n);
	fflush(stdout);
	ctx = gpumem_open();
	ctrl = open(ctrl_path, O_RDWR);
	for (i = 0; i < total; i++) {
		struct gpumem_stats before;

		if (all_cases[i].race != races)
			continue;
		k++;
		reason[0] = 0;
		if (ctrl < 0)
			snprintf(reason, sizeof(reason), "%s: %s (did the module bind the NVMe controller?)",
				 ctrl_path, strerror(errno));
		else if (ctx < 0)
			snprintf(reason, sizeof(reason), "no stand-in: %s", strerror(-ctx));
		else if (gpumem_stats(ctx, &before))
			snprintf(reason, sizeof(reason), "stand-in STATS failed");
		else if (all_cases[i].run(ctx, ctrl) == 0)
			clean_since(ctx, &before);
		fflush(stdout);
		if (reason[0]) {
			failed++;
			printf("# callback.%s: %s\nnot ok %zu callback.%s\n", all_cases[i].name,
			       reason, k, all_cases[i].name);
		} else {
			printf("ok %zu callback.%s\n", k, all_cases[i].name);
		}
		fflush(stdout);
	}
	if (ctrl >= 0)
		close(ctrl);
	if (ctx >= 0)
		gpumem_close(ctx);
	return failed ? 1 : 0;
}
