/* SPDX-License-Identifier: MIT */
/*
 * rt_layout: the region as the shim exports it.  Prints the symbol's ELF
 * size and type (dladdr1 RTLD_DL_SYMENT), the header the shim filled in
 * and whether each published layout offset matches region.h.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	struct tdstat_region *region = fx_region();
	const struct tdstat_region_header *h = &region->header;
	const struct tdstat_layout *l = &h->layout;
	const ElfW(Sym) *symbol = NULL;
	Dl_info info;

	if (!dladdr1(region, &info, (void **)&symbol, RTLD_DL_SYMENT) || !symbol)
		fx_die("dladdr1 found no symbol for the region");
	printf("symbol_name=%s\n", info.dli_sname ? info.dli_sname : "(none)");
	printf("symbol_is_start=%d\n", info.dli_saddr == (void *)region);
	printf("symbol_size_ok=%d\n", symbol->st_size >= sizeof(struct tdstat_region));
	printf("symbol_object=%d\n", ELF64_ST_TYPE(symbol->st_info) == STT_OBJECT);
	printf("symbol_global=%d\n", ELF64_ST_BIND(symbol->st_info) == STB_GLOBAL);
	printf("object=%s\n", info.dli_fname ? info.dli_fname : "(none)");

	printf("magic_ok=%d\n", h->magic == TDSTAT_REGION_MAGIC);
	printf("abi_major=%u\n", h->abi_major);
	printf("abi_minor=%u\n", h->abi_minor);
	printf("header_size=%u\n", h->header_size);
	printf("region_size_ok=%d\n",
	       h->region_size >= (uint64_t)h->records_offset + (uint64_t)h->record_capacity * h->record_size &&
	       h->region_size <= symbol->st_size);
	printf("changes_ok=%d\n", h->changes_offset == offsetof(struct tdstat_region, changes) &&
				      h->region_size == sizeof(struct tdstat_region));
	printf("records_offset=%u\n", h->records_offset);
	printf("record_size=%u\n", h->record_size);
	printf("record_capacity=%u\n", h->record_capacity);
	printf("layout_size=%u\n", h->layout_size);
	bool layout_ok = l->control_offset == offsetof(struct tdstat_region_header, control) &&
			 l->status_offset == offsetof(struct tdstat_region_header, status) &&
			 l->record_seq == offsetof(struct tdstat_record, seq) &&
			 l->record_pending == offsetof(struct tdstat_record, pending_ns) &&
			 l->record_copies == offsetof(struct tdstat_record, copy) &&
			 l->record_copy_size == sizeof(struct tdstat_record_copy) &&
			 l->detail_copies == offsetof(struct tdstat_detail, copy) &&
			 l->detail_copy_size == sizeof(struct tdstat_detail_copy) &&
			 l->kind_count == TDSTAT_WAIT_KIND_COUNT;
	/* Every field of region.h's lists. */
#define RECORD_FIELD_OK(type, name, dims) layout_ok = layout_ok && l->name == offsetof(struct tdstat_record_copy, name);
#define DETAIL_FIELD_OK(type, name, dims) layout_ok = layout_ok && l->name == offsetof(struct tdstat_detail_copy, name);
	TDSTAT_RECORD_COPY_FIELDS(RECORD_FIELD_OK)
	TDSTAT_DETAIL_COPY_FIELDS(DETAIL_FIELD_OK)
#undef DETAIL_FIELD_OK
#undef RECORD_FIELD_OK
	printf("layout_ok=%d\n", layout_ok);
	printf("details_ok=%d\n",
	       h->details_offset == h->records_offset + (uint64_t)h->record_capacity * h->record_size &&
	       h->detail_size == sizeof(struct tdstat_detail) &&
	       h->region_size >= (uint64_t)h->details_offset + (uint64_t)h->record_capacity * h->detail_size);
	printf("commit_lag_ns=%llu\n", (unsigned long long)h->commit_lag_ns);
	printf("status_capacity=%u\n", h->status.capacity);
	printf("status_pid_ok=%d\n", h->status.pid == getpid());
	printf("status_start_set=%d\n", h->status.start_ns != 0 && h->status.start_ns <= fx_now_ns());
	printf("status_exit_ns=%llu\n", (unsigned long long)h->status.exit_ns);
	printf("main_record=%d\n", fx_record_of(getpid()).state == TDSTAT_STATE_RUNNABLE);
	return 0;
}
