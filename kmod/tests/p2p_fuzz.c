// SPDX-License-Identifier: GPL-2.0
/*
 * p2p_fuzz: a bounded-time ioctl fuzzer for /dev/gpucts, run in the VM
 * (ci/kmod-vm) against the test provider, under slub_debug.
 *
 *   p2p_fuzz desktop|tegra SECONDS
 *
 * Four threads, each with its own descriptor and one shared one, issue
 * random ioctls: random numbers and sizes (the module's magic and others),
 * the module's commands with random contents (handles, VAs inside and
 * outside the provider's allocations, flags, lengths), and arguments at
 * NULL, kernel, unmapped, read-only and page-straddling addresses.  Beside
 * them, other threads mmap and munmap random handles' offsets and touch the
 * pages, close and reopen the shared descriptor, and free and reallocate
 * the provider's memory (revocations).  CAP_SYS_ADMIN is dropped first, so
 * the raw peer DMA (which takes a bus address as is) stays out of reach.
 *
 * Every call must be answered: 0, or -1 with an errno in 1..4095.  At
 * least one PIN and one mmap must have succeeded (a fuzzer whose every call
 * is refused reaches none of the module's state; the verdict names what
 * never succeeded).  At the end, with every descriptor closed, the module's
 * handle count and the provider's pins and DMA mappings must be what they
 * were before.  The VM runner checks the kernel log for oopses and
 * slub_debug reports.
 *
 * Output: KTAP, one test, with the figures on a "# fuzz" line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "gpucts_p2p.h"
#include "gpucts_testprov.h"

#define NTHREADS	4
#define NALLOCS		8
#define NHANDLES	64

static atomic_ulong calls, unanswered, pins, maps, frees, closes;
static atomic_ulong errno_seen[4096 / 64];
static atomic_int shared_fd = -1;
static atomic_ulong handles[NHANDLES];		/* mmap offsets seen */
static atomic_ullong alloc_va[NALLOCS];
static int tp_fd;
static uint64_t align_bytes;
static volatile int stop;
static char *guard;			/* a page followed by a PROT_NONE page */
static char *rdonly;			/* a read-only page */
static long page;

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: each thread its own state */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static void note(long r)
{
	atomic_fetch_add(&calls, 1);
	if (r == 0 || (r > 0 && r < 0x7fffffff))
		return;
	if (r == -1 && errno > 0 && errno < 4096) {
		atomic_fetch_or(&errno_seen[errno / 64], 1UL << (errno % 64));
		return;
	}
	atomic_fetch_add(&unanswered, 1);
}

static const unsigned long cmds[] = {
	GPUCTS_P2P_IOC_GET_VERSION, GPUCTS_P2P_IOC_PIN, GPUCTS_P2P_IOC_UNPIN,
	GPUCTS_P2P_IOC_PAGE_TABLE, GPUCTS_P2P_IOC_DMA_MAP,
	GPUCTS_P2P_IOC_DMA_UNMAP, GPUCTS_P2P_IOC_EVENTS, GPUCTS_P2P_IOC_STATS,
	GPUCTS_P2P_IOC_PEER_DMA,
};

/* A plausible value for a 64-bit field: handles, VAs, lengths, flags, junk. */
static uint64_t field(uint64_t *s)
{
	uint64_t va = atomic_load(&alloc_va[rnd(s) % NALLOCS]);

	switch (rnd(s) % 8) {
	case 0: return rnd(s) % 70;				/* a handle */
	case 1: return va + (rnd(s) % 4) * align_bytes;		/* in an allocation */
	case 2: return va + rnd(s) % (3 * align_bytes);		/* unaligned */
	case 3: return (rnd(s) % 5) * align_bytes + rnd(s) % 3;	/* a length */
	case 4: return 1ULL << (rnd(s) % 64);			/* a flag bit */
	case 5: return -(rnd(s) % 4096);			/* near overflow */
	case 6: return 0;
	default: return rnd(s);
	}
}

static void *arg_ptr(uint64_t *s, uint64_t *buf, size_t words)
{
	size_t i;

	switch (rnd(s) % 10) {
	case 0: return NULL;
	case 1: return (void *)0xffff888000000000UL;		/* kernel */
	case 2: return (void *)(uintptr_t)(rnd(s) & 0x7fffffffffffUL);
	case 3: return guard + page - (rnd(s) % 64);		/* straddles */
	case 4: return rdonly;
	default:
		for (i = 0; i < words; i++)
			buf[i] = field(s);
		if (rnd(s) % 4 == 0)	/* pads and user pointers zero */
			for (i = 0; i < words; i++)
				if (rnd(s) % 2)
					buf[i] = 0;
		return buf;
	}
}

static void *ioctl_thread(void *p)
{
	uint64_t s = (uintptr_t)p * 0x9e3779b97f4a7c15ULL + 1, buf[16];
	int own = open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	while (!stop) {
		unsigned long cmd;
		int fd = rnd(&s) % 3 ? own : atomic_load(&shared_fd);
		void *arg;
		long r;


		switch (rnd(&s) % 4) {
		case 0:		/* a random number of the module's magic */
			cmd = _IOC(rnd(&s) % 4, 'G', rnd(&s) % 16, rnd(&s) % 128);
			break;
		case 1:		/* anything */
			cmd = (unsigned long)(uint32_t)rnd(&s);
			break;
		default:	/* one of the module's commands */
			cmd = cmds[rnd(&s) % (sizeof(cmds) / sizeof(cmds[0]))];
			break;
		}
		if (rnd(&s) % 8 == 0) {
			/* a well-formed PIN or UNPIN on the shared descriptor, so
			 * the mapping threads find real handles to map
			 */
			struct gpucts_p2p_pin pin = {
				.va = atomic_load(&alloc_va[rnd(&s) % NALLOCS]) +
				      (rnd(&s) % 2) * align_bytes,
				.length = 1 + rnd(&s) % (2 * align_bytes),
			};
			struct gpucts_p2p_unpin un = { .handle = rnd(&s) % 70 };

			fd = atomic_load(&shared_fd);
			if (rnd(&s) % 3) {
				r = ioctl(fd, GPUCTS_P2P_IOC_PIN, &pin);
				if (!r) {
					atomic_fetch_add(&pins, 1);
					atomic_store(&handles[rnd(&s) % NHANDLES],
						     pin.mmap_offset);
				}
			} else {
				r = ioctl(fd, GPUCTS_P2P_IOC_UNPIN, &un);
			}
			note(r);
			continue;
		}
		arg = arg_ptr(&s, buf, 16);
		r = ioctl(fd, cmd, arg);
		note(r);
		if (!r && cmd == GPUCTS_P2P_IOC_PIN) {
			atomic_fetch_add(&pins, 1);
			if (arg == buf)
				atomic_store(&handles[rnd(&s) % NHANDLES], buf[7]);
		}
	}
	close(own);
	return NULL;
}

static __thread sigjmp_buf bus_jmp;
static __thread volatile sig_atomic_t bus_armed;

static void on_fault(int sig)
{
	if (bus_armed)
		siglongjmp(bus_jmp, 1);
	signal(sig, SIG_DFL);
}

/* One word through a mapping; a revoked one raises SIGBUS, which returns here. */
static __attribute__((noinline)) void touch(void *m, size_t word)
{
	if (sigsetjmp(bus_jmp, 1) == 0) {
		bus_armed = 1;
		((volatile uint64_t *)m)[word] ^= 0;
	}
	bus_armed = 0;
}

static void *map_thread(void *p)
{
	uint64_t s = (uintptr_t)p * 0x2545f4914f6cdd1dULL + 7;

	while (!stop) {
		int own = rnd(&s) % 2;
		int fd = own ? open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC) :
			       atomic_load(&shared_fd);
		uint64_t off = atomic_load(&handles[rnd(&s) % NHANDLES]);
		size_t len = (1 + rnd(&s) % 4) * page * (rnd(&s) % 2 ? 1 : 16);
		void *m;

		if (rnd(&s) % 8 == 0)
			off += page * (rnd(&s) % 4);	/* not a handle's offset */
		m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 rnd(&s) % 8 ? MAP_SHARED : MAP_PRIVATE, fd, (off_t)off);
		note(m == MAP_FAILED ? -1 : 0);
		if (m != MAP_FAILED) {
			atomic_fetch_add(&maps, 1);
			touch(m, rnd(&s) % (len / 8));
			munmap(m, len);
		}
		if (own)
			close(fd);
	}
	return NULL;
}

/* close and reopen the shared descriptor; free and reallocate provider memory */
static void *churn_thread(void *p)
{
	uint64_t s = (uintptr_t)p + 99;

	while (!stop) {
		if (rnd(&s) % 2) {
			int nfd = open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC);
			int old = atomic_exchange(&shared_fd, nfd);

			close(old);
			atomic_fetch_add(&closes, 1);
		} else {
			unsigned int i = rnd(&s) % NALLOCS;
			struct gpucts_testprov_free f = { .va = atomic_load(&alloc_va[i]) };
			struct gpucts_testprov_alloc a = { .length = (1 + rnd(&s) % 4) * align_bytes };

			if (!ioctl(tp_fd, GPUCTS_TESTPROV_IOC_FREE, &f))
				atomic_fetch_add(&frees, 1);
			if (!ioctl(tp_fd, GPUCTS_TESTPROV_IOC_ALLOC, &a))
				atomic_store(&alloc_va[i], a.va);
		}
		usleep(2000 + rnd(&s) % 8000);
	}
	return NULL;
}

static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1U << CAP_SYS_ADMIN);
	d[0].permitted &= ~(1U << CAP_SYS_ADMIN);
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct gpucts_testprov_stats ts0, ts1;
	struct gpucts_p2p_stats gs0, gs1;
	pthread_t th[NTHREADS + 3];
	struct sigaction sa = { .sa_handler = on_fault };
	struct timespec t0, t1;
	unsigned long nerr = 0;
	double secs;
	const char *never;
	int i, fd, seconds, ok;

	if (argc != 3 || (strcmp(argv[1], "desktop") && strcmp(argv[1], "tegra")) ||
	    (seconds = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: %s desktop|tegra SECONDS\n", argv[0]);
		return 2;
	}
	align_bytes = strcmp(argv[1], "tegra") ? 65536 : 4096;
	page = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..1\n");
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	guard = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rdonly = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tp_fd = open(GPUCTS_TESTPROV_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	fd = open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (guard == MAP_FAILED || rdonly == MAP_FAILED || tp_fd < 0 || fd < 0 ||
	    mprotect(guard + page, page, PROT_NONE) || drop_cap_sys_admin() ||
	    ioctl(fd, GPUCTS_P2P_IOC_STATS, &gs0) ||
	    ioctl(tp_fd, GPUCTS_TESTPROV_IOC_STATS, &ts0)) {
		printf("not ok 1 fuzz_%s # setup: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 0; i < NALLOCS; i++) {
		struct gpucts_testprov_alloc a = { .length = 4 * align_bytes };

		if (!ioctl(tp_fd, GPUCTS_TESTPROV_IOC_ALLOC, &a))
			alloc_va[i] = a.va;
	}
	atomic_store(&shared_fd, open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, ioctl_thread, (void *)(uintptr_t)(i + 1));
	pthread_create(&th[NTHREADS], NULL, map_thread, (void *)1);
	pthread_create(&th[NTHREADS + 1], NULL, map_thread, (void *)2);
	pthread_create(&th[NTHREADS + 2], NULL, churn_thread, (void *)3);
	sleep(seconds);
	stop = 1;
	for (i = 0; i < NTHREADS + 3; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(atomic_load(&shared_fd));
	close(tp_fd);		/* frees the provider's memory: revokes what is left */
	if (ioctl(fd, GPUCTS_P2P_IOC_STATS, &gs1)) {
		printf("not ok 1 fuzz_%s # STATS: %s\n", argv[1], strerror(errno));
		return 1;
	}
	tp_fd = open(GPUCTS_TESTPROV_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (tp_fd < 0 || ioctl(tp_fd, GPUCTS_TESTPROV_IOC_STATS, &ts1)) {
		printf("not ok 1 fuzz_%s # testprov STATS: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 0; i < 4096 / 64; i++)
		nerr += __builtin_popcountl(atomic_load(&errno_seen[i]));
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# fuzz %s: %lu calls in %.1f s (%.0f calls/s), %lu distinct errnos, %lu unanswered, %lu pins, %lu mappings, %lu frees, %lu closes; handles %u -> %u, provider pins %u -> %u, DMA mappings %u -> %u, violations %llu -> %llu\n",
	       argv[1], atomic_load(&calls), secs, atomic_load(&calls) / secs, nerr,
	       atomic_load(&unanswered), atomic_load(&pins), atomic_load(&maps),
	       atomic_load(&frees),
	       atomic_load(&closes), gs0.handles, gs1.handles, ts0.pins, ts1.pins,
	       ts0.dma_mappings, ts1.dma_mappings, (unsigned long long)ts0.violations,
	       (unsigned long long)ts1.violations);
	ok = !atomic_load(&unanswered) && gs1.handles == gs0.handles &&
	     ts1.pins == ts0.pins && ts1.dma_mappings == ts0.dma_mappings &&
	     ts1.violations == ts0.violations && atomic_load(&calls) > 0;
	/* calls that all fail prove nothing: a pin and a mapping must have succeeded */
	never = !atomic_load(&pins) && !atomic_load(&maps) ? "no PIN and no mmap succeeded" :
		!atomic_load(&pins) ? "no PIN succeeded" :
		!atomic_load(&maps) ? "no mmap succeeded" : NULL;
	if (never)
		ok = 0;
	printf("%s 1 fuzz_%s%s%s\n", ok ? "ok" : "not ok", argv[1],
	       never ? " # " : "", never ? never : "");
	close(tp_fd);
	close(fd);
	return ok ? 0 : 1;
}
