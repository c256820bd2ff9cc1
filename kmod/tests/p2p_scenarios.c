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
 *
 * This file holds the helpers, the scenario table and main; the scenarios
 * are in p2p_scenarios_pin.c, p2p_scenarios_iommu.c and
 * p2p_scenarios_contract.c, and p2p_scenarios.h is what they share.
 */
#include "p2p_scenarios.h"

int tegra;
uint64_t align_bytes;	/* from the spec, not from the module */
char reason[512];

int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

int open_gp(void)
{
	return open(GPUCTS_P2P_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

int open_tp(void)
{
	return open(GPUCTS_TESTPROV_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

int tp_alloc(int tp, uint64_t len, uint64_t *va, uint8_t *uuid)
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

int tp_free(int tp, uint64_t va)
{
	struct gpucts_testprov_free f = { .va = va };
	int r = xioctl(tp, GPUCTS_TESTPROV_IOC_FREE, &f);

	return r ? r : (int)f.callbacks;
}

int tp_inject(int tp, uint32_t enomem, uint32_t badver, uint32_t delay)
{
	struct gpucts_testprov_inject i = {
		.enomem = enomem, .bad_version = badver, .put_delay_us = delay,
	};
	return xioctl(tp, GPUCTS_TESTPROV_IOC_INJECT, &i);
}

/* errno of the first STATS ioctl that failed in the running scenario (0: none) */
int stats_err;

/*
 * The provider's counters. A failed STATS ioctl is recorded in stats_err and
 * fails the scenario (main checks it after each one), whatever the counters
 * returned then (zeros) made the scenario's own checks conclude.
 */
struct gpucts_testprov_stats tp_stats(int tp)
{
	struct gpucts_testprov_stats s;
	int r;

	memset(&s, 0, sizeof(s));
	r = xioctl(tp, GPUCTS_TESTPROV_IOC_STATS, &s);
	if (r && !stats_err)
		stats_err = -r;
	return s;
}

int gp_pin(int fd, uint64_t va, uint64_t len, uint32_t flags,
	   struct gpucts_p2p_pin *p)
{
	memset(p, 0, sizeof(*p));
	p->va = va;
	p->length = len;
	p->flags = flags;
	return xioctl(fd, GPUCTS_P2P_IOC_PIN, p);
}

int gp_unpin(int fd, uint64_t h, struct gpucts_p2p_unpin *u)
{
	struct gpucts_p2p_unpin tmp;

	if (!u)
		u = &tmp;
	memset(u, 0, sizeof(*u));
	u->handle = h;
	return xioctl(fd, GPUCTS_P2P_IOC_UNPIN, u);
}

int gp_events(int fd, uint64_t h, struct gpucts_p2p_events *e)
{
	memset(e, 0, sizeof(*e));
	e->handle = h;
	return xioctl(fd, GPUCTS_P2P_IOC_EVENTS, e);
}

int gp_pt(int fd, uint64_t h, struct gpucts_p2p_page_table *t,
	  uint64_t *addrs, uint32_t n)
{
	memset(t, 0, sizeof(*t));
	t->handle = h;
	t->addrs_ptr = (uintptr_t)addrs;
	t->addrs_count = n;
	return xioctl(fd, GPUCTS_P2P_IOC_PAGE_TABLE, t);
}

void *gp_mmap(int fd, const struct gpucts_p2p_pin *p, size_t len, int *err)
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

int read_word(volatile uint64_t *p, uint64_t *val)
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
int check_pattern(const void *map, uint64_t gpu_va, size_t len)
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

struct scenario {
	const char *name;
	int (*fn)(struct ctx *c);
};

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
