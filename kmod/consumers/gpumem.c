// SPDX-License-Identifier: MIT
/* gpumem: GPU memory from gpucts_testprov for consumer test programs. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpucts_testprov.h"
#include "gpumem.h"

static int call(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int gpumem_open(void)
{
	int fd = open(GPUCTS_TESTPROV_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int gpumem_alloc(int ctx, uint64_t len, uint64_t *va)
{
	struct gpucts_testprov_alloc a;
	int r;

	memset(&a, 0, sizeof(a));
	a.length = len;
	r = call(ctx, GPUCTS_TESTPROV_IOC_ALLOC, &a);
	if (!r)
		*va = a.va;
	return r;
}

int gpumem_free(int ctx, uint64_t va, uint32_t *callbacks)
{
	struct gpucts_testprov_free f;
	int r;

	memset(&f, 0, sizeof(f));
	f.va = va;
	r = call(ctx, GPUCTS_TESTPROV_IOC_FREE, &f);
	if (!r && callbacks)
		*callbacks = f.callbacks;
	return r;
}

int gpumem_stats(int ctx, struct gpumem_stats *s)
{
	struct gpucts_testprov_stats t;
	int r;

	memset(&t, 0, sizeof(t));
	r = call(ctx, GPUCTS_TESTPROV_IOC_STATS, &t);
	if (r)
		return r;
	s->pins = t.pins;
	s->persistent_pins = t.persistent_pins;
	s->dma_mappings = t.dma_mappings;
	s->allocs = t.allocs;
	s->callbacks = t.callbacks;
	s->violations = t.violations;
	return 0;
}

int gpumem_put_delay(int ctx, uint32_t delay_us)
{
	struct gpucts_testprov_inject in;

	memset(&in, 0, sizeof(in));
	in.put_delay_us = delay_us;
	return call(ctx, GPUCTS_TESTPROV_IOC_INJECT, &in);
}

void gpumem_close(int ctx)
{
	close(ctx);
}

uint64_t gpumem_pattern(uint64_t gpu_va)
{
	return GPUCTS_TESTPROV_PATTERN(gpu_va);
}
