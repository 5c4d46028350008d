/* SPDX-License-Identifier: MIT */
/*
 * ps_pglobal_lookup is bounded as a whole, not only per object: a child
 * maps crafted ELF files, named libtdshim.so.* so they are searched first,
 * each with a GNU hash chain as long as the lookup allows.
 *
 *   one file mapped thousands of times: searched once, and the symbol is
 *   still found (without that, thousands of full chain walks: minutes);
 *   many different files: the lookup gives up with PS_ERR and
 *   TDPS_LOOKUP_LIMIT, and tdstat says so in one line.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdstat/ps_live.h>

#include "tdtest.h"

#ifndef TDSTAT_PATH
#error "TDSTAT_PATH must name the built tdstat"
#endif

TestSuite(lookup_budget, .timeout = 60);

#define CHAIN_WORDS 65536u

/* The file: ELF header, PT_LOAD + PT_DYNAMIC, the dynamic section, a
 * string table, the null symbol and a GNU hash table of one bucket whose
 * chain never ends and never matches (every hash word 0, even). */
struct crafted {
	ElfW(Ehdr) header;
	ElfW(Phdr) phdrs[2];
	ElfW(Dyn) dynamic[6];
	char strtab[16];
	ElfW(Sym) symtab[1];
	uint32_t gnu_header[4];
	uint64_t bloom[1];
	uint32_t bucket[1];
	uint32_t chain[CHAIN_WORDS];
};

static void crafted_write(const char *path)
{
	struct crafted *elf = calloc(1, sizeof(*elf));
	FILE *file;

	cr_assert_not_null(elf);
	memcpy(elf->header.e_ident, ELFMAG, SELFMAG);
	elf->header.e_ident[EI_CLASS] = ELFCLASS64;
	elf->header.e_ident[EI_DATA] = ELFDATA2LSB;
	elf->header.e_ident[EI_VERSION] = EV_CURRENT;
	elf->header.e_type = ET_DYN;
	elf->header.e_machine = EM_X86_64;
	elf->header.e_version = EV_CURRENT;
	elf->header.e_phoff = offsetof(struct crafted, phdrs);
	elf->header.e_ehsize = sizeof(elf->header);
	elf->header.e_phentsize = sizeof(ElfW(Phdr));
	elf->header.e_phnum = 2;
	elf->phdrs[0] = (ElfW(Phdr)){ .p_type = PT_LOAD, .p_flags = PF_R, .p_filesz = sizeof(*elf),
				      .p_memsz = sizeof(*elf), .p_align = 4096 };
	elf->phdrs[1] = (ElfW(Phdr)){ .p_type = PT_DYNAMIC, .p_flags = PF_R,
				      .p_offset = offsetof(struct crafted, dynamic),
				      .p_vaddr = offsetof(struct crafted, dynamic),
				      .p_filesz = sizeof(elf->dynamic), .p_memsz = sizeof(elf->dynamic) };
	elf->dynamic[0] = (ElfW(Dyn)){ DT_SYMTAB, { offsetof(struct crafted, symtab) } };
	elf->dynamic[1] = (ElfW(Dyn)){ DT_STRTAB, { offsetof(struct crafted, strtab) } };
	elf->dynamic[2] = (ElfW(Dyn)){ DT_STRSZ, { sizeof(elf->strtab) } };
	elf->dynamic[3] = (ElfW(Dyn)){ DT_SYMENT, { sizeof(ElfW(Sym)) } };
	elf->dynamic[4] = (ElfW(Dyn)){ DT_GNU_HASH, { offsetof(struct crafted, gnu_header) } };
	elf->dynamic[5] = (ElfW(Dyn)){ DT_NULL, { 0 } };
	/* nbuckets, symoffset, bloom words, bloom shift; bucket 0 -> symbol 1 */
	elf->gnu_header[0] = 1;
	elf->gnu_header[1] = 1;
	elf->gnu_header[2] = 1;
	elf->gnu_header[3] = 6;
	elf->bloom[0] = ~0ull;
	elf->bucket[0] = 1;
	file = fopen(path, "w");
	cr_assert_not_null(file, "%s", path);
	cr_assert_eq(fwrite(elf, sizeof(*elf), 1, file), 1);
	cr_assert_eq(fclose(file), 0);
	free(elf);
}

struct mapper {
	pid_t pid;
	char directory[64];
	int files;
};

/* A child that maps `files` crafted files `times` times each, then waits
 * to be killed. */
static void mapper_start(struct mapper *mapper, int files, int times)
{
	char path[128];
	int ready[2];
	char byte;

	snprintf(mapper->directory, sizeof(mapper->directory), "/tmp/tdstat-crafted-XXXXXX");
	cr_assert_not_null(mkdtemp(mapper->directory));
	mapper->files = files;
	for (int i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/libtdshim.so.%d", mapper->directory, i);
		crafted_write(path);
	}
	cr_assert_eq(pipe(ready), 0);
	mapper->pid = fork();
	cr_assert_geq(mapper->pid, 0);
	if (mapper->pid == 0) {
		/* Dies with the test, even one that fails or times out. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < files; i++) {
			int fd;

			snprintf(path, sizeof(path), "%s/libtdshim.so.%d", mapper->directory, i);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				_exit(1);
			for (int j = 0; j < times; j++)
				if (mmap(NULL, sizeof(struct crafted), PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
					_exit(2);
			close(fd);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &byte, 1), 1, "the mapper could not map its files");
	close(ready[0]);
}

static void mapper_stop(struct mapper *mapper)
{
	char path[128];

	kill(mapper->pid, SIGKILL);
	waitpid(mapper->pid, NULL, 0);
	for (int i = 0; i < mapper->files; i++) {
		snprintf(path, sizeof(path), "%s/libtdshim.so.%d", mapper->directory, i);
		unlink(path);
	}
	rmdir(mapper->directory);
}

Test(lookup_budget, one_file_mapped_many_times_is_searched_once)
{
	struct ps_prochandle *ph;
	struct mapper mapper;
	psaddr_t address = 0;

	mapper_start(&mapper, 1, 3000);
	cr_assert_eq(tdps_open(mapper.pid, &ph), TDPS_OK);
	cr_assert_eq(ps_pglobal_lookup(ph, "libtdshim.so", "malloc", &address), PS_OK,
		     "status %d", (int)tdps_last_status(ph));
	cr_assert_neq(address, 0);
	tdps_close(ph);
	mapper_stop(&mapper);
}

Test(lookup_budget, many_crafted_files_make_it_give_up)
{
	struct ps_prochandle *ph;
	struct mapper mapper;
	psaddr_t address = 0;
	char pid[16], *output = NULL, line[512];
	size_t length;

	mapper_start(&mapper, 24, 1);
	cr_assert_eq(tdps_open(mapper.pid, &ph), TDPS_OK);
	cr_assert_eq(ps_pglobal_lookup(ph, "libtdshim.so", "malloc", &address), PS_ERR);
	cr_assert_eq(tdps_last_status(ph), TDPS_LOOKUP_LIMIT);
	tdps_explain(TDPS_LOOKUP_LIMIT, mapper.pid, line, sizeof(line));
	cr_assert_not_null(strstr(line, "gave up"), "%s", line);
	tdps_close(ph);

	snprintf(pid, sizeof(pid), "%d", (int)mapper.pid);
	const char *const argv[] = { "sh", "-c", "exec \"$0\" \"$@\" 2>&1", TDSTAT_PATH, "-c", "1", pid, NULL };
	int status = tdtest_run(argv, NULL, &output, &length, 60000);
	mapper_stop(&mapper);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, output);
	cr_assert_not_null(output);
	cr_assert_not_null(strstr(output, "symbol lookup gave up"), "%s", output);
	cr_assert_eq(strchr(output, '\n'), output + strlen(output) - 1, "one line: %s", output);
	free(output);
}
