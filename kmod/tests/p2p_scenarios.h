/* SPDX-License-Identifier: GPL-2.0 */
/*
 * p2p_scenarios: what its files share (p2p_scenarios.c defines the globals
 * and the helpers; p2p_scenarios_*.c the scenarios of the table).
 */
#ifndef P2P_SCENARIOS_H
#define P2P_SCENARIOS_H

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

extern int tegra;
extern uint64_t align_bytes;	/* from the spec, not from the module */
extern char reason[512];
/* errno of the first STATS ioctl that failed in the running scenario (0: none) */
extern int stats_err;

#define FAIL(...) do { snprintf(reason, sizeof(reason), __VA_ARGS__); return -1; } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)
/* a call expected to fail with exactly errno e */
#define CHECK_ERR(call, e, what) do { int r_ = (call); \
	if (r_ != -(e)) FAIL("%s: got %d (%s), want -%s", what, r_, \
			      r_ < 0 ? strerror(-r_) : "success", #e); } while (0)
#define CHECK_OK(call, what) do { int r_ = (call); \
	if (r_) FAIL("%s: %s", what, strerror(-r_)); } while (0)

struct ctx {
	int gp, tp;
};

/* p2p_scenarios.c: the helpers */
int xioctl(int fd, unsigned long cmd, void *arg);
int open_gp(void);
int open_tp(void);
int tp_alloc(int tp, uint64_t len, uint64_t *va, uint8_t *uuid);
int tp_free(int tp, uint64_t va);
int tp_inject(int tp, uint32_t enomem, uint32_t badver, uint32_t delay);
struct gpucts_testprov_stats tp_stats(int tp);
int gp_pin(int fd, uint64_t va, uint64_t len, uint32_t flags,
	   struct gpucts_p2p_pin *p);
int gp_unpin(int fd, uint64_t h, struct gpucts_p2p_unpin *u);
int gp_events(int fd, uint64_t h, struct gpucts_p2p_events *e);
int gp_pt(int fd, uint64_t h, struct gpucts_p2p_page_table *t,
	  uint64_t *addrs, uint32_t n);
void *gp_mmap(int fd, const struct gpucts_p2p_pin *p, size_t len, int *err);
/* Read one word, reporting SIGBUS instead of dying. */
int read_word(volatile uint64_t *p, uint64_t *val);
/* The provider fills word at GPU VA x with GPUCTS_TESTPROV_PATTERN(x). */
int check_pattern(const void *map, uint64_t gpu_va, size_t len);

/* p2p_scenarios_pin.c: a helper p2p_scenarios_contract.c uses too */
int drop_cap(int cap);

/* p2p_scenarios_iommu.c: a helper p2p_scenarios_pin.c uses too */
int sysfs_line(const char *dir, const char *file, char *buf, size_t n);

/* the scenarios of p2p_scenarios_pin.c */
int sc_version(struct ctx *c);
int sc_pin_unpin_aligned(struct ctx *c);
int sc_pin_unaligned_rounded(struct ctx *c);
int sc_pin_zero_length(struct ctx *c);
int sc_provider_rejects_unaligned(struct ctx *c);
int sc_page_table(struct ctx *c);
int sc_mmap_cpu_access(struct ctx *c);
int sc_persistent_survives_free(struct ctx *c);
int sc_revoked_on_free(struct ctx *c);
int sc_two_pins_one_revoked(struct ctx *c);
int sc_dma_map_unmap(struct ctx *c);
int sc_dma_mapping_freed_by_callback(struct ctx *c);
int sc_bad_args(struct ctx *c);
int sc_other_process_eacces(struct ctx *c);
int sc_addresses_need_cap_sys_admin(struct ctx *c);
int sc_injected_enomem(struct ctx *c);
int sc_incompatible_version(struct ctx *c);
int sc_revoke_races_unpin(struct ctx *c);
int sc_revoke_with_ioctls_in_flight(struct ctx *c);
int sc_process_killed_with_pins(struct ctx *c);
int sc_fd_closed_with_mapping(struct ctx *c);
int sc_put_pages_callback_semantics(struct ctx *c);

/* the scenarios of p2p_scenarios_iommu.c */
int sc_iommu_free_waits_for_peer_dma(struct ctx *c);
int sc_iommu_iova_not_physical(struct ctx *c);
int sc_iommu_dma_roundtrip(struct ctx *c);
int sc_iommu_stale_iova_faults_after_revoke(struct ctx *c);

/* the scenarios of p2p_scenarios_contract.c */
int sc_get_pages_null_callback_refused(struct ctx *c);
int sc_pin_of_freed_va_einval(struct ctx *c);
int sc_overlapping_pins_partial_unpin(struct ctx *c);
int sc_revoked_on_context_destroy(struct ctx *c);
int sc_dev_node_unprivileged_eacces(struct ctx *c);
int sc_pin_charged_to_memlock(struct ctx *c);
int sc_pin_without_tokens_owner_only(struct ctx *c);
int sc_pin_with_tokens_must_match(struct ctx *c);
int sc_unmap_only_after_callback_returns(struct ctx *c);
int sc_page_table_minor_version_injection(struct ctx *c);
int sc_dma_mapping_version_injection(struct ctx *c);
int sc_get_pages_races_free_of_va(struct ctx *c);
int sc_stray_callback_invalid_context_ignored(struct ctx *c);
int sc_invalidation_races_teardown(struct ctx *c);
int sc_close_without_unmap(struct ctx *c);
int sc_unaligned_length_0x10008_on_64k_pages(struct ctx *c);
int sc_fd_passing_handles_stay_with_pinner(struct ctx *c);
int sc_child_thread_pins_and_unpins(struct ctx *c);

#endif /* P2P_SCENARIOS_H */
