// SPDX-License-Identifier: MIT
/* gpumem: GPU memory from gpucts_testprov for consumer test programs. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
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

int gpumem_clean_since(int ctx, const struct gpumem_stats *before, const char *who,
		       char *why, size_t n)
{
	struct gpumem_stats s;
	int r = gpumem_stats(ctx, &s);

	if (r)
		snprintf(why, n, "stand-in STATS: %s", strerror(-r));
	else if (s.violations != before->violations)
		snprintf(why, n, "the stand-in saw %llu contract violation(s) by %s (its log names them)",
			 (unsigned long long)(s.violations - before->violations), who);
	else if (s.pins != before->pins || s.persistent_pins != before->persistent_pins ||
		 s.dma_mappings != before->dma_mappings)
		snprintf(why, n, "left: %u pins (%u persistent), %u DMA mappings; %u (%u), %u before",
			 s.pins, s.persistent_pins, s.dma_mappings, before->pins,
			 before->persistent_pins, before->dma_mappings);
	else if (s.allocs != before->allocs)
		snprintf(why, n, "allocations left: %u, %u before", s.allocs, before->allocs);
	else
		return 0;
	return -1;
}

static void *free_thread(void *arg)
{
	struct gpumem_async_free *f = arg;

	f->result = gpumem_free(f->ctx, f->va, NULL);
	return NULL;
}

int gpumem_free_start(struct gpumem_async_free *f, int ctx, uint64_t va)
{
	pthread_t t;
	int r;

	f->ctx = ctx;
	f->va = va;
	f->result = 0;
	r = pthread_create(&t, NULL, free_thread, f);
	f->thread = (unsigned long)t;
	return -r;
}

int gpumem_free_join(struct gpumem_async_free *f)
{
	pthread_join((pthread_t)f->thread, NULL);
	return f->result;
}
