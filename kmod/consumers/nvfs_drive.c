// SPDX-License-Identifier: MIT
/*
 * nvfs_drive: drives NVIDIA's GPUDirect Storage module (nvidia-fs, built
 * unmodified from ../shared/corpora/gpudirect-consumers/gds-nvidia-fs) through
 * its ioctls over GPU memory from the stand-in (gpumem.h), and prints KTAP.
 *
 *   nvfs_drive safe|major2
 *
 * cuFile registers a GPU buffer as nvidia-fs's interface has it: a shadow
 * buffer mmap()ed from /dev/nvidia-fs0, a 4 KiB-aligned end-fence page, and
 * NVFS_IOCTL_MAP with the GPU address, which pins the GPU memory
 * (nvidia_p2p_get_pages); unmapping the shadow buffer unpins it. No I/O runs:
 * nvidia-fs's DMA needs an NVMe driver patched for it (MOFED), which this
 * guest does not have. `major2` is for a build against a header whose page
 * tables are major 1 (570 and older) while the stand-in, like R580+, hands out
 * major 2: the map must be refused cleanly; the VM runner gives it a boot of
 * its own, since the kernel may die of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpumem.h"

/* nvidia-fs's ioctl interface (nvfs-core.h of the corpus): NVFS_IOCTL_MAP
 * takes the parameter union, whose map member comes first. */
struct nvfs_ioctl_map {
	int64_t size;		/* GPU buffer size */
	uint64_t pdevinfo;	/* PCI domain/bus/device/function of the GPU */
	uint64_t cpuvaddr;	/* shadow buffer */
	uint64_t gpuvaddr;	/* GPU buffer */
	uint64_t end_fence_addr;
	uint32_t sbuf_block;	/* 4 KiB blocks of the shadow buffer */
	uint16_t is_bounce_buffer;
	uint8_t padding[2];
} __attribute__((packed, aligned(8)));
#define NVFS_IOCTL_MAP _IOW('t', 3, int)

#define LEN (4 * (uint64_t)GPUMEM_PAGE_SIZE)
#define SHADOW GPUMEM_PAGE_SIZE

static char reason[512];

#define FAIL(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return -1; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

struct reg {
	int fd;
	void *shadow;
	void *fence;
};

/* Register [va, va + LEN) as cuFile does; 0 or -errno. */
static int nvfs_register(uint64_t va, struct reg *r)
{
	static union {
		struct nvfs_ioctl_map map;
		uint8_t bytes[64 << 10];	/* the whole union, whatever its size */
	} param;
	int e;

	r->fd = open("/dev/nvidia-fs0", O_RDWR | O_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->shadow = mmap(NULL, SHADOW, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->shadow == MAP_FAILED) {
		e = -errno;
		close(r->fd);
		return e;
	}
	r->fence = aligned_alloc(4096, 4096);
	memset(r->fence, 0, 4096);
	memset(&param, 0, sizeof(param));
	param.map.size = LEN;
	param.map.cpuvaddr = (uintptr_t)r->shadow;
	param.map.gpuvaddr = va;
	param.map.end_fence_addr = (uintptr_t)r->fence;
	param.map.sbuf_block = SHADOW / 4096;
	return ioctl(r->fd, NVFS_IOCTL_MAP, &param) ? -errno : 0;
}

static void nvfs_unregister(struct reg *r)
{
	munmap(r->shadow, SHADOW);
	close(r->fd);
	free(r->fence);
}

static int clean_since(int ctx, const struct gpumem_stats *before)
{
	return gpumem_clean_since(ctx, before, "nvidia-fs", reason, sizeof(reason));
}

/* Register: the stand-in holds a pin of the buffer; unregister: it is gone. */
static int map_unmap(int ctx)
{
	struct gpumem_stats before, mid;
	struct reg g;
	uint64_t va;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	CHECK(!gpumem_stats(ctx, &before), "STATS");
	r = nvfs_register(va, &g);
	CHECK(!r, "NVFS_IOCTL_MAP: %s", strerror(-r));
	CHECK(!gpumem_stats(ctx, &mid), "STATS");
	CHECK(mid.pins == before.pins + 1, "registered, yet the stand-in holds %u pins (%u before)",
	      mid.pins, before.pins);
	nvfs_unregister(&g);
	CHECK(!gpumem_stats(ctx, &mid), "STATS");
	CHECK(mid.pins == before.pins, "unregistered, yet the stand-in holds %u pins (%u before)",
	      mid.pins, before.pins);
	CHECK(!gpumem_free(ctx, va, NULL), "free");
	return 0;
}

/* cuMemFree with the buffer registered: a callback pin's callback fires and
 * must give the page table back; unregistering afterwards is clean. */
static int free_while_registered(int ctx)
{
	struct gpumem_stats before, mid;
	uint32_t callbacks = 0;
	struct reg g;
	uint64_t va;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	CHECK(!gpumem_stats(ctx, &before), "STATS");
	r = nvfs_register(va, &g);
	CHECK(!r, "NVFS_IOCTL_MAP: %s", strerror(-r));
	r = gpumem_free(ctx, va, &callbacks);
	CHECK(!r, "free: %s", strerror(-r));
	CHECK(!gpumem_stats(ctx, &mid), "STATS");
	CHECK(callbacks == 1 ? mid.pins == before.pins : mid.persistent_pins > before.persistent_pins,
	      "after the free (%u callbacks) the stand-in holds %u pins (%u persistent), %u before",
	      callbacks, mid.pins, mid.persistent_pins, before.pins);
	nvfs_unregister(&g);
	return 0;
}

/* A process exits with a registered buffer: nothing stays. */
static int exit_while_registered(int ctx)
{
	pid_t pid = fork();
	int st;

	(void)ctx;
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int c = gpumem_open();
		struct reg g;
		uint64_t va;

		if (c < 0 || gpumem_alloc(c, LEN, &va) || nvfs_register(va, &g))
			_exit(2);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s %d",
	      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}

/* Built for major-1 page tables, handed a major-2 one: nvidia-fs must refuse
 * the registration and give the pages back. */
static int major2_refused(int ctx)
{
	struct reg g;
	uint64_t va;
	int r = gpumem_alloc(ctx, LEN, &va);

	CHECK(!r, "alloc: %s", strerror(-r));
	r = nvfs_register(va, &g);
	CHECK(r, "NVFS_IOCTL_MAP accepted a major-2 page table with a major-1 header");
	nvfs_unregister(&g);
	CHECK(!gpumem_free(ctx, va, NULL), "free");
	return 0;
}

static const struct {
	const char *name;
	int (*run)(int ctx);
	int major2;
} all_cases[] = {
	{ "map_unmap", map_unmap, 0 },
	{ "free_while_registered", free_while_registered, 0 },
	{ "exit_while_registered", exit_while_registered, 0 },
	{ "major2_refused", major2_refused, 1 },
};

int main(int argc, char **argv)
{
	size_t total = sizeof(all_cases) / sizeof(all_cases[0]), n = 0, i, k = 0;
	int failed = 0, ctx, major2;

	if (argc != 2 || (strcmp(argv[1], "safe") && strcmp(argv[1], "major2"))) {
		fprintf(stderr, "usage: %s safe|major2\n", argv[0]);
		return 2;
	}
	major2 = !strcmp(argv[1], "major2");
	for (i = 0; i < total; i++)
		n += all_cases[i].major2 == major2;
	printf("KTAP version 1\n1..%zu\n", n);
	fflush(stdout);
	ctx = gpumem_open();
	for (i = 0; i < total; i++) {
		struct gpumem_stats before;

		if (all_cases[i].major2 != major2)
			continue;
		k++;
		reason[0] = 0;
		if (ctx < 0)
			snprintf(reason, sizeof(reason), "no stand-in: %s", strerror(-ctx));
		else if (gpumem_stats(ctx, &before))
			snprintf(reason, sizeof(reason), "stand-in STATS failed");
		else if (all_cases[i].run(ctx) == 0)
			clean_since(ctx, &before);
		if (reason[0]) {
			failed++;
			printf("# %s: %s\nnot ok %zu %s\n", all_cases[i].name, reason, k,
			       all_cases[i].name);
		} else {
			printf("ok %zu %s\n", k, all_cases[i].name);
		}
		fflush(stdout);
	}
	if (ctx >= 0)
		gpumem_close(ctx);
	return failed ? 1 : 0;
}
