/* SPDX-License-Identifier: MIT */
/*
 * A debugger of its own: built on the system <thread_db.h> and
 * <proc_service.h> only, linked with -lc_db, supplying its own ps_*
 * routines the way gdb does.  Its symbol lookup ignores the object name
 * and reads each mapped file's .dynsym from disk, a different path from
 * libtdstat_ps's.  One variant fails every read: libc_db must say
 * TD_DBERR.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <proc_service.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <thread_db.h>
#include <unistd.h>

#include "live_target.h"

struct ps_prochandle {
	pid_t pid;
	bool fail_reads;
	int lookups;
};

/* The symbol's offset from the file's first loadable address, or 0. */
static uintptr_t file_symbol(const char *path, const char *name, uintptr_t *first_vaddr)
{
	uintptr_t found = 0;
	struct stat info;
	ElfW(Ehdr) *header;
	unsigned char *file;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &info) != 0 || (size_t)info.st_size < sizeof(ElfW(Ehdr))) {
		close(fd);
		return 0;
	}
	file = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return 0;
	header = (ElfW(Ehdr) *)file;
	if (memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 && header->e_shoff &&
	    header->e_shoff + (uint64_t)header->e_shnum * sizeof(ElfW(Shdr)) <= (uint64_t)info.st_size) {
		ElfW(Shdr) *sections = (ElfW(Shdr) *)(file + header->e_shoff);
		ElfW(Phdr) *phdrs = (ElfW(Phdr) *)(file + header->e_phoff);

		*first_vaddr = UINTPTR_MAX;
		for (int i = 0; i < header->e_phnum; i++)
			if (phdrs[i].p_type == PT_LOAD && *first_vaddr == UINTPTR_MAX)
				*first_vaddr = phdrs[i].p_vaddr & ~(uintptr_t)4095;
		for (int i = 0; i < header->e_shnum && !found; i++) {
			ElfW(Shdr) *strings;
			ElfW(Sym) *symbols;

			if (sections[i].sh_type != SHT_DYNSYM || sections[i].sh_link >= header->e_shnum)
				continue;
			strings = &sections[sections[i].sh_link];
			symbols = (ElfW(Sym) *)(file + sections[i].sh_offset);
			for (size_t j = 0; j < sections[i].sh_size / sizeof(ElfW(Sym)); j++) {
				if (symbols[j].st_shndx != SHN_UNDEF && symbols[j].st_name < strings->sh_size &&
				    strcmp((char *)file + strings->sh_offset + symbols[j].st_name, name) == 0) {
					found = symbols[j].st_value;
					break;
				}
			}
		}
	}
	munmap(file, (size_t)info.st_size);
	return found;
}

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
			   psaddr_t *sym_addr)
{
	char path[64], line[4096];
	FILE *maps;

	(void)object_name; /* gdb ignores it too */
	ph->lookups++;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)ph->pid);
	maps = fopen(path, "r");
	if (!maps)
		return PS_ERR;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, offset;
		int name_at = 0;
		uintptr_t value, first_vaddr = 0;

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %n", &start, &offset, &name_at) < 2 || !name_at ||
		    offset != 0 || line[name_at] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		value = file_symbol(line + name_at, sym_name, &first_vaddr);
		if (value) {
			*sym_addr = (psaddr_t)(start - first_vaddr + value);
			fclose(maps);
			return PS_OK;
		}
	}
	fclose(maps);
	return PS_NOSYM;
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	struct iovec local = { buffer, size }, remote = { address, size };

	if (ph->fail_reads)
		return PS_ERR;
	return process_vm_readv(ph->pid, &local, 1, &remote, 1, 0) == (ssize_t)size ? PS_OK : PS_ERR;
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	struct iovec local = { (void *)buffer, size }, remote = { address, size };

	return process_vm_writev(ph->pid, &local, 1, &remote, 1, 0) == (ssize_t)size ? PS_OK : PS_ERR;
}

ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return ps_pdread(ph, address, buffer, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return ps_pdwrite(ph, address, buffer, size);
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph->pid;
}

TestSuite(debugger, .timeout = 30);

Test(debugger, own_proc_service_drives_libc_db)
{
	struct live_target target;
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;
	td_ta_stats_t stats;
	int n = 0;

	cr_assert(live_start(&target, "condvar", 3, 0, NULL));
	ph.pid = target.pid;
	cr_assert_eq(td_init(), TD_OK);
	cr_assert_eq(td_ta_new(&ph, &ta), TD_OK);
	cr_assert_eq(ph.lookups, 1);
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	cr_assert_eq(n, 4);
	cr_assert_eq(td_ta_enable_stats(ta, 1), TD_OK);
	cr_assert_eq(td_ta_setconcurrency(ta, 2), TD_OK);
	tdtest_sleep_ms(20);
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_OK);
	cr_assert_eq(stats.nthreads, 4);
	cr_assert_eq(stats.r_concurrency, 2);
	/* Four threads, short only by the snapshot's edge (tdtest.h). */
	cr_assert_leq(stats.nlwps_num, 4 * stats.nlwps_den);
	/* (the denominator is the window in microseconds) */
	cr_assert_geq((long long)stats.nlwps_num,
		      4 * ((long long)stats.nlwps_den - (long long)(TDTEST_SNAPSHOT_EDGE_NS / 1000)));

	ph.fail_reads = true;
	cr_assert_eq(td_ta_get_stats(ta, &stats), TD_DBERR);
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_DBERR);
	cr_assert_eq(td_ta_reset_stats(ta), TD_DBERR);
	ph.fail_reads = false;
	cr_assert_eq(td_ta_get_nthreads(ta, &n), TD_OK);
	cr_assert_eq(td_ta_delete(ta), TD_OK);
	cr_assert_eq(live_stop(&target), 0);
}

Test(debugger, failing_reads_from_the_start)
{
	struct live_target target;
	struct ps_prochandle ph = { .fail_reads = true };
	td_thragent_t *ta = NULL;

	cr_assert(live_start(&target, "condvar", 1, 0, NULL));
	ph.pid = target.pid;
	cr_assert_eq(td_ta_new(&ph, &ta), TD_DBERR);
	cr_assert_null(ta);
	cr_assert_eq(live_stop(&target), 0);
}

Test(debugger, no_shim_no_libthread)
{
	struct live_target target;
	struct live_options options = { .preload = "" };
	struct ps_prochandle ph = { 0 };
	td_thragent_t *ta = NULL;

	cr_assert(live_start(&target, "condvar", 1, 0, &options));
	ph.pid = target.pid;
	cr_assert_eq(td_ta_new(&ph, &ta), TD_NOLIBTHREAD);
	cr_assert_eq(live_stop(&target), 0);
}
